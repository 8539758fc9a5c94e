package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// lateTimer is a context whose deadline has passed while its Done has not
// closed yet: the window between a deadline and its timer firing, which a
// loaded machine widens (gRPC already answers DeadlineExceeded by the clock,
// while ctx.Err() is still nil). Here the window lasts up to late.
type lateTimer struct {
	context.Context // ends late after the deadline
	deadline        time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

func withLateTimer(late time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), late)
	return lateTimer{Context: ctx, deadline: time.Now().Add(-time.Millisecond)}, cancel
}

// An adversarial user's Acquire with a timeout, on a held key, on a loaded
// machine: a try cut off by the deadline before the context's timer fired
// came back as gRPC's bare DeadlineExceeded status, which matches neither
// context.DeadlineExceeded nor ErrHeld (found by 60 goroutines contending
// under -race, issue #52's review).
func TestAcquireDeadlineBeforeItsTimerFires(t *testing.T) {
	t.Parallel()
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	holder := newLocker(t, c, lock.WithLeaseDuration(time.Minute))
	if _, err := holder.TryAcquire(ctx, "late-timer"); err != nil {
		t.Fatal(err)
	}
	waiter := newLocker(t, c)
	warmUp(t, waiter) // the tries below reach their commits
	for _, acquire := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"Acquire", func(ctx context.Context) error { _, err := waiter.Acquire(ctx, "late-timer"); return err }},
		{"AcquireAll", func(ctx context.Context) error {
			_, err := waiter.AcquireAll(ctx, []string{"late-timer"})
			return err
		}},
		{"TryAcquire", func(ctx context.Context) error { _, err := waiter.TryAcquire(ctx, "late-timer"); return err }},
	} {
		wctx, cancel := withLateTimer(5 * time.Second)
		err := acquire.do(wctx)
		early := wctx.Err() == nil
		cancel()
		if !early {
			t.Logf("%s: the context's timer fired first; nothing tested", acquire.name)
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s past its deadline = %v, want errors.Is context.DeadlineExceeded", acquire.name, err)
		}
		// The caller's deadline cut the RPCs off, not their own bound: no
		// answer went missing, and nothing was granted (the key is held
		// for a minute), so nothing says ErrUnanswered.
		if errors.Is(err, lock.ErrUnanswered) {
			t.Errorf("%s past its deadline = %v: ErrUnanswered, want the deadline alone", acquire.name, err)
		}
	}
}
