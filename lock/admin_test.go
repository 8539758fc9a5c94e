package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// An operator force-releases a stuck lease (CONTRACT §8): one commit ends
// it and logs it; the former holder's guarded write fails from then on,
// its keep-alive learns the lease is lost, and the next holder's token is
// higher.
func TestForceReleaseFencesTheFormerHolder(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	stuck, err := newLocker(t, c, lock.WithLeaseDuration(time.Minute)).TryAcquire(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := stuck.KeepAlive(ctx)
	defer stop()
	seen, err := lock.Inspect(ctx, c, coll+"/stuck")
	if err != nil {
		t.Fatal(err)
	}
	if !seen.Live || seen.Owner != stuck.Owner() || seen.Token != stuck.Token() || !seen.AcquiredAt.Equal(stuck.AcquiredAt()) {
		t.Fatalf("Inspect: %+v; the lease: owner %s, token %d", seen, stuck.Owner(), stuck.Token())
	}
	if err := lock.ForceRelease(ctx, c, seen, "olive@example.com", "the holder hangs"); err != nil {
		t.Fatal(err)
	}
	err = c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := stuck.Guard(tx); err != nil {
			return err
		}
		return tx.Set(c.Collection("registers").Doc("stuck"), map[string]any{"by": "the former holder"})
	})
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the former holder's guarded write after the forced release: %v, want ErrNotHeld", err)
	}
	if _, err := c.Collection("registers").Doc("stuck").Get(ctx); err == nil {
		t.Fatal("the former holder's guarded write landed")
	}
	next, err := newLocker(t, c).TryAcquire(ctx, "stuck")
	if err != nil {
		t.Fatalf("the next holder: %v", err)
	}
	if next.Token() <= stuck.Token() {
		t.Fatalf("the next holder's token %d is not above the former's %d", next.Token(), stuck.Token())
	}
	select {
	case <-kctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the former holder's keep-alive never learned its lease was gone")
	}
	logs, err := c.Collection(lock.LockLog).Documents(ctx).GetAll()
	if err != nil || len(logs) != 1 {
		t.Fatalf("lockLog: %d entries (%v), want 1", len(logs), err)
	}
	d := logs[0].Data()
	if d["path"] != coll+"/stuck" || d["owner"] != stuck.Owner() || d["by"] != "olive@example.com" || d["reason"] != "the holder hangs" {
		t.Fatalf("lockLog entry %v", d)
	}
	if at, _ := d["acquiredAt"].(time.Time); !at.Equal(stuck.AcquiredAt()) {
		t.Fatalf("lockLog acquiredAt %v, want %v", d["acquiredAt"], stuck.AcquiredAt())
	}
}

// A forced release acts only on the lease the operator inspected: one
// that changed hands since is refused, and nothing is written or logged.
func TestForceReleaseOfALeaseThatChangedHandsIsRefused(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	first, err := newLocker(t, c).TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	seen, err := lock.Inspect(ctx, c, coll+"/k")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := newLocker(t, c).TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.ForceRelease(ctx, c, seen, "olive", "stuck"); !errors.Is(err, lock.ErrChanged) {
		t.Fatalf("forced release of a lease that changed hands: %v, want ErrChanged", err)
	}
	now, err := lock.Inspect(ctx, c, coll+"/k")
	if err != nil || now.Owner != second.Owner() || now.Token != second.Token() {
		t.Fatalf("the new holder's lease after a refused forced release: %+v, %v", now, err)
	}
	if logs, _ := c.Collection(lock.LockLog).Documents(ctx).GetAll(); len(logs) != 0 {
		t.Fatalf("a refused forced release logged %d entries", len(logs))
	}
	for _, bad := range []struct{ by, reason string }{{"olive", ""}, {"", "stuck"}} {
		if err := lock.ForceRelease(ctx, c, now, bad.by, bad.reason); !errors.Is(err, lock.ErrInvalidKey) {
			t.Errorf("forced release by %q for %q: %v, want refused", bad.by, bad.reason, err)
		}
	}
}

// List finds the leases of a collection by key prefix; Inspect of a key
// without a lease says so.
func TestListAndInspect(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c)
	for _, k := range []string{"admit-a", "admit-b", "other"} {
		if _, err := l.TryAcquire(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	got, err := lock.List(ctx, c, coll, "admit-", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != coll+"/admit-a" || got[1].Path != coll+"/admit-b" || !got[0].Live || got[0].Token == 0 {
		t.Fatalf("List admit-: %+v", got)
	}
	if all, _ := lock.List(ctx, c, coll, "", 0); len(all) != 3 {
		t.Fatalf("List all: %d leases, want 3", len(all))
	}
	if _, err := lock.Inspect(ctx, c, coll+"/none"); !errors.Is(err, lock.ErrNoLease) {
		t.Fatalf("Inspect of a free key: %v, want ErrNoLease", err)
	}
}
