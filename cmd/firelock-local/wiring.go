package main

// The local wiring of firelock's functions: one Functions Framework server
// for every function, the Pub/Sub topic with a push subscription to
// RunScheduledJob (the stand-in for Cloud Scheduler is in main.go).

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"github.com/firelock/firelock/functions"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Topic is the topic Cloud Scheduler publishes job messages to.
const Topic = "scheduled-jobs"

// PushPath is the path the push subscription posts to. The Functions
// Framework turns a raw push body into a CloudEvent whose source names the
// topic it finds in the request path (projects/P/topics/T), and whose id is
// the message id. The emulator numbers messages from 1 again after every
// restart, so the topic segment carries the run's ID: event keys (source +
// id) then never collide across restarts while the job runs stay in
// Firestore.
func PushPath(project, runID string) string {
	return fmt.Sprintf("/RunScheduledJob/projects/%s/topics/%s~%s", project, Topic, runID)
}

// EventSource is the CloudEvent source the framework derives from PushPath.
func EventSource(project, runID string) string {
	return fmt.Sprintf("//pubsub.googleapis.com/projects/%s/topics/%s~%s", project, Topic, runID)
}

// Wire creates the topic (if missing) and a push subscription of this run to
// baseURL+PushPath.
func Wire(ctx context.Context, ps *pubsub.Client, project, baseURL, runID string) error {
	topic := fmt.Sprintf("projects/%s/topics/%s", project, Topic)
	if _, err := ps.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("firelock-local: create topic %s: %w", topic, err)
	}
	sub := &pubsubpb.Subscription{
		Name:               fmt.Sprintf("projects/%s/subscriptions/%s-push-%s", project, Topic, strings.ToLower(runID)),
		Topic:              topic,
		PushConfig:         &pubsubpb.PushConfig{PushEndpoint: strings.TrimSuffix(baseURL, "/") + PushPath(project, runID)},
		AckDeadlineSeconds: 60,
	}
	if _, err := ps.SubscriptionAdminClient.CreateSubscription(ctx, sub); err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("firelock-local: create push subscription: %w", err)
	}
	return nil
}

// Serve runs the Functions Framework's server for every registered function
// (BookSeats, CancelBooking and RunScheduledJob at /Name) on host:port, plus
// RunScheduledJob under /RunScheduledJob/ for push paths that name a topic,
// and the process's metrics at MetricsPath (it sets the global meter
// provider: call it once per process). It blocks like http.ListenAndServe:
// the framework exposes no handler or shutdown, so the server lives as long
// as the process.
func Serve(host, port string) error {
	if err := servePrometheus(); err != nil {
		return err
	}
	if err := funcframework.RegisterCloudEventFunctionContext(context.Background(), "/RunScheduledJob/", functions.HandleScheduledJob); err != nil {
		return err
	}
	return funcframework.StartHostPort(host, port)
}
