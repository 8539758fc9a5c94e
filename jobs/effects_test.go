package jobs_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

// effects counts how often a job's guarded effect was applied, as
// Firestore holds it.
func effects(t *testing.T, c *firestore.Client) int64 {
	t.Helper()
	s, err := c.Doc("effects/work").Get(context.Background())
	if err != nil {
		t.Fatalf("the effect was never applied: %v", err)
	}
	return s.Data()["n"].(int64)
}

func noop(context.Context, *jobs.Run) error { return nil }

// warmUp delivers the job warmUp (noop) through r before a measured run: a
// Runner's first commit proves its commit client (two more RPCs, slow on an
// emulator just started), which would eat into the run's lease.
func warmUp(t *testing.T, r *jobs.Runner) {
	t.Helper()
	if o, err := r.Deliver(context.Background(), execID(t), event("warm-up", "warmUp")); err != nil {
		t.Fatalf("warm-up: %s %v", o, err)
	}
}

// effectWithMark is a body that commits its effect and the done mark in one
// transaction guarded by the run's lease, through client c. beforeCommit,
// if set, runs just before the transaction commits.
func effectWithMark(c *firestore.Client, runs *atomic.Int32, beforeCommit func()) jobs.Func {
	return func(ctx context.Context, run *jobs.Run) error {
		runs.Add(1)
		return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := run.Lease().Guard(tx); err != nil {
				return err
			}
			if err := tx.Set(c.Doc("effects/work"), map[string]any{"n": firestore.Increment(1)}, firestore.MergeAll); err != nil {
				return err
			}
			if beforeCommit != nil {
				beforeCommit()
			}
			return run.MarkDone(tx)
		})
	}
}

// effectApart is a body that commits its effect in a transaction guarded
// by the run's lease, through client c, and leaves the done mark to the
// Runner. afterCommit, if set, runs once the effect committed.
func effectApart(c *firestore.Client, runs *atomic.Int32, afterCommit func()) jobs.Func {
	return func(ctx context.Context, run *jobs.Run) error {
		runs.Add(1)
		err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := run.Lease().Guard(tx); err != nil {
				return err
			}
			return tx.Set(c.Doc("effects/work"), map[string]any{"n": firestore.Increment(1)}, firestore.MergeAll)
		})
		if err == nil && afterCommit != nil {
			afterCommit()
		}
		return err
	}
}

// The answers are dropped from the commit of the body's effect and done
// mark on, past the delivery's deadline and the run's lease: the delivery
// cannot tell what happened. The redelivery finds the event done and does
// not apply the effect again.
func TestEffectAppliesOnceWhenTheDoneMarkIsLost(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits for lost answers and leases
	project := firelocktest.ProjectID(t)
	direct := firelocktest.NewClientFor(t, project)
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, opts := firelocktest.NewClientVia(t, p.Addr, project)
	var runs atomic.Int32
	const lease = 3 * time.Second
	drop := func() { p.DropAnswers(100 * time.Millisecond) }
	faulty := jobs.New(via, map[string]jobs.Func{"work": effectWithMark(via, &runs, drop), "warmUp": noop},
		jobs.WithLease(lease), jobs.WithLockOptions(lock.WithClientOptions(opts...)))
	warmUp(t, faulty)
	ev := event("91", "work")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	o, err := faulty.Deliver(ctx, execID(t), ev)
	cancel()
	p.Heal()
	if err == nil {
		t.Fatalf("acknowledged (%s) although nothing could be read or written after the body", o)
	}
	t.Logf("first delivery: %s %v", o, err)
	healthy := jobs.New(direct, map[string]jobs.Func{"work": effectWithMark(direct, &runs, nil)}, jobs.WithLease(lease))
	if o, err := healthy.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.AlreadyDone {
		t.Fatalf("redelivery: %s %v, want already_done (the commit whose answer was lost landed)", o, err)
	}
	if n := effects(t, direct); n != 1 {
		t.Fatalf("the effect was applied %d times (the body ran %d times), want once", n, runs.Load())
	}
	if runDoc(t, direct, ev)["state"] != jobs.StateDone {
		t.Fatal("the event is not done")
	}
}

