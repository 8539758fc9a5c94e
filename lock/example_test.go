package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
)

// One execution takes the lock on "nightly-report", keeps the lease alive
// while it works, writes its result only if it still holds the lease, and
// releases it. A second execution is refused meanwhile.
func Example() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	locker, err := lock.New(client, "locks")
	if err != nil {
		log.Fatal(err)
	}
	err = locker.WithLock(ctx, "nightly-report", func(ctx context.Context, lease *lock.Lease) error {
		other, _ := lock.New(client, "locks")
		_, err := other.TryAcquire(ctx, "nightly-report")
		fmt.Println("second execution held off:", errors.Is(err, lock.ErrHeld))

		return client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := lease.Guard(tx); err != nil {
				return err // a stale holder writes nothing
			}
			return tx.Set(client.Doc("reports/nightly"), map[string]any{"rows": 42, "token": lease.Token()})
		})
	})
	fmt.Println("done:", err)

	_, err = locker.TryAcquire(ctx, "bad/key")
	fmt.Println("bad key:", errors.Is(err, lock.ErrInvalidKey))
	// Output:
	// second execution held off: true
	// done: <nil>
	// bad key: true
}
