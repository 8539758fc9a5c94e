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

// Best available (CONTRACT §11): three rows of six; the server holds the
// middle of the row two thirds back, then the next best block, and says when
// no block of the count is left.
func ExampleService_HoldBest() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "demo-booking-best-example")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Doc("screenings/s1").Set(ctx, booking.Screening{Title: "Metropolis", StartsAt: time.Now().Add(24 * time.Hour), Rows: []string{"A", "B", "C"}, SeatsPerRow: 6}); err != nil {
		log.Fatal(err)
	}
	svc := booking.New(client)
	defer svc.Close()

	h, _, err := svc.HoldBest(ctx, "exec-1", booking.BestRequest{UID: "alice", ScreeningID: "s1", Count: 2, RequestID: "a1"}, 0)
	fmt.Println("alice:", h.Seats, err)
	h, _, err = svc.HoldBest(ctx, "exec-2", booking.BestRequest{UID: "bob", ScreeningID: "s1", Count: 2, RequestID: "b1"}, 0)
	fmt.Println("bob:", h.Seats, err)
	_, _, err = svc.HoldBest(ctx, "exec-3", booking.BestRequest{UID: "carol", ScreeningID: "s1", Count: 7, RequestID: "c1"}, 0)
	var none *booking.NoSeatsError
	fmt.Println("carol, 7 together:", errors.As(err, &none), none.SeatsLeft)
	// Output:
	// alice: [B3 B4] <nil>
	// bob: [B1 B2] <nil>
	// carol, 7 together: true 14
}
