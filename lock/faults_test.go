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
	"github.com/firelock/firelock/internal/faultproxy"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
)

// A release whose answer is lost is settled by reading back: reported
// done only if the lease is gone, else reported failed with the lease
// still intact (and a second release works).
func TestLostReleaseAnswerIsSettled(t *testing.T) {
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
func emulatorsClientVia(t *testing.T, p *faultproxy.Proxy) (*firestore.Client, []option.ClientOption) {
	t.Helper()
	return newClientVia(t, p.Addr)
}

// A sweep cut short by faults (answers dropped mid-sweep, deletes retried)
// never leaves a swept lease's subcollection behind: the next sweep
// finishes what it started.
func TestSweepUnderFaultsLeavesNoStrayChildren(t *testing.T) {
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
