package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
)

// A release whose answer is lost is settled by reading back: reported
// done only if the lease is gone, else reported failed with the lease
// still intact (and a second release works).
func TestLostReleaseAnswerIsSettled(t *testing.T) {
	t.Parallel() // its own project and proxy; a lease of a minute, every outcome of the release judged
	p, l, direct := proxied(t, lock.WithLeaseDuration(time.Minute))
	lease, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DropAnswers(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	healed := time.AfterFunc(1500*time.Millisecond, p.Heal)
	defer healed.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = lease.Release(ctx)
	s, gerr := direct.Collection(coll).Doc("k").Get(context.Background())
	gone := gerr != nil && isNotFound(gerr)
	switch {
	case err == nil && !gone:
		t.Fatalf("Release reported success but the lease is still there: %v", s.Data())
	case err != nil && gone:
		t.Fatalf("Release reported %v but the lease is gone", err)
	case err != nil:
		if err := lease.Release(context.Background()); err != nil {
			t.Fatalf("second release: %v", err)
		}
	}
	if _, err := newLocker(t, direct).TryAcquire(context.Background(), "k"); err != nil {
		t.Fatalf("next caller after the release: %v", err)
	}
}

// A renewal whose answer is lost is an error, not a lost lease; once the
// network is back the lease renews and is still this holder's.
func TestLostRenewAnswerKeepsTheLease(t *testing.T) {
	t.Parallel() // its own project and proxy; a lease of a minute
	p, l, direct := proxied(t, lock.WithLeaseDuration(time.Minute))
	lease, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DropAnswers(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = lease.Renew(ctx)
	cancel()
	p.Heal()
	if errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a renewal with its answer lost declared the lease lost: %v", err)
	}
	if err := lease.Renew(context.Background()); err != nil {
		t.Fatalf("renew after the network came back: %v", err)
	}
	if err := direct.RunTransaction(context.Background(), func(ctx context.Context, tx *firestore.Transaction) error {
		return lease.Guard(tx)
	}); err != nil {
		t.Fatalf("guard after the lost renewal: %v", err)
	}
}

// abandonedTxExpiry is how long the emulator keeps a transaction whose
// client vanished (measured: about 60 s, as production's idle expiry).
const abandonedTxExpiry = 75 * time.Second

// freeAfterTheRun asserts that key k can be granted once the run's leases
// ended. No live lease may remain (that fails at once). A guarded
// transaction that a fault cut off after it began (its BeginTransaction
// answer dropped, or its rollback lost) still holds its read lock on the
// lease document until Firestore expires it; a grant meanwhile aborts
// ("Transaction lock timeout"). That is not a lease left behind, so it is
// waited out, up to the expiry.
func freeAfterTheRun(t *testing.T, l *lock.Locker, k string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	for {
		lease, err := l.TryAcquire(ctx, k)
		if err == nil {
			if waited := time.Since(start); waited > time.Second {
				t.Logf("key %s: granted after %v, once abandoned transactions expired", k, waited.Round(time.Second))
			}
			lease.Release(ctx)
			return
		}
		var held *lock.HeldError
		if errors.As(err, &held) {
			t.Fatalf("key %s still held one lease after the run: %v", k, err)
		}
		if !errors.Is(err, lock.ErrHeld) || !strings.Contains(err.Error(), "code = Aborted") {
			t.Fatalf("key %s: %v", k, err)
		}
		if time.Since(start) > abandonedTxExpiry {
			t.Fatalf("key %s still blocked %v after the run's leases ended: %v", k, abandonedTxExpiry, err)
		}
		time.Sleep(time.Second)
	}
}

// emulatorsClientVia is a client of the proxied test's project on a
// connection of its own through p.
func emulatorsClientVia(t *testing.T, p *firelocktest.Proxy) (*firestore.Client, []option.ClientOption) {
	t.Helper()
	return newClientVia(t, p.Addr)
}

// A sweep cut short by faults (answers dropped mid-sweep, deletes retried)
// never leaves a swept lease's subcollection behind: the next sweep
// finishes what it started.
func TestSweepUnderFaultsLeavesNoStrayChildren(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits on dropped answers
	p, _, direct := proxied(t)
	c, _ := newClientVia(t, p.Addr)
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	const rounds, runs, children = 6, 15, 2
	for round := range rounds {
		coll := fmt.Sprint("jobRuns", round)
		for i := range runs {
			run := direct.Collection(coll).Doc(fmt.Sprint("run", i))
			if _, err := run.Set(ctx, map[string]any{lock.FieldOwner: "x", lock.FieldAcquiredAt: old,
				lock.FieldRenewedAt: old, lock.FieldLeaseSeconds: int64(60)}); err != nil {
				t.Fatal(err)
			}
			for j := range children {
				if _, err := run.Collection("deliveries").Doc(fmt.Sprint(j)).Set(ctx, map[string]any{"outcome": "ran"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The fault strikes somewhere inside the sweep: after its query,
		// among its deletes.
		fault := time.AfterFunc(time.Duration(10+rand.IntN(80))*time.Millisecond, func() { p.DropAnswers(50 * time.Millisecond) })
		sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		_, err := lock.SweepEnded(sctx, c, coll, 0, "deliveries")
		cancel()
		fault.Stop()
		p.Heal()
		t.Logf("round %d, sweep under faults: %v", round, err)
		if _, err := lock.SweepEnded(ctx, c, coll, 0, "deliveries"); err != nil {
			t.Fatalf("round %d: sweep after the faults: %v", round, err)
		}
		if left := countDocs(t, direct, coll); left != 0 {
			t.Fatalf("round %d: %d runs left after two sweeps", round, left)
		}
	}
	stray, err := direct.CollectionGroup("deliveries").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(stray) != 0 {
		t.Fatalf("%d deliveries left behind under swept runs", len(stray))
	}
}

// KeepAlive gives a lease up when it cannot confirm a renewal before the
// lease's local end, yet a renewal may have landed unheard, leaving the
// lease standing in Firestore. Release still gives it up (while it is
// still this acquisition), so its holder can take the key again at once
// instead of sitting out a lease nobody uses.
func TestReleaseFreesALeaseKeepAliveGaveUpOn(t *testing.T) {
	const d = 3 * time.Second
	p, l, direct, lease, kctx := keptAliveThroughProxy(t, d)
	ctx := context.Background()
	renewedAt := func() time.Time {
		s, err := direct.Collection(coll).Doc("k").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := s.Data()[lock.FieldRenewedAt].(time.Time)
		return v
	}
	// Hold the answers back (longer than the lease) just after a renewal
	// was heard: the next one lands a third of a lease later, unheard.
	first := renewedAt()
	for renewedAt().Equal(first) {
		if kctx.Err() != nil {
			t.Fatalf("KeepAlive ended before its first renewal: %v", context.Cause(kctx))
		}
		time.Sleep(10 * time.Millisecond)
	}
	heard := renewedAt()
	if err := p.Delay(3 * d); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kctx.Done():
	case <-time.After(2 * d):
		t.Fatal("KeepAlive went on without a heard renewal")
	}
	p.Heal()
	if !errors.Is(context.Cause(kctx), lock.ErrNotHeld) {
		t.Fatalf("KeepAlive ended with %v, want ErrNotHeld", context.Cause(kctx))
	}
	if r := renewedAt(); !r.After(heard) {
		t.Fatalf("the scenario needs a renewal that landed unheard: renewedAt %v, last heard %v", r, heard)
	}
	if _, err := l.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("the key was granted again over the standing lease: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release of the lease KeepAlive gave up on: %v", err)
	}
	again, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("the same holder, after the release: %v", err)
	}
	again.Release(ctx)
}

// KeepAlive renews a third into the lease as its holder knows it, so a
// lease whose answers come back slower than a third of it (a slow network,
// a loaded server) is still renewed in time: each renewal goes out as soon
// as the last one's answer shows a third has passed. It used to wait a
// full third after each answer, and with answers this slow it ran out of
// lease (or slept up to its deadline and gave a live lease up without
// trying).
func TestKeepAliveHoldsALeaseThroughSlowAnswers(t *testing.T) {
	const d = 6 * time.Second
	p, _, direct, lease, kctx := keptAliveThroughProxy(t, d)
	ctx := context.Background()
	// Answers 2.2 s late: two renewals in a row fit in the lease less its
	// safety margin (5.4 s), but not a renewal that waits a third of the
	// lease after the last answer.
	if err := p.Delay(2200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kctx.Done():
		t.Fatalf("KeepAlive gave the lease up under slow answers: %v", context.Cause(kctx))
	case <-time.After(2 * d):
	}
	p.Heal()
	if err := direct.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		return lease.Guard(tx)
	}); err != nil {
		t.Fatalf("guard after slow renewals: %v", err)
	}
	if r := lease.RenewedAt(); time.Since(r) > d {
		t.Fatalf("last renewal at %v, more than a lease ago", r)
	}
}

// keptAliveThroughProxy grants key "k" to a Locker of lease length d whose
// calls go through a fault proxy (its slow first connection opened first),
// and keeps it alive until the test ends.
func keptAliveThroughProxy(t *testing.T, d time.Duration) (*firelocktest.Proxy, *lock.Locker, *firestore.Client, *lock.Lease, context.Context) {
	t.Helper()
	p, l, direct := proxied(t, lock.WithLeaseDuration(d))
	ctx := context.Background()
	warm, err := l.TryAcquire(ctx, "warm-up")
	if err != nil {
		t.Fatal(err)
	}
	warm.Release(ctx)
	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := lease.KeepAlive(ctx)
	t.Cleanup(stop)
	return p, l, direct, lease, kctx
}