// The answers are dropped right after the body's effect committed, past
// the delivery's deadline, and come back while the run's lease lasts: the
// done mark is retried until it lands, and the effect applies once.
func TestDoneMarkIsRetriedWhileTheLeaseLasts(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits for lost answers
	project := firelocktest.ProjectID(t)
	direct := firelocktest.NewClientFor(t, project)
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, opts := firelocktest.NewClientVia(t, p.Addr, project)
	var runs atomic.Int32
	const lease = 6 * time.Second
	dropForAMoment := func() {
		p.DropAnswers(100 * time.Millisecond)
		time.AfterFunc(time.Second, p.Heal)
	}
	faulty := jobs.New(via, map[string]jobs.Func{"work": effectApart(via, &runs, dropForAMoment), "warmUp": noop},
		jobs.WithLease(lease), jobs.WithLockOptions(lock.WithClientOptions(opts...)))
	warmUp(t, faulty)
	ev := event("92", "work")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	o, err := faulty.Deliver(ctx, execID(t), ev)
	cancel()
	t.Logf("first delivery: %s %v", o, err)
	healthy := jobs.New(direct, map[string]jobs.Func{"work": effectApart(direct, &runs, nil)}, jobs.WithLease(lease))
	if o, err := healthy.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.AlreadyDone {
		t.Fatalf("redelivery: %s %v, want already_done", o, err)
	}
	if n := effects(t, direct); n != 1 || runs.Load() != 1 {
		t.Fatalf("the effect was applied %d times (the body ran %d times), want once", n, runs.Load())
	}
}

// A body that says its done mark committed (Run.Committed) ends the
// delivery without a settling transaction: counted at the client, one
// transaction fewer (its begin and its read) than the same delivery
// without it, and the same records.
func TestACommittedBodySavesTheSettlingTransaction(t *testing.T) {
	ctx := context.Background()
	stats := &rpcstats.Stats{}
	c, err := rpcstats.NewClient(ctx, firelocktest.ProjectID(t), stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ev := jobs.NewEvents(c, "committedEvents", "type")
	deliver := func(key string, say bool) rpcstats.Counts {
		before := stats.Snapshot()
		o, err := ev.Do(ctx, key, func(ctx context.Context, run *jobs.Run) error {
			err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				if err := run.Lease().Guard(tx); err != nil {
					return err
				}
				if err := tx.Set(c.Collection("committedEffects").Doc(key), map[string]any{"done": true}); err != nil {
					return err
				}
				return run.MarkDone(tx)
			})
			if err == nil && say {
				run.Committed()
			}
			return err
		}, jobs.WithExecutionID(execID(t)), jobs.WithName("effect"))
		if o != jobs.Ran || err != nil {
			t.Fatalf("%s: %s %v, want ran", key, o, err)
		}
		return stats.Snapshot().Sub(before)
	}
	with, without := deliver("with", true), deliver("without", false)
	if with.RPCs["BeginTransaction"] != without.RPCs["BeginTransaction"]-1 || with.Calls() >= without.Calls() || with.Reads >= without.Reads {
		t.Fatalf("with Committed %v; without %v: want one transaction fewer (no settling transaction), fewer RPCs and reads", with, without)
	}
	for _, key := range []string{"with", "without"} {
		d, err := c.Collection("committedEvents").Doc(key).Get(ctx)
		if err != nil || d.Data()["state"] != jobs.StateDone {
			t.Fatalf("%s: the run %v %v, want done", key, d.Data(), err)
		}
		recs, err := d.Ref.Collection("deliveries").Documents(ctx).GetAll()
		if err != nil || len(recs) != 1 || recs[0].Data()["outcome"] != string(jobs.Ran) {
			t.Fatalf("%s: delivery records %d %v, want one ran", key, len(recs), err)
		}
	}
	t.Logf("with Committed: %v; without: %v", with, without)
}
