package lock_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// A holder that runs guarded transactions back to back, on a slow network
// (every answer 300 ms late), never loses its lease: renewals do not wait
// for the holder's own guarded transactions (issue #31: in the server SDKs
// a transaction's read locks the document until its commit, and Guard read
// the lease document itself, so under load renewals queued behind the
// holder's own work and the lease lapsed).
func TestGuardedTransactionsBackToBackKeepTheLease(t *testing.T) {
	const lease = 2 * time.Second
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	proxyProject(t, p)
	client, copts := newClientVia(t, p.Addr)
	l := newLocker(t, client, lock.WithLeaseDuration(lease), lock.WithClientOptions(copts...))
	ctx := context.Background()
	ls, err := l.TryAcquire(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delay(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	kctx, stop := ls.KeepAlive(ctx)
	defer stop()
	doc := client.Collection("guarded").Doc("busy")
	commits := 0
	for end := time.Now().Add(3 * lease); time.Now().Before(end); {
		err := client.RunTransaction(kctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := ls.Guard(tx); err != nil {
				return err
			}
			return tx.Set(doc, map[string]any{"n": commits + 1})
		})
		if err != nil {
			t.Fatalf("after %d guarded commits in %v: %v (lease: %v)", commits, time.Since(end.Add(-3*lease)), err, context.Cause(kctx))
		}
		commits++
	}
	if errors.Is(context.Cause(kctx), lock.ErrNotHeld) {
		t.Fatalf("the lease was lost: %v", context.Cause(kctx))
	}
	if commits < 3 {
		t.Fatalf("only %d guarded commits in three leases: the test proves nothing", commits)
	}
	t.Logf("%d guarded commits back to back over three leases of %v, answers 300 ms late", commits, lease)
}

// staleWrite runs the race the fence closes: A's guarded transaction checks
// its lease, then takes longer than the lease before it commits a blind
// write; meanwhile B takes the key over and writes. It returns whether A's
// write landed after B's grant (a stale holder's write).
func staleWrite(t *testing.T) bool {
	t.Helper()
	const lease = time.Second
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(lease))
	b := newLocker(t, c, lock.WithLeaseDuration(lease))
	la, err := a.TryAcquire(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	reg := c.Collection("registers").Doc("race")
	guarded := make(chan struct{})
	var once bool
	var aCommit time.Time
	aDone := make(chan error, 1)
	go func() {
		var resp firestore.CommitResponse
		err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := la.Guard(tx); err != nil {
				return err
			}
			if !once {
				once = true
				close(guarded)
			}
			time.Sleep(lease + 500*time.Millisecond) // a GC pause, a slow network
			return tx.Set(reg, map[string]any{"by": "a"})
		}, firestore.WithCommitResponseTo(&resp), firestore.MaxAttempts(1))
		if err == nil {
			aCommit = resp.CommitTime()
		}
		aDone <- err
	}()
	<-guarded
	lb, err := b.Acquire(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	aErr := <-aDone
	if aErr != nil {
		return false // refused: nothing stale
	}
	return !aCommit.Before(time.UnixMicro(lb.Token()))
}

// The fence holds a takeover off until the guarded transaction that read it
// commits (or aborts it), so a holder's write never lands after the next
// grant; with Guard reading the lease alone, without a lock, it does.
func TestTheFenceHoldsOffATakeoverUntilTheGuardedCommit(t *testing.T) {
	if staleWrite(t) {
		t.Fatal("a guarded write landed after the next holder's grant")
	}
	lock.BugGuardSkipsFence.Plant(t)
	if !staleWrite(t) {
		t.Fatal("with the planted bug (Guard reads the lease without a lock, no fence) the stale write did not happen: the race proves nothing")
	}
}
