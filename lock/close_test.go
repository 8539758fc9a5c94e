package lock_test

import (
	"context"
	"os"
	"testing"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
	"google.golang.org/grpc/connectivity"
)

// A Locker made with WithClientOptions closes the commit client (and
// connection) it was given when closed: cmd/bench used to leave one open
// per Locker (issue #29.10). One without options leaves the shared commit
// client open for the Lockers that still use it.
func TestCloseClosesTheLockersOwnConnectionOnly(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	conn := dialAdmin(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	own := newLocker(t, c, lock.WithClientOptions(option.WithGRPCConn(conn)))
	lease, err := own.TryAcquire(ctx, "close-own")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := own.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s := conn.GetState(); s != connectivity.Shutdown {
		t.Fatalf("after Close the Locker's connection is %v, want Shutdown", s)
	}

	shared, other := newLocker(t, c), newLocker(t, c)
	if err := shared.Close(); err != nil {
		t.Fatalf("Close of a Locker on the shared client: %v", err)
	}
	lease, err = other.TryAcquire(ctx, "close-shared")
	if err != nil {
		t.Fatalf("a Locker on the shared commit client after another's Close: %v", err)
	}
	lease.Release(ctx)
}
