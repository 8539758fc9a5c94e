package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
)

// The crowd flights of issue #51 (Service.flights) under attack: a hung first
// request, copies of one request at once, a first request that loses.

// crowdScreening writes screening id starting in startsIn (25 s: the
// read-first path) and returns a Service on it.
func crowdScreening(t *testing.T, ids []string, startsIn time.Duration) (*Service, func() int) {
	t.Helper()
	fs := firelocktest.NewClient(t)
	for _, id := range ids {
		if _, err := fs.Doc("screenings/"+id).Set(context.Background(), Screening{Title: "x", StartsAt: time.Now().Add(startsIn), Rows: []string{"A"}, SeatsPerRow: 5}); err != nil {
			t.Fatal(err)
		}
	}
	svc := New(fs)
	t.Cleanup(svc.Close)
	t.Cleanup(func() { checkSeats(t, fs) })
	return svc, svc.flightsLen
}

// A waiter whose leader hangs returns at its own deadline, and the map
// is empty once the leader ends.
func TestAWaiterLeavesAtItsDeadlineWhileTheRequestAheadHangs(t *testing.T) {
	svc, flights := crowdScreening(t, []string{"s1"}, 25*time.Second)
	ctx := context.Background()
	inCommit := make(chan struct{})
	release := make(chan struct{})
	var n atomic.Int32
	svc.hooks.beforeCommit = func(bool) {
		if n.Add(1) == 1 {
			close(inCommit)
			<-release
		}
	}
	leaderErr := make(chan error, 1)
	go func() {
		_, _, err := svc.Hold(ctx, "e", Request{UID: "lead", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}, time.Minute)
		leaderErr <- err
	}()
	<-inCommit
	const crowd = 10
	var wg sync.WaitGroup
	errs := make([]error, crowd)
	for i := range crowd {
		wg.Go(func() {
			c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			_, _, errs[i] = svc.Hold(c, "e", Request{UID: fmt.Sprintf("u%d", i), ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}, time.Minute)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("waiters did not return at their deadlines while the leader hung")
	}
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("u%d: %v, want a deadline", i, err)
		}
	}
	close(release)
	if err := <-leaderErr; err != nil {
		t.Fatalf("leader: %v", err)
	}
	if got := flights(); got != 0 {
		t.Errorf("%d flights left after all ended", got)
	}
}

// Copies of one request (same user and requestId) at once: each answers the
// same hold (or booking), none is refused: the retry's idempotency.
func TestCopiesOfOneRequestAtOnceAllAnswerItsClaim(t *testing.T) {
	for _, kind := range []string{"hold", "booking"} {
		for _, startsIn := range []time.Duration{25 * time.Second, time.Hour} {
			t.Run(fmt.Sprintf("%s/%v", kind, startsIn), func(t *testing.T) {
				svc, flights := crowdScreening(t, []string{"s1"}, startsIn)
				ctx := context.Background()
				// warm the clock and the screening's listener on another seat
				if _, _, err := svc.Hold(ctx, "e", Request{UID: "w", ScreeningID: "s1", Seats: []string{"A5"}, RequestID: "w"}, time.Minute); err != nil {
					t.Fatal(err)
				}
				const copies, others = 12, 12
				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make([]error, copies+others)
				created := make([]bool, copies+others)
				ids := make([]string, copies+others)
				for i := range copies + others {
					wg.Go(func() {
						<-start
						uid := "same"
						if i >= copies {
							uid = fmt.Sprintf("o%d", i)
						}
						r := Request{UID: uid, ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r"}
						if kind == "booking" {
							var b Booking
							b, created[i], errs[i] = svc.Book(ctx, "e", r)
							ids[i] = b.ID
						} else {
							var h Hold
							h, created[i], errs[i] = svc.Hold(ctx, "e", r, time.Minute)
							ids[i] = h.ID
						}
					})
				}
				close(start)
				wg.Wait()
				winners := map[string]bool{}
				nCreated := 0
				for i := range copies + others {
					if errs[i] == nil {
						winners[ids[i]] = true
						if created[i] {
							nCreated++
						}
					}
				}
				if len(winners) != 1 || nCreated != 1 {
					t.Errorf("%d distinct winners, %d created; want 1 and 1", len(winners), nCreated)
				}
				sameWon := false
				for i := range copies {
					if errs[i] == nil {
						sameWon = true
					}
				}
				if sameWon {
					for i := range copies {
						if errs[i] != nil {
							t.Errorf("copy %d of a request that succeeded: %v", i, errs[i])
						}
					}
				}
				t.Logf("same user's copies won: %v; winners %v", sameWon, winners)
				if got := flights(); got != 0 {
					t.Errorf("%d flights left", got)
				}
			})
		}
	}
}

// The leader's commit loses to another instance's hold, which is released
// right after the leader's second read (so the leader is refused on it)
// and before the waiters read: the seat is free then, and one waiter must
// get it; nobody is refused on the leader's failed attempt.
func TestWaitersTakeASeatTheRequestAheadLostAndThatWasFreed(t *testing.T) {
	svc, flights := crowdScreening(t, []string{"s1"}, 25*time.Second)
	ctx := context.Background()
	other := New(svc.client)
	t.Cleanup(other.Close)
	const crowd = 10
	var waiting atomic.Int32
	allWaiting := make(chan struct{})
	svc.hooks.awaiting = func() {
		if waiting.Add(1) == crowd {
			close(allWaiting)
		}
	}
	var otherHold Hold
	var commits atomic.Int32
	svc.hooks.beforeCommit = func(bool) {
		if commits.Add(1) != 1 {
			return
		}
		select {
		case <-allWaiting:
		case <-time.After(10 * time.Second):
			t.Error("the crowd never waited")
		}
		var err error
		otherHold, _, err = other.Hold(ctx, "e2", Request{UID: "other", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "x"}, time.Minute)
		if err != nil {
			t.Errorf("other instance: %v", err)
		}
	}
	var reads atomic.Int32
	svc.hooks.batchRead = func([]*firestore.DocumentSnapshot) {
		if reads.Add(1) == 2 { // the leader's second round: it sees other's hold
			if _, err := other.ReleaseHold(ctx, "other", otherHold.ID); err != nil {
				t.Errorf("release: %v", err)
			}
		}
	}
	leaderErr := make(chan error, 1)
	go func() {
		_, _, err := svc.Hold(ctx, "e", Request{UID: "lead", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}, time.Minute)
		leaderErr <- err
	}()
	for svc.flightsLen() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	errs := make([]error, crowd)
	for i := range crowd {
		wg.Go(func() {
			_, _, errs[i] = svc.Hold(ctx, "e", Request{UID: fmt.Sprintf("u%d", i), ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}, time.Minute)
		})
	}
	wg.Wait()
	lerr := <-leaderErr
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, ErrSeatHeld):
		default:
			t.Errorf("u%d: %v", i, err)
		}
	}
	t.Logf("leader: %v; waiters won %d; reads %d", lerr, won, reads.Load())
	if !errors.Is(lerr, ErrSeatHeld) {
		t.Fatalf("setup: the leader was not refused on the other's hold: %v", lerr)
	}
	if won != 1 {
		t.Errorf("%d waiters took the freed seat, want 1", won)
	}
	if got := flights(); got != 0 {
		t.Errorf("%d flights left", got)
	}
}

func (s *Service) flightsLen() int {
	s.flights.mu.Lock()
	defer s.flights.mu.Unlock()
	return len(s.flights.m)
}
