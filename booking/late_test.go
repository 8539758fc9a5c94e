package booking

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
)

// A booking or hold decided before the screening starts whose commit the
// network holds back until after the start is undone before the answer,
// which is screening_started: nothing is left behind (issue #29.9, "a
// commit decided before a time can land after it"). Its commit's time is
// its effect's; the read that decided it only said it could still be made.
func TestAClaimThatLandsAfterTheStartIsUndone(t *testing.T) {
	for _, kind := range []string{"booking", "hold"} {
		t.Run(kind, func(t *testing.T) {
			tp := newTapped(t)
			tp.svc.tickets = &seatTickets{client: tp.direct} // a booking's tickets go with it
			ctx := context.Background()
			start := time.Now().Add(2 * time.Second)
			if _, err := tp.direct.Doc("screenings/s1").Update(ctx, []firestore.Update{{Path: "startsAt", Value: start}}); err != nil {
				t.Fatal(err)
			}
			decided := false
			var once sync.Once
			tp.svc.hooks.beforeCommit = func(bool) {
				once.Do(func() { decided = time.Now().Before(start); tp.delayRequests(t, 3*time.Second, 3500*time.Millisecond) })
			}
			r := Request{UID: "u", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "late"}
			var err error
			if kind == "booking" {
				_, _, err = tp.svc.Book(ctx, "e", r)
			} else {
				_, _, err = tp.svc.Hold(ctx, "e", r, time.Minute)
			}
			if !decided {
				t.Fatal("the claim was not decided before the start: the test proves nothing")
			}
			if !errors.Is(err, ErrScreeningStarted) {
				t.Fatalf("a %s that landed after the start: %v, want ErrScreeningStarted", kind, err)
			}
			for _, coll := range []string{Bookings, Holds, "screenings/s1/seats", "tickets"} {
				if docs, _ := tp.direct.Collection(coll).Documents(ctx).GetAll(); len(docs) != 0 {
					t.Errorf("%s holds %d documents after the undone %s", coll, len(docs), kind)
				}
			}
			if ctr, err := counter.Open(ctx, tp.direct, CounterID("s1")); err == nil {
				if n, err := ctr.Count(ctx); err != nil || n != 0 {
					t.Errorf("tickets sold %d (%v) after the undone %s", n, err, kind)
				}
			}
			// A retry of the same request answers the same and writes nothing.
			if kind == "booking" {
				_, _, err = tp.svc.Book(ctx, "e", r)
			} else {
				_, _, err = tp.svc.Hold(ctx, "e", r, time.Minute)
			}
			if !errors.Is(err, ErrScreeningStarted) {
				t.Fatalf("its retry: %v, want ErrScreeningStarted", err)
			}
		})
	}
}
