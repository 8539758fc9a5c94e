package sale

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// A hold refused by a taken seat reads the request's document, the pass
// and the seats, not the screening too: the screening's listener has it
// (issue #51: 8.4 refused holds a seat sold in the surge, 5.7 reads each).
// A hold that goes through still reads the screening, as does one the gate
// refuses, and neither reads more than before.
func TestARefusedHoldReadsNoScreening(t *testing.T) {
	t.Parallel() // its own project
	ctx := context.Background()
	e := newEnv(t, 2, 10, saleOpening(time.Now().Add(-time.Minute), 600, 10, 600))
	svc, stats := e.statsService()
	fs := svc.client
	bk := booking.New(fs, booking.WithGate(svc))
	t.Cleanup(bk.Close)
	g := gateEnv{e, ctx}
	e.holdFor(bk, "alice", "A1", "A2") // reads the screening, and starts its listener
	g.pass(e.id, "bob", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	g.pass(e.id, "carol", StatusWaiting, time.Time{}, nil)
	time.Sleep(500 * time.Millisecond) // the listener's first snapshot
	hold := func(uid, id string, seats ...string) (int, error) {
		t.Helper()
		before := stats.Snapshot()
		_, _, err := bk.Hold(ctx, "e", booking.Request{UID: uid, ScreeningID: e.id, Seats: seats, RequestID: id}, 5*time.Minute)
		n := stats.Snapshot().Sub(before).Reads
		t.Logf("%s holds %v: %d reads, %v", uid, seats, n, err)
		return n, err
	}
	n, err := hold("bob", "b1", "A1", "A3")
	var se *booking.SeatsError
	if !errors.As(err, &se) || !errors.Is(err, booking.ErrSeatHeld) || len(se.Seats) != 1 || se.Seats[0] != "A1" {
		t.Fatalf("bob's hold of a held seat: %v", err)
	}
	if n != 4 {
		t.Errorf("a hold of 2 seats refused by one read %d documents, want 4 (its document, the pass, the seats)", n)
	}
	// Refused by the gate: carol waits; she learns nothing of the seats.
	if n, err := hold("carol", "c1", "A1"); !errors.Is(err, booking.ErrNotAdmitted) || n > 4 {
		t.Errorf("carol's hold: %v after %d reads, want not_admitted after 4 at most", err, n)
	}
	if n, err := hold("bob", "b2", "A3", "A4"); err != nil || n > 5 {
		t.Errorf("bob's hold of free seats: %v after %d reads, want a hold after 5 at most", err, n)
	}
	// A retry of a hold made answers it, whatever its seats show.
	if n, err := hold("bob", "b2", "A3", "A4"); err != nil || n > 5 {
		t.Errorf("bob's retry: %v after %d reads", err, n)
	}
}

// A screening nobody edits sends its listener nothing, and refusals that
// skip its read do not refresh it: without a read now and then the entry
// would age past booking.ScreeningCacheTTL and every request read the
// screening again (the surge of 06:20: 5.85 reads a hold). Past half the
// TTL one request reads it, and the refusals after it skip it again. Four
// refusals 10 s apart, the last 30 s after the screening was first read:
// it reads the request's document, the pass and the seat only.
func TestRefusedHoldsSkipTheScreeningPastItsCacheTTL(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	ctx := context.Background()
	e := newEnv(t, 2, 10, saleOpening(time.Now().Add(-time.Minute), 600, 10, 600))
	svc, stats := e.statsService()
	bk := booking.New(svc.client, booking.WithGate(svc))
	t.Cleanup(bk.Close)
	g := gateEnv{e, ctx}
	e.holdFor(bk, "alice", "A1") // reads the screening, and starts its listener
	g.pass(e.id, "bob", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	start := time.Now()
	var reads []int
	for i := range 4 {
		time.Sleep(time.Until(start.Add(time.Duration(i)*booking.ScreeningCacheTTL/3 + 500*time.Millisecond)))
		before := stats.Snapshot()
		_, _, err := bk.Hold(ctx, "e", booking.Request{UID: "bob", ScreeningID: e.id, Seats: []string{"A1"}, RequestID: fmt.Sprintf("b%d", i)}, 5*time.Minute)
		if !errors.Is(err, booking.ErrSeatHeld) {
			t.Fatalf("bob's hold of a held seat: %v", err)
		}
		reads = append(reads, stats.Snapshot().Sub(before).Reads)
	}
	t.Logf("reads of refusals 0, 10, 20, 30 s on: %v", reads)
	if reads[len(reads)-1] != 3 {
		t.Errorf("the last refusal, %v after the screening's first read, read %d documents, want 3", booking.ScreeningCacheTTL, reads[len(reads)-1])
	}
}

// A crowd that asks for one seat at once, as the surge's shoppers do when
// a walk-away's hold lapses and the map shows its seat free to everyone
// watching: one of them gets it, and each of the others reads the
// request's document, the pass and the seat once before it is refused.
// Before, every request read, all but one lost the commit, and each read
// again to learn why (issue #51: 5.2-5.9 reads a HoldSeats call in the
// surge, 8-12 refused holds a seat sold).
func TestACrowdForOneSeatReadsItOnceEach(t *testing.T) {
	t.Parallel() // its own project
	ctx := context.Background()
	const crowd = 20
	e := newEnv(t, 2, 10, saleOpening(time.Now().Add(-time.Minute), 600, crowd+10, 600))
	svc, stats := e.statsService()
	bk := booking.New(svc.client, booking.WithGate(svc))
	t.Cleanup(bk.Close)
	g := gateEnv{e, ctx}
	e.holdFor(bk, "alice", "A1") // reads the screening, and starts its listener
	for i := range crowd {
		g.pass(e.id, fmt.Sprintf("u%02d", i), StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	}
	time.Sleep(500 * time.Millisecond) // the listener's first snapshot
	before := stats.Snapshot()
	start := make(chan struct{})
	errs := make([]error, crowd)
	var wg sync.WaitGroup
	for i := range crowd {
		wg.Go(func() {
			<-start
			_, _, errs[i] = bk.Hold(ctx, "e", booking.Request{UID: fmt.Sprintf("u%02d", i), ScreeningID: e.id, Seats: []string{"B5"}, RequestID: "r"}, 5*time.Minute)
		})
	}
	close(start)
	wg.Wait()
	reads := stats.Snapshot().Sub(before).Reads
	held, refused := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			held++
		case errors.Is(err, booking.ErrSeatHeld):
			refused++
		default:
			t.Errorf("u%02d: %v", i, err)
		}
	}
	t.Logf("%d holds of one seat at once: %d held, %d refused, %d reads", crowd, held, refused, reads)
	if held != 1 || refused != crowd-1 {
		t.Fatalf("%d held, %d refused, want 1 and %d", held, refused, crowd-1)
	}
	// Each: its document, its pass, the seat; the one that holds it also
	// the screening, read afresh before it writes. (Those that waited for
	// it while its commit was sent do not read the seat either: 42 reads
	// here, 2 each; booking's TestACrowdWaitingForTheSeatsTakerDoesNotReadThem
	// counts that exactly. A request that came after the commit was sent
	// reads it, so this bound leaves room for it.)
	if want := 3*crowd + 1; reads > want {
		t.Errorf("%d holds of one seat at once read %d documents, want %d at most (3 each, and the screening once)", crowd, reads, want)
	}
}
