package counter_test

import (
	"context"
	"fmt"
	"log"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
)

// Many writers bump one counter; the exact count is one aggregation query,
// and Rollup stores it where clients read one document.
func Example() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-counter-example")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	likes, err := counter.Create(ctx, client, "likes-post-1", 10)
	if err != nil {
		log.Fatal(err)
	}
	for range 5 {
		if err := likes.Increment(ctx, 1); err != nil {
			log.Fatal(err)
		}
	}
	n, err := likes.Count(ctx)
	fmt.Println("count:", n, err)
	total, err := likes.Rollup(ctx)
	fmt.Println("rolled up:", total, err)
	// Output:
	// count: 5 <nil>
	// rolled up: 5 <nil>
}
