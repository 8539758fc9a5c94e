package main

// The local wiring of firelock's functions: one Functions Framework server
// for every function, the Pub/Sub topic with a push subscription to
// RunScheduledJob (the stand-in for Cloud Scheduler is in main.go).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

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

// serveQuietly starts Serve on port and returns once it listens (or
// failed, or ctx ended). The Functions Framework prints a line "Serving
// function: NAME" for each function as it starts, and NAME is "" for the
// two served by path (RunScheduledJob's push paths and the metrics): the
// banner lists every URL instead, so those lines are left out of stdout
// while the server starts. Serve's error, later, goes to serveErr.
func serveQuietly(ctx context.Context, port int, serveErr chan<- error) error {
	out := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	os.Stdout = w
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "Serving function: ") {
				fmt.Fprintln(out, sc.Text())
			}
		}
	}()
	failed := make(chan error, 1)
	go func() {
		err := Serve("127.0.0.1", fmt.Sprint(port))
		failed <- err
		serveErr <- err
	}()
	var ready error
	for {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond); err == nil {
			c.Close()
			break
		}
		select {
		case ready = <-failed:
		case <-ctx.Done():
			ready = ctx.Err()
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	os.Stdout = out
	w.Close()
	<-copied
	return ready
}
