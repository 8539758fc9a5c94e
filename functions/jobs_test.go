package functions_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

// RunScheduledJob's return value is Pub/Sub's acknowledgement: nil drops
// the message for good, an error has it delivered again. These tests pin
// which outcome gets which, through the function itself.

const topicSource = "//pubsub.googleapis.com/projects/demo-firelock/topics/scheduled-jobs"

var errJobBroken = errors.New("the job's downstream is unavailable")

// jobsAPI is a functions instance on a fresh Firestore project whose jobs
// are "work" (counts its runs) and "broken" (always fails).
func jobsAPI(t *testing.T, opts ...jobs.Option) (*functions.API, *firestore.Client, *atomic.Int32) {
	t.Helper()
	fs := firelocktest.NewClient(t)
	api, err := functions.NewAPI(context.Background(), fs, emulators.AuthProject)
	if err != nil {
		t.Fatal(err)
	}
	api.Log = functions.NewLogger(io.Discard)
	runs := &atomic.Int32{}
	api.Jobs = jobs.New(fs, map[string]jobs.Func{
		"work":   func(context.Context, *jobs.Run) error { runs.Add(1); return nil },
		"broken": func(context.Context, *jobs.Run) error { return errJobBroken },
	}, opts...)
	return api, fs, runs
}

// pubsubEvent is the CloudEvent (messagePublished) of a Pub/Sub message
// with id and data, published at published.
func pubsubEvent(t *testing.T, id, data string, published time.Time) event.Event {
	t.Helper()
	e := event.New()
	e.SetID(id)
	e.SetSource(topicSource)
	e.SetType("google.cloud.pubsub.topic.v1.messagePublished")
	e.SetTime(published)
	msg := map[string]any{
		"message":      map[string]any{"data": []byte(data), "messageId": id, "publishTime": published},
		"subscription": "projects/demo-firelock/subscriptions/scheduled-jobs",
	}
	if err := e.SetData(event.ApplicationJSON, msg); err != nil {
		t.Fatal(err)
	}
	return e
}

func runState(t *testing.T, fs *firestore.Client, key string) any {
	t.Helper()
	s, err := fs.Collection(jobs.Collection).Doc(key).Get(context.Background())
	if err != nil {
		t.Fatalf("jobRuns/%s: %v", key, err)
	}
	return s.Data()["state"]
}

func TestRunScheduledJobAcknowledgesWhatRanOrIsDone(t *testing.T) {
	api, fs, runs := jobsAPI(t)
	ctx := context.Background()
	ev := pubsubEvent(t, "101", `{"job": "work"}`, time.Now())
	if err := api.RunScheduledJob(ctx, ev); err != nil {
		t.Fatalf("a delivery that ran the job: %v, want nil (acknowledge)", err)
	}
	if err := api.RunScheduledJob(ctx, ev); err != nil {
		t.Fatalf("a redelivery of a done event: %v, want nil (acknowledge)", err)
	}
	if runs.Load() != 1 || runState(t, fs, jobs.EventKey(topicSource, "101")) != jobs.StateDone {
		t.Fatalf("the job ran %d times, want once and done", runs.Load())
	}
	// A scheduled message: its slot, placed by the message's publishTime.
	published := time.Date(2026, 11, 22, 10, 7, 30, 0, time.UTC)
	sched := pubsubEvent(t, "102", `{"job": "work", "schedule": "*/5 * * * *", "timeZone": "Europe/Berlin"}`, published)
	if err := api.RunScheduledJob(ctx, sched); err != nil {
		t.Fatalf("a scheduled delivery that ran the job: %v", err)
	}
	if runs.Load() != 2 || runState(t, fs, "work@2026-11-22T10:05:00Z") != jobs.StateDone {
		t.Fatalf("the scheduled run is not done in its slot (ran %d times)", runs.Load())
	}
}

func TestRunScheduledJobAcknowledgesBadPayloadsAndWritesNothing(t *testing.T) {
	api, fs, runs := jobsAPI(t)
	ctx := context.Background()
	notPubsub := pubsubEvent(t, "200", `{"job": "work"}`, time.Now())
	if err := notPubsub.SetData("text/plain", []byte("job=work")); err != nil {
		t.Fatal(err)
	}
	for name, ev := range map[string]event.Event{
		"event data not JSON":   notPubsub,
		"message data not JSON": pubsubEvent(t, "201", `job=work`, time.Now()),
		"unknown job":           pubsubEvent(t, "202", `{"job": "dropTables"}`, time.Now()),
		"schedule not cron":     pubsubEvent(t, "204", `{"job": "work", "schedule": "every 5 minutes"}`, time.Now()),
		"six-field schedule":    pubsubEvent(t, "205", `{"job": "work", "schedule": "0 */5 * * * *"}`, time.Now()),
		"zone not IANA":         pubsubEvent(t, "206", `{"job": "work", "schedule": "*/5 * * * *", "timeZone": "Mars/Olympus"}`, time.Now()),
	} {
		if err := api.RunScheduledJob(ctx, ev); err != nil {
			t.Errorf("%s: %v, want nil (acknowledge: no retry can fix it)", name, err)
		}
	}
	refs, err := fs.Collection(jobs.Collection).DocumentRefs(ctx).GetAll()
	if err != nil || len(refs) != 0 || runs.Load() != 0 {
		t.Fatalf("bad payloads wrote %d job runs (%v) and ran the job %d times", len(refs), err, runs.Load())
	}
}

func TestRunScheduledJobDoesNotAcknowledgeAFailedRun(t *testing.T) {
	api, fs, _ := jobsAPI(t)
	err := api.RunScheduledJob(context.Background(), pubsubEvent(t, "301", `{"job": "broken"}`, time.Now()))
	if !errors.Is(err, errJobBroken) {
		t.Fatalf("a run that failed: %v, want the job's error (Pub/Sub delivers again)", err)
	}
	s, err := fs.Collection(jobs.Collection).Doc(jobs.EventKey(topicSource, "301")).Get(context.Background())
	if err != nil {
		t.Fatalf("the failed run is gone (its delivery records with no parent to sweep them): %v", err)
	}
	if s.Data()["state"] != jobs.StateFailed || s.Data()[lock.FieldLeaseSeconds] != int64(0) {
		t.Fatalf("failed run %v: want state failed and its lease ended, so a retry takes it over at once", s.Data())
	}
}

func TestRunScheduledJobDoesNotAcknowledgeARunInProgressElsewhere(t *testing.T) {
	api, fs, runs := jobsAPI(t, jobs.WithWait(500*time.Millisecond))
	ctx := context.Background()
	// Another execution runs the event under a live lease.
	elsewhere, err := lock.New(fs, jobs.Collection, lock.WithLeaseDuration(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := elsewhere.TryAcquire(ctx, jobs.EventKey(topicSource, "401"),
		lock.WithFields(map[string]any{"state": jobs.StateRunning, "job": "work", "eventId": "401"})); err != nil {
		t.Fatal(err)
	}
	err = api.RunScheduledJob(ctx, pubsubEvent(t, "401", `{"job": "work"}`, time.Now()))
	if !errors.Is(err, jobs.ErrInProgress) || runs.Load() != 0 {
		t.Fatalf("a delivery during another execution's live run: %v (ran %d times); want ErrInProgress, so Pub/Sub delivers again", err, runs.Load())
	}
}
