package sale_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/sale"
)

// A screening goes on sale; alice joins after the opening and waits; one
// pass of the admitter lets her in, with a pass that lasts passSeconds.
func Example() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-sale-example")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Doc("screenings/hot").Set(ctx, map[string]any{
		"title": "Metropolis", "startsAt": time.Now().Add(24 * time.Hour), "rows": []string{"A", "B"}, "seatsPerRow": 10,
		"sale": map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 20, "passSeconds": 300},
	}); err != nil {
		log.Fatal(err)
	}
	svc := sale.New(client)

	place, created, err := svc.Join(ctx, "alice", "hot")
	fmt.Println(place.Status, created, err, place.ID == sale.QueueID("hot", "alice"))

	time.Sleep(time.Second) // the join window: nobody who joined earlier is still committing
	admitter, err := svc.Admitter()
	if err != nil {
		log.Fatal(err)
	}
	if err := admitter.Run(ctx, time.Time{}); err != nil { // one pass
		log.Fatal(err)
	}
	snap, err := client.Collection(sale.Queue).Doc(place.ID).Get(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(snap.Data()["status"], snap.Data()["passUntil"].(time.Time).Sub(snap.Data()["admittedAt"].(time.Time)))
	// Output:
	// waiting true <nil> true
	// admitted 5m0s
}
