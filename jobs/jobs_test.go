package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestMain runs the parallel tests (each on its own project: runs whose
// leases they wait out, answers a fault proxy drops, and the slot checks
// of TestEveryInstantHasExactlyOneSlot, which are pure computation) eight
// at a time, so that the waiting ones do not hold a slot of the machine's
// cores while the computing ones queue. Tests that plant bugs, count
// goroutines or time a lease's renewals stay sequential.
func TestMain(m *testing.M) {
	firelocktest.SideBySide(8)
	os.Exit(firelocktest.Main(m))
}

const source = "//pubsub.googleapis.com/projects/demo-firelock/topics/scheduled-jobs"

func event(id, job string) jobs.Event {
	return jobs.Event{Source: source, ID: id, Data: []byte(fmt.Sprintf(`{"job": %q}`, job))}
}

func deliveries(t *testing.T, c *firestore.Client, ev jobs.Event) map[string]int {
	t.Helper()
	snaps, err := c.Collection(jobs.Collection).Doc(jobs.EventKey(ev.Source, ev.ID)).Collection("deliveries").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range snaps {
		out[s.Data()["outcome"].(string)]++
	}
	return out
}

func runDoc(t *testing.T, c *firestore.Client, ev jobs.Event) map[string]any {
	t.Helper()
	s, err := c.Collection(jobs.Collection).Doc(jobs.EventKey(ev.Source, ev.ID)).Get(context.Background())
	if err != nil {
		return nil
	}
	return s.Data()
}

func execID(t *testing.T) string {
	id, err := lock.NewExecutionID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestConcurrentDeliveriesRunOnce(t *testing.T) {
	c := firelocktest.NewClient(t)
	var runs atomic.Int32
	r := jobs.New(c, map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error {
		runs.Add(1)
		time.Sleep(200 * time.Millisecond) // overlap with the other deliveries
		return nil
	}})
	ev := event("42", "work")
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := r.Deliver(context.Background(), execID(t), ev); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("the job body ran %d times, want 1", runs.Load())
	}
	d := deliveries(t, c, ev)
	if d["ran"] != 1 || d["ran"]+d["in_progress"]+d["already_done"] != 20 {
		t.Fatalf("delivery records %v, want 20 with exactly one ran", d)
	}
	doc := runDoc(t, c, ev)
	if doc["state"] != "done" || doc["finishedAt"] == nil || doc["eventId"] != "42" || doc["job"] != "work" {
		t.Fatalf("job run document %v", doc)
	}
	// A late duplicate acknowledges without running.
	if o, err := r.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.AlreadyDone || runs.Load() != 1 {
		t.Fatalf("late duplicate: %s %v (runs %d)", o, err, runs.Load())
	}
}

// plantCrashedRun takes ev's event as a delivery that then crashed: a
// running lease of lease that nobody renews.
func plantCrashedRun(t *testing.T, c *firestore.Client, key string, lease time.Duration) {
	t.Helper()
	crashed, err := lock.New(c, jobs.Collection, lock.WithLeaseDuration(lease))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.TryAcquire(context.Background(), key, lock.WithFields(map[string]any{"state": "running", "job": "work", "eventId": "7"})); err != nil {
		t.Fatal(err)
	}
}

// No event is lost to a crashed run: a delivery that meets its live lease
// is not acknowledged (it waits within its own deadline, then returns an
// error so Pub/Sub delivers again), and once the lease ends a delivery
// takes the run over and runs it, exactly once.
func TestCrashedRunIsNotAcknowledgedAndIsTakenOver(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for the crashed run's lease to end
	c := firelocktest.NewClient(t)
	ev := event("7", "work")
	plantCrashedRun(t, c, jobs.EventKey(ev.Source, ev.ID), 3*time.Second)
	var runs atomic.Int32
	r := jobs.New(c, map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error { runs.Add(1); return nil }}, jobs.WithLease(3*time.Second))

	short, cancel := context.WithTimeout(context.Background(), time.Second)
	o, err := r.Deliver(short, execID(t), ev)
	cancel()
	if err == nil || o != jobs.InProgress || runs.Load() != 0 {
		t.Fatalf("delivery during the crashed run's lease: %s %v (ran %d times); want in_progress and an error, so Pub/Sub delivers again", o, err, runs.Load())
	}
	// The next delivery waits for the lease to end, takes the run over and runs it.
	if o, err := r.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.Ran || runs.Load() != 1 {
		t.Fatalf("redelivery: %s %v, ran %d times", o, err, runs.Load())
	}
	if runDoc(t, c, ev)["state"] != "done" {
		t.Fatal("the taken-over run is not done")
	}
	if o, err := r.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.AlreadyDone || runs.Load() != 1 {
		t.Fatalf("late duplicate: %s %v, ran %d times", o, err, runs.Load())
	}
	if d := deliveries(t, c, ev); d["in_progress"] != 1 || d["ran"] != 1 || d["already_done"] != 1 {
		t.Fatalf("deliveries %v", d)
	}
}

