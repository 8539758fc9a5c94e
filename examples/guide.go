// Package guide is the README's "Use it in your own functions" as a user's
// own module has it. The README's Go snippets are cut from this file and
// from guide_test.go, between the lines "// guide:NAME" and "// guide:end"
// (a test in firelock's module checks they are the same), and the tests
// beside it run them against the Firestore emulator.
package guide

import (
	"context"
	"errors"
	"sync"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

// guide:lock

// NightlyReport writes the nightly report, one instance at a time: count
// (the slow part) runs under the lease, and the write commits only while
// the lease is still this instance's.
func NightlyReport(ctx context.Context, client *firestore.Client, locker *lock.Locker,
	count func(context.Context) (int, error)) error {
	return locker.WithLock(ctx, "nightly-report", func(ctx context.Context, lease *lock.Lease) error {
		rows, err := count(ctx) // ctx ends if the lease is lost
		if err != nil {
			return err
		}
		return client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := lease.Guard(tx); err != nil {
				return err // the lease is lost: write nothing
			}
			return tx.Set(client.Doc("reports/nightly"), map[string]any{"rows": rows, "token": lease.Token()})
		})
	})
}

// guide:end

// guide:lost

// Status says what NightlyReport's error means.
func Status(err error) string {
	var held *lock.HeldError
	switch {
	case err == nil:
		return "written"
	case errors.As(err, &held): // also when ctx ended while it waited
		return "held by " + held.Holders[0].Owner + " until " + held.Holders[0].Until.String()
	case errors.Is(err, lock.ErrNotHeld): // taken over, or firelock locks release --force
		return "lease lost while it ran, nothing written: " + err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled by its caller"
	}
	return "failed: " + err.Error()
}

// guide:end

// guide:jobs

// NewRunner runs dailyReport once per tick of its schedule, however often
// Pub/Sub delivers the tick.
func NewRunner(client *firestore.Client) *jobs.Runner {
	return jobs.New(client, map[string]jobs.Func{
		"dailyReport": func(ctx context.Context, run *jobs.Run) error {
			return client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				if err := run.Lease().Guard(tx); err != nil {
					return err
				}
				if err := tx.Set(client.Doc("daily/"+run.Key()), map[string]any{"slot": run.Slot()}); err != nil {
					return err
				}
				return run.MarkDone(tx) // the report and the done mark commit together
			})
		},
	})
}

// ScheduledJobs is the CloudEvent function the scheduler's topic triggers:
// functions.CloudEvent("RunScheduledJob", guide.ScheduledJobs(runner)).
func ScheduledJobs(runner *jobs.Runner) func(context.Context, event.Event) error {
	return func(ctx context.Context, e event.Event) error {
		ev, err := jobs.FromCloudEvent(e)
		if err == nil {
			execID, _ := lock.NewExecutionID()
			_, err = runner.Deliver(ctx, execID, ev)
		}
		if jobs.Acknowledge(err) {
			return nil // done, or no delivery can ever succeed
		}
		return err // Pub/Sub delivers it again
	}
}

// guide:end

// guide:counter

// CountLikes has writers like a post at once and returns the exact count.
func CountLikes(ctx context.Context, client *firestore.Client, writers int) (int64, error) {
	likes, err := counter.Create(ctx, client, "likes-post-1", 10) // 10 shards: ~10 writes/s
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = likes.Increment(ctx, 1) }) // counted once, even if an answer is lost
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return likes.Count(ctx) // one aggregation query over the shards
}

// guide:end
