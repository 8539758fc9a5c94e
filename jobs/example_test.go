package jobs_test

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

// A job whose body may outlive its run's lease (a slow call after which the
// lease was lost and another delivery took the event over) fences its
// writes with the lease: in a transaction that calls Lease().Guard first,
// the write commits only while this run still holds the event. MarkDone in
// the same transaction commits the done mark with the write, so the
// report is written exactly once even if the answer to the commit is lost.
func Example() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-jobs-example")
	if err != nil {
		panic(err)
	}
	defer client.Close()

	report := client.Doc("reports/daily")
	r := jobs.New(client, map[string]jobs.Func{
		"dailyReport": func(ctx context.Context, run *jobs.Run) error {
			total := 42 // ... the slow part of the job ...
			return client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				if err := run.Lease().Guard(tx); err != nil {
					return err // the run lost its event: write nothing
				}
				if err := tx.Set(report, map[string]any{"total": total, "slot": run.Slot()}); err != nil {
					return err
				}
				return run.MarkDone(tx)
			})
		},
	})
	// What RunScheduledJob does with each Pub/Sub delivery.
	ev := jobs.Event{
		Source:      "//pubsub.googleapis.com/projects/demo-jobs-example/topics/scheduled-jobs",
		ID:          "123",
		PublishTime: time.Date(2026, 11, 22, 6, 0, 12, 0, time.UTC),
		Data:        []byte(`{"job": "dailyReport", "schedule": "0 7 * * *", "timeZone": "Europe/Berlin"}`),
	}
	execution, _ := lock.NewExecutionID()
	outcome, err := r.Deliver(ctx, execution, ev)
	fmt.Println(outcome, err)
	outcome, err = r.Deliver(ctx, "a-duplicate-publish", ev)
	fmt.Println(outcome, err)
	s, _ := report.Get(ctx)
	fmt.Println("total:", s.Data()["total"])
	// Output:
	// ran <nil>
	// already_done <nil>
	// total: 42
}