func TestFailedRunReturnsErrorAndRetryCompletes(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	var calls atomic.Int32
	boom := errors.New("downstream unavailable")
	r := jobs.New(c, map[string]jobs.Func{"flaky": func(context.Context, *jobs.Run) error {
		if calls.Add(1) == 1 {
			return boom
		}
		return nil
	}})
	ev := event("9", "flaky")
	if o, err := r.Deliver(ctx, execID(t), ev); !errors.Is(err, boom) || o != jobs.Failed {
		t.Fatalf("first delivery: %s %v, want failed with the job's error", o, err)
	}
	// The retry takes the event over at once: far sooner than the failed
	// run's lease of a minute would have ended.
	soon, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if o, err := r.Deliver(soon, execID(t), ev); err != nil || o != jobs.Ran {
		t.Fatalf("retry: %s %v", o, err)
	}
	if d := deliveries(t, c, ev); d["failed"] != 1 || d["ran"] != 1 {
		t.Fatalf("deliveries %v", d)
	}
	if doc := runDoc(t, c, ev); doc["state"] != jobs.StateDone || doc[lock.FieldLeaseSeconds] != int64(jobs.DefaultLease/time.Second) {
		t.Fatalf("run after the retry: %v", doc)
	}
}

// A failed run stays: an ended lease with state failed, so its delivery
// records have a parent that sweepExpired finds, and the next delivery
// takes the event over at once. Both go a week after the run ended, like
// a done run.
func TestFailedRunIsKeptAndSweptAfterAWeek(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	boom := errors.New("downstream unavailable")
	r := jobs.New(c, map[string]jobs.Func{"flaky": func(context.Context, *jobs.Run) error { return boom }})
	ev := event("300", "flaky")
	if o, err := r.Deliver(ctx, execID(t), ev); !errors.Is(err, boom) || o != jobs.Failed {
		t.Fatalf("delivery: %s %v, want failed with the job's error", o, err)
	}
	doc := runDoc(t, c, ev)
	if doc == nil {
		t.Fatal("the failed run was deleted: its delivery records are orphaned")
	}
	if doc["state"] != jobs.StateFailed || doc[lock.FieldLeaseSeconds] != int64(0) || doc["finishedAt"] == nil {
		t.Fatalf("failed run %v, want state failed, an ended lease and finishedAt", doc)
	}
	if d := deliveries(t, c, ev); d[jobs.StateFailed] != 1 {
		t.Fatalf("deliveries %v", d)
	}
	run := c.Collection(jobs.Collection).Doc(jobs.EventKey(ev.Source, ev.ID))
	sweep := jobs.New(c, map[string]jobs.Func{"sweepExpired": jobs.Sweep(c, jobs.Runs(jobs.Collection))})
	// What the days do to the run: its lease ended that long ago.
	for i, age := range []time.Duration{6 * 24 * time.Hour, 8 * 24 * time.Hour} {
		if _, err := run.Update(ctx, []firestore.Update{{Path: lock.FieldRenewedAt, Value: time.Now().Add(-age)}}); err != nil {
			t.Fatal(err)
		}
		if o, err := sweep.Deliver(ctx, execID(t), event(fmt.Sprint("sweep-", i), "sweepExpired")); err != nil || o != jobs.Ran {
			t.Fatalf("sweep: %s %v", o, err)
		}
		kept := i == 0
		if got := runDoc(t, c, ev) != nil; got != kept {
			t.Fatalf("%v after the run ended: run kept = %v, want %v", age, got, kept)
		}
		if n := len(deliveries(t, c, ev)); (n > 0) != kept {
			t.Fatalf("%v after the run ended: %d delivery records kept, want kept = %v", age, n, kept)
		}
	}
}

