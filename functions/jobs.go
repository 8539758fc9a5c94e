package functions

import (
	"context"
	"errors"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	oteltrace "go.opentelemetry.io/otel/trace"
)

func init() {
	functions.CloudEvent("RunScheduledJob", HandleScheduledJob)
}

// HandleScheduledJob is RunScheduledJob on the API built from the environment.
func HandleScheduledJob(ctx context.Context, e event.Event) error {
	return defaultAPI().RunScheduledJob(ctx, e)
}

// RunScheduledJob is the CloudEvent function of CONTRACT §4, triggered by
// the topic scheduled-jobs. It returns nil to acknowledge (the job ran here
// or is done, or the message can never succeed) and an error to have
// Pub/Sub deliver the event again (it failed, or still runs elsewhere).
func (a *API) RunScheduledJob(ctx context.Context, e event.Event) error {
	ctx, span := tracer.Start(ctx, "RunScheduledJob", oteltrace.WithSpanKind(oteltrace.SpanKindConsumer))
	defer span.End()
	execID, _ := lock.NewExecutionID()
	if a.initErr != nil {
		a.Log.Error("not configured", "executionId", execID, "error", a.initErr.Error())
		return a.initErr
	}
	ev, err := jobs.FromCloudEvent(e)
	if err == nil {
		var o jobs.Outcome
		o, err = a.Jobs.Deliver(ctx, execID, ev)
		if err == nil {
			a.Log.Info("scheduled job delivery", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "outcome", string(o))
			return nil
		}
	}
	if errors.Is(err, jobs.ErrBadPayload) {
		a.Log.Warn("dropping a message no retry can fix", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "error", err.Error())
		return nil
	}
	if errors.Is(err, jobs.ErrInProgress) {
		a.Log.Info("scheduled job runs elsewhere; Pub/Sub will deliver again", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "error", err.Error())
		return err
	}
	a.Log.Error("scheduled job failed; Pub/Sub will retry", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "error", err.Error())
	return err
}
