package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/jobs"
)

// A Runner keeps its runs in the collection its user names, and nothing
// in the default one.
func TestRunnerRunsWhereTheUserSays(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	r := jobs.New(c, map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error { return nil }},
		jobs.WithCollection("tenants/t1/runs"))
	ev := event("1", "work")
	if o, err := r.Deliver(ctx, execID(t), ev); o != jobs.Ran || err != nil {
		t.Fatalf("%s %v", o, err)
	}
	if o, err := r.Deliver(ctx, execID(t), ev); o != jobs.AlreadyDone || err != nil {
		t.Fatalf("the duplicate: %s %v", o, err)
	}
	s, err := c.Collection("tenants/t1/runs").Doc(jobs.EventKey(ev.Source, ev.ID)).Get(ctx)
	if err != nil || s.Data()["state"] != jobs.StateDone {
		t.Fatalf("the run: %v %v", s.Data(), err)
	}
	if refs, err := c.Collection(jobs.Collection).DocumentRefs(ctx).GetAll(); err != nil || len(refs) != 0 {
		t.Fatalf("%d documents in %s (%v)", len(refs), jobs.Collection, err)
	}
}

// FromCloudEvent turns the CloudEvent of a Pub/Sub message (Eventarc's,
// or the Functions Framework's for a push) into the Event Deliver takes;
// anything else is a bad payload, acknowledged.
func TestFromCloudEvent(t *testing.T) {
	published := time.Date(2026, 11, 22, 10, 0, 7, 0, time.UTC)
	cloudEvent := func(data any) cloudevent.Event {
		e := cloudevent.New()
		e.SetID("4711")
		e.SetSource(source)
		e.SetType("google.cloud.pubsub.topic.v1.messagePublished")
		e.SetTime(published.Add(time.Second))
		if raw, ok := data.(string); ok {
			if err := e.SetData(cloudevent.ApplicationJSON, []byte(raw)); err != nil {
				t.Fatal(err)
			}
		} else if err := e.SetData(cloudevent.ApplicationJSON, data); err != nil {
			t.Fatal(err)
		}
		return e
	}
	job := []byte(`{"job": "work"}`)
	for _, tc := range []struct {
		name string
		data any
		want jobs.Event // zero: a bad payload
	}{
		{"Eventarc", map[string]any{
			"message":      map[string]any{"data": job, "messageId": "4711", "publishTime": published, "attributes": map[string]string{"a": "b"}},
			"subscription": "projects/p/subscriptions/eventarc-s",
		}, jobs.Event{Source: source, ID: "4711", PublishTime: published, Data: job}},
		{"push without a publish time", map[string]any{"message": map[string]any{"data": job}},
			jobs.Event{Source: source, ID: "4711", PublishTime: published.Add(time.Second), Data: job}},
		{"not JSON", "job=work", jobs.Event{}},
		{"no message", map[string]any{"job": "work"}, jobs.Event{}},
		{"data not base64", `{"message": {"data": "{\"job\": \"work\"}"}}`, jobs.Event{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jobs.FromCloudEvent(cloudEvent(tc.data))
			if tc.want.ID == "" {
				if !errors.Is(err, jobs.ErrBadPayload) || !jobs.Acknowledge(err) {
					t.Fatalf("err = %v, want a bad payload, acknowledged", err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// A CloudEvent without an id or a source (the two the run is keyed by,
// EventKey) is a bad payload at the door, as Deliver has it: taken as an
// Event, every such event would share one key and all but the first be
// AlreadyDone, lost (found by issue #52's review).
func TestFromCloudEventWithoutIDOrSource(t *testing.T) {
	data := []byte(`{"message": {"data": "e30=", "messageId": "1"}}`)
	for _, tc := range []struct{ name, id, source string }{
		{"no id", "", source},
		{"no source", "4711", ""},
		{"neither", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cloudevent.New()
			e.SetID(tc.id)
			e.SetSource(tc.source)
			if err := e.SetData(cloudevent.ApplicationJSON, data); err != nil {
				t.Fatal(err)
			}
			got, err := jobs.FromCloudEvent(e)
			if !errors.Is(err, jobs.ErrBadPayload) || !jobs.Acknowledge(err) {
				t.Fatalf("got %+v %v, want a bad payload, acknowledged", got, err)
			}
		})
	}
}

// Events.Do takes its key and body, and options for the rest; a key that
// cannot name a document is refused before anything is written.
func TestEventsDoTakesOptions(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ev := jobs.NewEvents(c, "webhookEvents", "type")
	ran := 0
	body := func(context.Context, *jobs.Run) error { ran++; return nil }
	o, err := ev.Do(ctx, "evt_1", body, jobs.WithExecutionID("exec-1"), jobs.WithName("checkout.session.completed"),
		jobs.WithRunFields(map[string]any{"holdId": "h1"}))
	if o != jobs.Ran || err != nil || ran != 1 {
		t.Fatalf("%s %v, ran %d", o, err, ran)
	}
	s, err := c.Doc("webhookEvents/evt_1").Get(ctx)
	if err != nil || s.Data()["type"] != "checkout.session.completed" || s.Data()["holdId"] != "h1" || s.Data()["state"] != jobs.StateDone {
		t.Fatalf("the run: %v %v", s.Data(), err)
	}
	if rec, err := c.Doc("webhookEvents/evt_1/deliveries/exec-1").Get(ctx); err != nil || rec.Data()["outcome"] != string(jobs.Ran) {
		t.Fatalf("the delivery record: %v %v", rec.Data(), err)
	}
	// No options: a fresh execution ID, no name.
	if o, err := ev.Do(ctx, "evt_1", body); o != jobs.AlreadyDone || err != nil || ran != 1 {
		t.Fatalf("the duplicate: %s %v, ran %d", o, err, ran)
	}
	if _, err := ev.Do(ctx, "evt/2", body); err == nil || ran != 1 {
		t.Fatalf("a key with a slash: %v, ran %d", err, ran)
	}
	if refs, err := c.Collection("webhookEvents").DocumentRefs(ctx).GetAll(); err != nil || len(refs) != 1 {
		t.Fatalf("%d run documents (%v), want 1", len(refs), err)
	}
}

func TestAcknowledge(t *testing.T) {
	for err, want := range map[error]bool{
		nil: true,
		fmt.Errorf("%w: unknown job", jobs.ErrBadPayload): true,
		fmt.Errorf("%w: elsewhere", jobs.ErrInProgress):   false,
		errors.New("the job's downstream is unavailable"): false,
	} {
		if got := jobs.Acknowledge(err); got != want {
			t.Errorf("Acknowledge(%v) = %v, want %v", err, got, want)
		}
	}
}