// table is a job table with the job names the payloads below use.
func table() map[string]jobs.Func {
	return map[string]jobs.Func{"rollupCounters": func(context.Context, *jobs.Run) error { return nil }}
}

func TestBadPayloadIsAcknowledgedAndWritesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	r := jobs.New(c, table())
	for name, data := range map[string]string{
		"unknown job":         `{"job": "dropTables"}`,
		"not JSON":            `job=rollupCounters`,
		"wrong type":          `{"job": 7}`,
		"extra field":         `{"job": "rollupCounters", "force": true}`,
		"empty":               ``,
		"missing job":         `{}`,
		"array payload":       `["rollupCounters"]`,
		"negative secs":       `{"job": "rollupCounters", "seconds": -1}`,
		"secs past 540":       `{"job": "rollupCounters", "seconds": 541}`,
		"secs a string":       `{"job": "rollupCounters", "seconds": "30"}`,
		"key in another case": `{"Job": "rollupCounters"}`,
		"duplicate key":       `{"job": "dropTables", "job": "rollupCounters"}`,
		"not UTF-8":           "{\"job\": \"rollupCounters\", \"timeZone\": \"\xff\"}",
	} {
		_, err := r.Deliver(context.Background(), execID(t), jobs.Event{Source: source, ID: "1", Data: []byte(data)})
		if !errors.Is(err, jobs.ErrBadPayload) {
			t.Errorf("%s: err = %v, want ErrBadPayload", name, err)
		}
	}
	refs, err := c.Collection(jobs.Collection).DocumentRefs(context.Background()).GetAll()
	if err != nil || len(refs) != 0 {
		t.Fatalf("bad payloads wrote %d job runs (%v)", len(refs), err)
	}
}

func TestEventKeysDifferAcrossTopics(t *testing.T) {
	if jobs.EventKey(source, "1") == jobs.EventKey(source+"-other", "1") {
		t.Fatal("the same message id on two topics gives one key")
	}
	if jobs.EventKey(source, "1") != jobs.EventKey(source, "1") {
		t.Fatal("a redelivery gives another key")
	}
}

