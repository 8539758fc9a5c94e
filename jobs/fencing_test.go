package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

// longRun delivers an event whose body runs longer than the run's lease while
// a second delivery of the event arrives, and reports what went wrong: the
// body ran more than once or beside itself, or the records disagree.
func longRun(t *testing.T) error {
	c := firelocktest.NewClient(t)
	const lease = 3 * time.Second
	var runs, running, overlaps atomic.Int32
	r := jobs.New(c, map[string]jobs.Func{"warmUp": noop, "work": func(ctx context.Context, _ *jobs.Run) error {
		runs.Add(1)
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(lease + 1500*time.Millisecond):
			return nil
		}
	}}, jobs.WithLease(lease))
	warmUp(t, r)
	ev := event("600", "work")
	outcomes := make([]string, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 300 * time.Millisecond)
			o, err := r.Deliver(context.Background(), execID(t), ev)
			outcomes[i] = fmt.Sprint(o, " ", err)
		})
	}
	wg.Wait()
	var errs []error
	if n := runs.Load(); n != 1 {
		errs = append(errs, fmt.Errorf("the body ran %d times, want once", n))
	}
	if n := overlaps.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("the body ran beside itself %d times", n))
	}
	if d := deliveries(t, c, ev); d["ran"] != 1 || d["already_done"] != 1 {
		errs = append(errs, fmt.Errorf("deliveries %v, want one ran and one already_done (outcomes %q)", d, outcomes))
	}
	if s := runDoc(t, c, ev)["state"]; s != jobs.StateDone {
		errs = append(errs, fmt.Errorf("the event is %v, not done", s))
	}
	return errors.Join(errs...)
}

// A body that runs longer than its lease keeps the event to itself: the
// lease is kept alive, so a second delivery waits and finds it done.
func TestLongRunKeepsItsEventToItself(t *testing.T) {
	if err := longRun(t); err != nil {
		t.Fatal(err)
	}
}

// Negative control: with the body run without KeepAlive, longRun's checks
// go red.
func TestLongRunCheckCatchesABodyWithoutKeepAlive(t *testing.T) {
	jobs.PlantNoKeepAlive(t)
	err := longRun(t)
	if err == nil {
		t.Fatal("longRun found nothing wrong with the body run without KeepAlive")
	}
	t.Logf("longRun, without KeepAlive: %v", err)
}

// staleMark delivers an event whose run loses it while its body runs, as a
// run frozen past its lease finds when it wakes (a paused VM: its timers,
// KeepAlive's too, stop with it): the lease ended and a later delivery took
// the event over. It reports what went wrong: the stale run acknowledged,
// or marked the event that is now the later delivery's.
func staleMark(t *testing.T) error {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	later, err := lock.New(c, jobs.Collection, lock.WithOwner("later-delivery"))
	if err != nil {
		t.Fatal(err)
	}
	r := jobs.New(c, map[string]jobs.Func{"work": func(ctx context.Context, run *jobs.Run) error {
		if _, err := run.Lease().Ref().Delete(ctx); err != nil {
			return err
		}
		_, err := later.TryAcquire(ctx, run.Key(), lock.WithFields(map[string]any{"state": jobs.StateRunning, "job": "work", "eventId": "700"}))
		return err
	}})
	ev := event("700", "work")
	o, err := r.Deliver(ctx, execID(t), ev)
	var errs []error
	if err == nil || o == jobs.Ran {
		errs = append(errs, fmt.Errorf("the run that lost its event was acknowledged: %s %v", o, err))
	}
	if doc := runDoc(t, c, ev); doc[lock.FieldOwner] != "later-delivery" || doc["state"] != jobs.StateRunning || doc["finishedAt"] != nil {
		errs = append(errs, fmt.Errorf("the stale run changed the later delivery's run: %v", doc))
	}
	return errors.Join(errs...)
}

// A run that lost its event before its done mark cannot mark it: the mark
// is guarded by the lease.
func TestRunThatLostItsEventCannotMarkIt(t *testing.T) {
	if err := staleMark(t); err != nil {
		t.Fatal(err)
	}
}

// Negative control: with the done mark written without Guard, staleMark's
// checks go red.
func TestStaleMarkCheckCatchesAnUnguardedMark(t *testing.T) {
	jobs.PlantUnguardedMark(t)
	err := staleMark(t)
	if err == nil {
		t.Fatal("staleMark found nothing wrong with the done mark written without Guard")
	}
	t.Logf("staleMark, with an unguarded mark: %v", err)
}
