package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
	"github.com/firelock/firelock/jobs"
)

// Every delivery counts once under its job and its outcome. A job the
// table does not know counts as "unknown", never under the name the
// message made up.
func TestDeliveriesCountUnderJobAndOutcome(t *testing.T) {
	c := firelocktest.NewClient(t)
	m := telemetrytest.New(t)
	release := make(chan struct{})
	r := jobs.New(c, map[string]jobs.Func{
		"work":   func(context.Context, *jobs.Run) error { return nil },
		"broken": func(context.Context, *jobs.Run) error { return errors.New("broken on purpose") },
		"slow": func(ctx context.Context, _ *jobs.Run) error {
			<-release
			return nil
		},
	}, jobs.WithMeterProvider(m.Provider), jobs.WithWait(200*time.Millisecond))
	ctx := context.Background()

	if o, err := r.Deliver(ctx, execID(t), event("m1", "work")); o != jobs.Ran || err != nil {
		t.Fatalf("first delivery: %s %v", o, err)
	}
	if o, _ := r.Deliver(ctx, execID(t), event("m1", "work")); o != jobs.AlreadyDone {
		t.Fatalf("duplicate: %s", o)
	}
	if o, err := r.Deliver(ctx, execID(t), event("m2", "broken")); o != jobs.Failed || err == nil {
		t.Fatalf("broken job: %s %v", o, err)
	}
	if _, err := r.Deliver(ctx, execID(t), event("m3", "made-up-by-a-caller")); !errors.Is(err, jobs.ErrBadPayload) {
		t.Fatalf("unknown job: %v", err)
	}
	slow := make(chan error, 1)
	go func() { _, err := r.Deliver(ctx, execID(t), event("m4", "slow")); slow <- err }()
	for runDoc(t, c, event("m4", "slow")) == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if o, err := r.Deliver(ctx, execID(t), event("m4", "slow")); o != jobs.InProgress || !errors.Is(err, jobs.ErrInProgress) {
		t.Fatalf("delivery during a run: %s %v", o, err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}

	want := map[[2]string]float64{
		{"work", "ran"}: 1, {"work", "already_done"}: 1, {"broken", "failed"}: 1, {"unknown", "bad_payload"}: 1,
		{"slow", "in_progress"}: 1, {"slow", "ran"}: 1,
	}
	points, _ := m.Points(t, telemetry.JobsRuns)
	if len(points) != len(want) {
		t.Errorf("%d series, want %d: %s", len(points), len(want), m.Dump(t, telemetry.JobsRuns))
	}
	for _, p := range points {
		job, _ := p.Attrs.Value(telemetry.Job)
		outcome, _ := p.Attrs.Value(telemetry.Outcome)
		if k := [2]string{job.AsString(), outcome.AsString()}; p.Value != want[k] || p.Attrs.Len() != 2 {
			t.Errorf("%v: want %v of %v, and firelock.job and firelock.outcome only", p, want[k], k)
		}
	}
	// The runner's lock records into the same provider.
	if n := m.Value(t, telemetry.LockAcquireDuration); n < 5 {
		t.Errorf("%v acquisitions recorded for 5 deliveries that reached the lock", n)
	}
}

// A delivery that meets a live run waits for the run's document to show it
// done (or its lease to end), and only then tries the lease again: not on
// every renewal of the holder's lease, nor on the listener's first
// snapshot of the run it just found held. Each try would be a transaction
// reading the run while its holder commits the done mark to it; on the
// emulator the two wait on each other's locks for about 2 s.
func TestADeliveryWaitingForALiveRunTriesAgainOnlyWhenItEnds(t *testing.T) {
	c := firelocktest.NewClient(t)
	m := telemetrytest.New(t)
	ev := jobs.NewEvents(c, "zzEvents", "type", jobs.WithMeterProvider(m.Provider), jobs.WithLease(3*time.Second), jobs.WithWait(30*time.Second))
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, err := ev.Do(ctx, "e1", func(context.Context, *jobs.Run) error {
			close(started)
			<-release // the lease is renewed meanwhile
			return nil
		}, jobs.WithExecutionID(execID(t)), jobs.WithName("slow"))
		holder <- err
	}()
	<-started
	dup := make(chan jobs.Outcome, 1)
	go func() {
		o, err := ev.Do(ctx, "e1", func(context.Context, *jobs.Run) error {
			t.Error("the duplicate ran the body")
			return nil
		}, jobs.WithExecutionID(execID(t)), jobs.WithName("slow"))
		if err != nil {
			t.Error(err)
		}
		dup <- o
	}()
	time.Sleep(2 * time.Second) // renewals of the holder's 3 s lease, before it would end
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if o := <-dup; o != jobs.AlreadyDone {
		t.Fatalf("the duplicate: %s, want already_done", o)
	}
	if n := m.Value(t, telemetry.LockAcquireDuration, telemetry.Result.String(telemetry.Held)); n != 1 {
		t.Fatalf("the waiting delivery tried the live lease %v times, want once: %s", n, m.Dump(t, telemetry.LockAcquireDuration))
	}
}
