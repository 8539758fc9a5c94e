package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/internal/jobs"
	"github.com/firelock/firelock/lock"
)

func init() {
	functions.CloudEvent("RunScheduledJob", HandleScheduledJob)
}

// HandleScheduledJob is RunScheduledJob on the API built from the environment.
func HandleScheduledJob(ctx context.Context, e event.Event) error {
	return defaultAPI().RunScheduledJob(ctx, e)
}

// pubsubData is the data of a Pub/Sub CloudEvent (messagePublished).
type pubsubData struct {
	Message struct {
		Data []byte `json:"data"` // base64 in JSON
	} `json:"message"`
}

// RunScheduledJob is the CloudEvent function of CONTRACT §4, triggered by
// the topic scheduled-jobs. It returns nil to acknowledge (the job ran,
// is done, runs elsewhere, or the message can never succeed) and an error
// to have Pub/Sub deliver the event again.
func (a *API) RunScheduledJob(ctx context.Context, e event.Event) error {
	execID, _ := lock.NewExecutionID()
	if a.initErr != nil {
		a.Log.Error("not configured", "executionId", execID, "error", a.initErr.Error())
		return a.initErr
	}
	var d pubsubData
	err := json.Unmarshal(e.Data(), &d)
	if err == nil {
		var o jobs.Outcome
		o, err = a.Jobs.Deliver(ctx, execID, jobs.Event{Source: e.Source(), ID: e.ID(), Data: d.Message.Data})
		if err == nil {
			a.Log.Info("scheduled job delivery", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "outcome", string(o))
			return nil
		}
	} else {
		err = fmt.Errorf("%w: event data is not a Pub/Sub message: %v", jobs.ErrBadPayload, err)
	}
	if errors.Is(err, jobs.ErrBadPayload) {
		a.Log.Warn("dropping a message no retry can fix", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "error", err.Error())
		return nil
	}
	a.Log.Error("scheduled job failed; Pub/Sub will retry", "executionId", execID, "eventSource", e.Source(), "eventId", e.ID(), "error", err.Error())
	return err
}
