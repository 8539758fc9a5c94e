package firelocktest_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// A test of your own code: TestMain starts the emulator once for the
// package, and each test takes a project of its own, so tests run in
// parallel and leave nothing to clean up. (Tests cannot run in an example:
// this shows the test function, which go test runs as TestNightlyReport.)
func Example() {
	// main_test.go:
	//
	//	func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }
	testNightlyReport := func(t *testing.T) {
		t.Parallel()
		client := firelocktest.NewClient(t) // demo-<random>, closed when t ends
		locker, err := lock.New(client, "locks")
		if err != nil {
			t.Fatal(err)
		}
		err = locker.WithLock(context.Background(), "nightly-report", func(ctx context.Context, lease *lock.Lease) error {
			return nil // your function's work, fenced with lease.Guard
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = testNightlyReport
}

// Lose the answers of a lease's RPCs: the proxy lets requests reach the
// emulator (the write lands) and swallows what comes back, so the caller
// cannot tell whether it happened. The lock settles that by reading back;
// your code on top of it should hold up the same way.
func ExampleNewProxy() {
	testLostAnswers := func(t *testing.T) {
		p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
		project := firelocktest.ProjectID(t)
		client, opts := firelocktest.NewClientVia(t, p.Addr, project)
		locker, err := lock.New(client, "locks", lock.WithClientOptions(opts...))
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		if err := p.DropAnswers(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = locker.TryAcquire(ctx, "k") // fails: no answer came back
		p.Heal()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		// What Firestore holds, read past the proxy: the failed grant left nothing.
		direct := firelocktest.NewClientFor(t, project)
		if _, err := direct.Doc("locks/k").Get(context.Background()); err == nil {
			t.Fatal("a failed grant left a lease behind")
		}
	}
	_ = testLostAnswers
}
