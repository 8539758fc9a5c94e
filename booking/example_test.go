package booking_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// Two users want seat F12; one gets it, the other learns at once that it is
// taken. A retry of the first request gets the same booking back.
func Example() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-booking-example")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Doc("screenings/s1").Set(ctx, booking.Screening{Title: "Metropolis", StartsAt: time.Now().Add(24 * time.Hour), Rows: []string{"F"}, SeatsPerRow: 20}); err != nil {
		log.Fatal(err)
	}
	svc := booking.New(client)

	b, created, err := svc.Book(ctx, "exec-1", booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{"F12"}, RequestID: "r1"})
	fmt.Println("alice:", b.Status, created, err)

	_, _, err = svc.Book(ctx, "exec-2", booking.Request{UID: "bob", ScreeningID: "s1", Seats: []string{"F12"}, RequestID: "r9"})
	fmt.Println("bob taken:", errors.Is(err, booking.ErrSeatTaken))

	again, created, err := svc.Book(ctx, "exec-3", booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{"F12"}, RequestID: "r1"})
	fmt.Println("alice retry:", again.ID == b.ID, created, err)
	// Output:
	// alice: confirmed true <nil>
	// bob taken: true
	// alice retry: true false <nil>
}
