package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// A Reentrant sibling that renews and then releases moves the document on
// under the holder, so the holder's renewal conflicts. Renew must not take
// the sibling's renewal for its own: when it returns nil, the renewal it
// relies on (RenewedAt, and the lease end it keeps locally from it) was
// written after the call began, and Firestore holds a lease that ends no
// earlier.
func TestRenewNeverTakesASiblingsRenewalForItsOwn(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	const lease = 3 * time.Second
	owner, err := lock.NewExecutionID()
	if err != nil {
		t.Fatal(err)
	}
	holder, err := newLocker(t, c, lock.WithOwner(owner), lock.WithLeaseDuration(lease)).TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	sibling := newLocker(t, c, lock.WithOwner(owner), lock.WithLeaseDuration(lease))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, err := sibling.TryAcquire(ctx, "k", lock.Reentrant())
			if err != nil {
				continue // lost a round to the holder's write: try again
			}
			s.Renew(ctx)
			if err := s.Release(ctx); err != nil && !errors.Is(err, lock.ErrNotHeld) {
				s.Release(ctx)
			}
		}
	})

	ref := c.Collection(coll).Doc("k")
	renewed := 0
	for range 60 {
		// The read time is Firestore's clock just before the call: a write
		// the call makes is stamped later (the emulator stamps whole
		// milliseconds).
		snap, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		began := snap.ReadTime.Truncate(time.Millisecond)
		if err := holder.Renew(ctx); err != nil {
			if errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("the holder lost its lease to its own sibling: %v", err)
			}
			continue // the document kept changing: no claim made
		}
		renewed++
		after, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		believed := holder.RenewedAt()
		held, _ := after.Data()[lock.FieldRenewedAt].(time.Time)
		if believed.Before(began) {
			t.Fatalf("Renew returned nil relying on a renewal at %s, before the call began at %s (a sibling's): "+
				"the holder believes its lease ends %v later than it does",
				believed.Format(time.RFC3339Nano), began.Format(time.RFC3339Nano), began.Sub(believed))
		}
		if held.Before(believed) {
			t.Fatalf("Firestore holds renewedAt %s, before the holder's %s", held.Format(time.RFC3339Nano), believed.Format(time.RFC3339Nano))
		}
	}
	if renewed < 10 {
		t.Fatalf("only %d of 60 renewals succeeded beside a busy sibling", renewed)
	}
	t.Logf("%d of 60 renewals succeeded beside a sibling renewing and releasing", renewed)
}