// Sweep deletes, in the collections the application names, the lease
// documents whose lease ended at least that long ago, by Firestore's
// clock, never a live one; a run's delivery records go with it.
func TestSweepDeletesOnlyLongEndedLeases(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	now := time.Now()
	lease := func(path string, renewed time.Time, seconds int, extra map[string]any) {
		d := map[string]any{"owner": "x", "acquiredAt": renewed, "renewedAt": renewed, "leaseSeconds": seconds}
		for k, v := range extra {
			d[k] = v
		}
		if _, err := c.Doc(path).Set(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	lease("myLocks/ancient", now.Add(-72*time.Hour), 30, nil)
	lease("myLocks/recent", now.Add(-2*time.Hour), 30, nil)   // ended, but not a day ago
	lease("myLocks/live", now.Add(-3*time.Hour), 3600*4, nil) // renewed long ago, lease still running
	// Renewed before the query's cutoff but with a lease that still runs:
	// only the read-time check keeps it.
	lease("myLocks/stretched", now.Add(-26*time.Hour), 48*3600, nil)
	lease("notSwept/ancient", now.Add(-72*time.Hour), 30, nil)
	lease("myRuns/old", now.Add(-8*24*time.Hour), 60, map[string]any{"state": "done"})
	lease("myRuns/young", now.Add(-3*24*time.Hour), 60, map[string]any{"state": "done"})
	if _, err := c.Doc("myRuns/old/deliveries/e1").Set(ctx, map[string]any{"outcome": "ran"}); err != nil {
		t.Fatal(err)
	}
	r := jobs.New(c, map[string]jobs.Func{"sweep": jobs.Sweep(c, jobs.Swept{Collection: "myLocks", After: 24 * time.Hour}, jobs.Runs("myRuns"))})
	if o, err := r.Deliver(ctx, execID(t), event("200", "sweep")); err != nil || o != jobs.Ran {
		t.Fatalf("%s %v", o, err)
	}
	exists := func(path string) bool { _, err := c.Doc(path).Get(ctx); return err == nil }
	for path, want := range map[string]bool{
		"myLocks/ancient": false, "myLocks/recent": true, "myLocks/live": true, "myLocks/stretched": true,
		"notSwept/ancient": true,
		"myRuns/old":       false, "myRuns/old/deliveries/e1": false, "myRuns/young": true,
	} {
		if exists(path) != want {
			t.Errorf("%s exists = %v, want %v", path, !want, want)
		}
	}
}

// A Runner given lock client options builds its lock's commit client once:
// its goroutines do not grow with its deliveries. The options are the kind
// that make a client dial (an endpoint and credentials), as in production.
func TestDeliveriesWithClientOptionsLeakNothing(t *testing.T) {
	opts := []option.ClientOption{
		option.WithEndpoint(os.Getenv("FIRESTORE_EMULATOR_HOST")),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithGRPCDialOption(grpc.WithPerRPCCredentials(emulators.Admin{})),
	}
	c, err := firestore.NewClient(context.Background(), firelocktest.ProjectID(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := jobs.New(c, map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error { return nil }},
		jobs.WithLockOptions(lock.WithClientOptions(opts...)))
	deliver := func(first, n int) {
		for i := range n {
			if o, err := r.Deliver(context.Background(), execID(t), event(fmt.Sprint(first+i), "work")); err != nil || o != jobs.Ran {
				t.Fatalf("delivery %d: %s %v", first+i, o, err)
			}
		}
	}
	deliver(0, 5) // the first deliveries start what a Runner keeps for good
	before := goroutinesAfterSettling(0)
	deliver(100, 30)
	after := goroutinesAfterSettling(before + 10)
	t.Logf("goroutines %d -> %d", before, after)
	if after > before+10 {
		t.Fatalf("goroutines %d -> %d over 30 deliveries: something is built per delivery and never closed", before, after)
	}
}

// goroutinesAfterSettling counts goroutines once at most want are left, or
// after two seconds of waiting for exiting ones to go.
func goroutinesAfterSettling(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

// The body learns its event and when to stop from its Run.
func TestRunTellsItsEventAndWhenToStop(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	var got *jobs.Run
	r := jobs.New(c, map[string]jobs.Func{"work": func(_ context.Context, run *jobs.Run) error {
		got = run
		return nil
	}})
	deliver := func(ev jobs.Event) *jobs.Run {
		t.Helper()
		got = nil
		if o, err := r.Deliver(ctx, execID(t), ev); err != nil || o != jobs.Ran {
			t.Fatalf("%s %v", o, err)
		}
		if got.Lease() == nil || got.Lease().Key() != got.Key() {
			t.Fatalf("run %s has lease %v", got.Key(), got.Lease())
		}
		return got
	}

	run := deliver(scheduled("500", "work", "*/5 * * * *", "Europe/Berlin", "2026-11-22T10:07:30Z"))
	if run.Key() != "work@2026-11-22T10:05:00Z" || !run.Slot().Equal(utc("2026-11-22T10:05:00Z")) ||
		!run.Until().Equal(utc("2026-11-22T10:10:00Z")) || run.Message().Schedule != "*/5 * * * *" || run.Message().TimeZone != "Europe/Berlin" {
		t.Fatalf("scheduled run: key %s, slot %s, until %s, message %+v", run.Key(), run.Slot(), run.Until(), run.Message())
	}

	before := time.Now()
	ev := jobs.Event{Source: source, ID: "501", Data: []byte(`{"job": "work", "seconds": 30}`)}
	run = deliver(ev)
	if run.Key() != jobs.EventKey(source, "501") || !run.Slot().IsZero() || run.Message().Seconds != 30 ||
		run.Until().Before(before.Add(30*time.Second)) || run.Until().After(time.Now().Add(30*time.Second)) {
		t.Fatalf("run with seconds: key %s, slot %s, until %s (started after %s), message %+v", run.Key(), run.Slot(), run.Until(), before, run.Message())
	}

	if run = deliver(event("502", "work")); !run.Until().IsZero() || !run.Slot().IsZero() {
		t.Fatalf("one-pass run: until %s, slot %s, want both zero", run.Until(), run.Slot())
	}
}
