package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// A Locker derived for another owner writes that owner and excludes the
// Locker it came from like any other owner.
func TestForOwnerTakesLeasesAsItsOwner(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	base := newLocker(t, c)
	derived, err := base.ForOwner("execution-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := derived.TryAcquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d := leaseOf(t, c, "k"); d[lock.FieldOwner] != "execution-2" || base.Owner() == "execution-2" {
		t.Fatalf("lease %v, base owner %s", d, base.Owner())
	}
	if _, err := base.TryAcquire(ctx, "k", lock.Reentrant()); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("the base Locker joined the derived one's lease: err = %v, want ErrHeld", err)
	}
	if _, err := base.ForOwner(""); err == nil {
		t.Fatal("an empty owner was accepted")
	}
}
