package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/jobs"
	gonanoid "github.com/matoous/go-nanoid/v2"
)

func TestMain(m *testing.M) {
	os.Exit(firelocktest.Main(m, firelocktest.Firestore, firelocktest.PubSub, firelocktest.Auth))
}

var (
	serverOnce    sync.Once
	serverProject string
	serverPort    int
)

// functionsServer starts the one Functions Framework server of this test
// binary (the framework registers on the default mux and cannot be stopped)
// for one project, which the functions read from GOOGLE_CLOUD_PROJECT once:
// the Auth emulator's, as in firelock-local, so that its ID tokens are
// valid there. Tests keep apart by their own run IDs (topics' push paths,
// event sources) and documents.
func functionsServer(t *testing.T) (project string, port int) {
	t.Helper()
	serverOnce.Do(func() {
		serverProject = emulators.AuthProject
		os.Setenv("GOOGLE_CLOUD_PROJECT", serverProject)
		p, err := emulators.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		serverPort = p
		go Serve("127.0.0.1", fmt.Sprint(p)) // lives until the test binary exits
	})
	emulators.WaitListening(t, serverPort)
	return serverProject, serverPort
}

// End to end: Pub/Sub emulator -> push subscription -> Functions Framework
// (raw push body converted to a CloudEvent) -> RunScheduledJob -> Firestore.
func TestPublishedJobRunsOnceThroughPubSub(t *testing.T) {
	ctx := context.Background()
	project, port := functionsServer(t)

	fs := firelocktest.NewClientFor(t, project)
	runID := strings.ToLower(gonanoid.MustGenerate("abcdefghijklmnopqrstuvwxyz0123456789", 8))
	ctr, err := counter.Create(ctx, fs, "tickets-"+runID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.Increment(ctx, 4); err != nil {
		t.Fatal(err)
	}
	ps, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if err := Wire(ctx, ps, project, fmt.Sprintf("http://127.0.0.1:%d", port), runID); err != nil {
		t.Fatal(err)
	}
	pub := ps.Publisher(Topic)
	defer pub.Stop()
	publish := func(data string) string {
		id, err := pub.Publish(ctx, &pubsub.Message{Data: []byte(data)}).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	bad := publish(`{"job": "dropEverything"}`) // acknowledged, never run
	id := publish(`{"job": "rollupCounters"}`)

	key := jobs.EventKey(EventSource(project, runID), id)
	run := fs.Collection(jobs.Collection).Doc(key)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := run.Get(ctx)
		if err == nil && s.Data()["state"] == jobs.StateDone {
			if s.Data()["eventId"] != id || s.Data()["job"] != "rollupCounters" {
				t.Fatalf("job run %v", s.Data())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no done job run at jobRuns/%s after 30s (the key is derived from source %s and id %s)", key, EventSource(project, runID), id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s, err := fs.Doc("counters/tickets-" + runID).Get(ctx)
	if err != nil || s.Data()["total"] != int64(4) {
		t.Fatalf("counter %v (%v), want total 4", s.Data(), err)
	}
	time.Sleep(time.Second) // room for a duplicate push, if any
	ds, err := run.Collection("deliveries").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, d := range ds {
		if d.Data()["outcome"] == "ran" {
			ran++
		}
	}
	if ran != 1 {
		t.Fatalf("%d deliveries ran the job, want exactly 1", ran)
	}
	if _, err := fs.Collection(jobs.Collection).Doc(jobs.EventKey(EventSource(project, runID), bad)).Get(ctx); err == nil {
		t.Fatal("a bad payload wrote a job run")
	}
}

// Cloud Scheduler may publish one tick twice: two messages with new ids.
// Through the Pub/Sub emulator and the function, the job runs once for
// the tick and every other delivery acknowledges already_done.
func TestTwoPublishesOfOneTickRunOnceThroughPubSub(t *testing.T) {
	ctx := context.Background()
	project, port := functionsServer(t)
	fs := firelocktest.NewClientFor(t, project)
	ps, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	runID := strings.ToLower(gonanoid.MustGenerate("abcdefghijklmnopqrstuvwxyz0123456789", 8))
	if err := Wire(ctx, ps, project, fmt.Sprintf("http://127.0.0.1:%d", port), runID); err != nil {
		t.Fatal(err)
	}
	pub := ps.Publisher(Topic)
	defer pub.Stop()
	// A yearly schedule: both publishes fall in this year's slot.
	const schedule = "0 0 1 1 *"
	msg := fmt.Sprintf(`{"job": "rollupCounters", "schedule": %q, "timeZone": "UTC"}`, schedule)
	slot, err := jobs.Slot(schedule, "UTC", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A clean slate for this tick's run (the project is shared with earlier
	// runs of this test).
	run := fs.Collection(jobs.Collection).Doc(jobs.SlotKey("rollupCounters", slot))
	old, err := run.Collection("deliveries").DocumentRefs(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(old, run) {
		if _, err := d.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte(msg)}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func() map[string]int {
		ds, err := run.Collection("deliveries").Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, d := range ds {
			out[d.Data()["outcome"].(string)]++
		}
		return out
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if o := count(); o["ran"]+o["already_done"]+o["in_progress"]+o["failed"] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the tick's run %s has deliveries %v, want 2", run.ID, count())
		}
	}
	time.Sleep(time.Second) // room for a duplicate push, if any
	outcomes := count()
	// Every push subscription of the topic gets both messages (the other
	// test's too, in this shared project): one delivery runs, all others
	// find the tick done.
	if outcomes["ran"] != 1 || outcomes["already_done"] < 1 || len(outcomes) != 2 {
		t.Fatalf("deliveries %v, want one ran and the others already_done", outcomes)
	}
	if s, err := run.Get(ctx); err != nil || s.Data()["state"] != jobs.StateDone {
		t.Fatalf("the tick's run is not done (%v)", err)
	}
}
