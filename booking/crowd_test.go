package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// A crowd that asks for one seat at once (the surge's shoppers when a
// lapsed hold's seat shows free on the map to everyone watching, issue
// #51): of one instance's requests, one reads and takes it, and the others,
// which waited for it, are refused without reading the seat: its commit
// took it while they waited, so it was taken within each of their
// requests: held by a hold, booked by a booking (seat_taken then, as a
// read would have found). Each still reads its own document (a retry's
// answer) and the screening. The screening starts within fastMargin, so the requests read
// first and read the screening too. Before, each of them read the seat, and
// before the flights, each read it, lost its commit and read again.
func TestACrowdWaitingForTheSeatsTakerDoesNotReadThem(t *testing.T) {
	for _, kind := range []string{"hold", "booking"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			stats := &rpcstats.Stats{}
			fs := countedClient(t, stats)
			if _, err := fs.Doc("screenings/s1").Set(ctx, Screening{Title: "x", StartsAt: time.Now().Add(25 * time.Second), Rows: []string{"A"}, SeatsPerRow: 5}); err != nil {
				t.Fatal(err)
			}
			svc := New(fs)
			t.Cleanup(svc.Close)
			const crowd = 10
			var waiting atomic.Int32
			allWaiting := make(chan struct{})
			svc.hooks.awaiting = func() {
				if waiting.Add(1) == crowd-1 {
					close(allWaiting)
				}
			}
			var commits atomic.Int32
			svc.hooks.beforeCommit = func(fast bool) {
				if fast {
					t.Error("a request took the one-commit path on a screening about to start")
				}
				if commits.Add(1) == 1 { // the first commit waits for the crowd to wait for it
					select {
					case <-allWaiting:
					case <-time.After(10 * time.Second):
						t.Error("the crowd never waited for the first request")
					}
				}
			}
			before := stats.Snapshot()
			start := make(chan struct{})
			errs := make([]error, crowd)
			var wg sync.WaitGroup
			for i := range crowd {
				wg.Go(func() {
					<-start
					r := Request{UID: fmt.Sprintf("u%d", i), ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}
					if kind == "booking" {
						_, _, errs[i] = svc.Book(ctx, "e", r)
					} else {
						_, _, errs[i] = svc.Hold(ctx, "e", r, time.Minute)
					}
				})
			}
			close(start)
			wg.Wait()
			c := stats.Snapshot().Sub(before)
			held := 0
			refused := ErrSeatHeld
			if kind == "booking" {
				refused = ErrSeatTaken
			}
			for i, err := range errs {
				var se *SeatsError
				switch {
				case err == nil:
					held++
				case errors.As(err, &se) && errors.Is(err, refused) && len(se.Seats) == 1 && se.Seats[0] == "A1":
				default:
					t.Errorf("u%d: %v, want a %s or %v [A1]", i, err, kind, refused)
				}
			}
			t.Logf("%d %ss of one seat at once: %d took it, %v", crowd, kind, held, c)
			if held != 1 {
				t.Fatalf("%d took A1", held)
			}
			// The taker: its document, the screening, the seat (and a
			// booking the tickets-sold counter's document, which the first
			// booking creates); each other: its document and the screening
			// (the screening's listener, which the first read opens, reads
			// apart).
			want := 3 + 2*(crowd-1)
			if kind == "booking" {
				want++
			}
			if got := c.ReadsBy["BatchGetDocuments"]; got != want {
				t.Errorf("%d %ss of one seat at once read %d documents, want %d", crowd, kind, got, want)
			}
			checkSeats(t, fs)

		})
	}
}
