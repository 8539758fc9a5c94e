package localrun_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/jobs"
	"github.com/firelock/firelock/internal/localrun"
	gonanoid "github.com/matoous/go-nanoid/v2"
)

func TestMain(m *testing.M) {
	os.Exit(emulators.RunTests(m, emulators.Firestore, emulators.PubSub, emulators.Auth))
}

// End to end: Pub/Sub emulator -> push subscription -> Functions Framework
// (raw push body converted to a CloudEvent) -> RunScheduledJob -> Firestore.
func TestPublishedJobRunsOnceThroughPubSub(t *testing.T) {
	ctx := context.Background()
	project := emulators.ProjectID(t)
	t.Setenv("GOOGLE_CLOUD_PROJECT", project) // the functions build their clients from it
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	go localrun.Serve("127.0.0.1", fmt.Sprint(port)) // lives until the test binary exits
	emulators.WaitListening(t, port)

	fs := emulators.NewFirestoreFor(t, project)
	ctr, err := counter.Create(ctx, fs, "tickets-s1", 3)
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
	runID := strings.ToLower(gonanoid.MustGenerate("abcdefghijklmnopqrstuvwxyz0123456789", 8))
	if err := localrun.Wire(ctx, ps, project, fmt.Sprintf("http://127.0.0.1:%d", port), runID); err != nil {
		t.Fatal(err)
	}
	pub := ps.Publisher(localrun.Topic)
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

	key := jobs.EventKey(localrun.EventSource(project, runID), id)
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
			t.Fatalf("no done job run at jobRuns/%s after 30s (the key is derived from source %s and id %s)", key, localrun.EventSource(project, runID), id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s, err := fs.Doc("counters/tickets-s1").Get(ctx)
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
	if _, err := fs.Collection(jobs.Collection).Doc(jobs.EventKey(localrun.EventSource(project, runID), bad)).Get(ctx); err == nil {
		t.Fatal("a bad payload wrote a job run")
	}
}
