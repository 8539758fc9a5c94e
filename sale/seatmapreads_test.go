package sale

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// fillSeats writes a seat document for every seat of the layout: booked,
// or held for an hour (every third).
func (e *env) fillSeats(seats []string) {
	e.t.Helper()
	until := e.serverNow().Add(time.Hour)
	bw := e.fs.BulkWriter(context.Background())
	for i, seat := range seats {
		ref := e.fs.Collection(booking.Screenings).Doc(e.id).Collection(booking.SeatsCollection).Doc(seat)
		doc := map[string]any{"status": booking.StatusBooked, "bookingId": "b-" + seat}
		if i%3 == 0 {
			doc = map[string]any{"status": booking.StatusHeld, "holdId": "h-" + seat, "heldUntil": until}
		}
		if _, err := bw.Set(ref, doc); err != nil {
			e.t.Fatal(err)
		}
	}
	bw.End()
}

// The seat map's publisher reads every seat once when it starts, and then
// only the seats that change: it no longer listens again every 10 s
// (issue #51: 9-13 reads a seat sold in the surge, each new listener's
// first snapshot reading every seat document). 200 seat documents, an
// admitter for 25 s, five seats changed: its listeners read the 200
// seats, the changes and the screening, and at most one more full read
// (a refresh the counts asked for on a slow machine). Before, 600 and
// more (a full read at 0, 10 and 20 s).
func TestTheSeatMapReadsEverySeatOnce(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	seats := Layout(booking.Screening{Rows: strings.Split("ABCDEFGHIJ", ""), SeatsPerRow: 20})
	e.fillSeats(seats)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	svc, stats := e.statsService()
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.run(a, 25*time.Second) }()
	want := []byte(strings.Repeat("b", len(seats)))
	for i := range seats {
		if i%3 == 0 {
			want[i] = 'h'
		}
	}
	maps.waitFor(t, string(want), 10*time.Second)
	const changed = 5
	for i := range changed {
		time.Sleep(2 * time.Second)
		e.setSeat(seats[i], "", time.Time{})
		want[i] = '.'
	}
	maps.waitFor(t, string(want), 10*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := stats.Snapshot()
	listened := got.ReadsBy["Listen"]
	t.Logf("the admitter's listeners read %d documents; all: %v, reads by method %v", listened, got, got.ReadsBy)
	if bound := 2*len(seats) + changed + 20; listened > bound {
		t.Errorf("the admitter's listeners read %d documents for %d seats and %d changes in 25 s, want at most %d", listened, len(seats), changed, bound)
	}
}

// A change the seat map's listener never delivered (as the emulator's
// resumed streams can miss one) is still repaired, by the admitter's
// counts of booked and held seats, with the periodic full read an hour
// away: a booking and a hold the listener misses both reach the map, and
// each is found by a fresh read the counts asked for.
func TestTheSeatMapRepairsAChangeItsListenerMissed(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 2, 3, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	a := e.admitter()
	a.seatMapRefresh = time.Hour
	a.seatMapMisses = func(seat string) bool { return seat == "A1" || seat == "B2" }
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(time.Minute)) }()
	maps.waitFor(t, "......", 10*time.Second)

	e.setSeat("A1", booking.StatusBooked, time.Time{})
	maps.waitFor(t, "b.....", 30*time.Second)
	e.setSeat("B2", booking.StatusHeld, e.serverNow().Add(time.Hour))
	e.setSeat("A2", booking.StatusBooked, time.Time{}) // delivered
	maps.waitFor(t, "bb..h.", 30*time.Second)
	cancel()
	<-done

	log := e.log.String()
	asked := strings.Count(log, "the seats' counts disagree with the listener")
	found := strings.Count(log, "a fresh read found seats the listener had missed")
	t.Logf("fresh reads asked for by the counts: %d; that found misses: %d", asked, found)
	if asked < 2 || found < 2 {
		t.Errorf("the counts asked for %d fresh reads, %d of them found misses; want both misses found that way", asked, found)
	}
}

// A count is judged on every state the listener showed from just before it
// was sent until seatMapLag after its answer, and not before: a count the
// listener is still catching up with agrees, one no state matches in its
// window disagrees, and seatMapMismatches disagreeing in a row ask for a
// fresh read (no emulator: the states are made here).
func TestASeatCountIsJudgedOnTheListenersStatesInItsWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	fs := at(0).Add(time.Hour) // Firestore's clock, for the holds' ends
	p := &seatMapPublisher{}
	// The listener: nothing until 0.5 s, a booking at 1 s, a hold (to fs
	// + 10 s) at 3 s.
	p.seats = map[string]seatSeen{}
	p.level(at(0))
	p.seats["A1"] = seatSeen{status: booking.StatusBooked}
	p.level(at(1000))
	p.seats["A2"] = seatSeen{status: booking.StatusHeld, heldUntil: fs.Add(10 * time.Second)}
	p.level(at(3000))
	check := func(sent, answered, now int, booked, held int64) bool {
		t.Helper()
		return p.check(seatCheck{sent: at(sent), answered: at(answered), at: fs, booked: booked, held: held}, at(now))
	}
	// Counted at 0.8 s: the booking, which the listener showed at 1 s. It
	// waits until seatMapLag after its answer.
	if check(800, 900, 900, 1, 0) || len(p.checks) != 1 || p.mismatched != 0 {
		t.Fatalf("a count was judged before its window ended: %d waiting, %d mismatched", len(p.checks), p.mismatched)
	}
	// Counted at 2.95 s with the hold the listener showed at 3 s.
	if check(2950, 3000, 3000, 1, 1) || p.mismatched != 0 || len(p.checks) != 1 {
		t.Fatalf("the count of 0.8 s was judged wrong: %d waiting, %d mismatched", len(p.checks), p.mismatched)
	}
	if check(5400, 5500, 5500, 1, 1) || p.mismatched != 0 || len(p.checks) != 1 {
		t.Fatalf("counts the listener showed in time were judged a mismatch: %d waiting, %d mismatched", len(p.checks), p.mismatched)
	}
	// Two seats booked, which the listener never shows: the first
	// disagreement waits for a second.
	if check(6000, 6100, 8200, 2, 1) || p.mismatched != 1 {
		t.Fatalf("after one disagreement: mismatched %d", p.mismatched)
	}
	if !check(7000, 7100, 9200, 2, 1) {
		t.Fatalf("two disagreements in a row asked for no fresh read (mismatched %d)", p.mismatched)
	}
	if p.mismatched != 0 || len(p.checks) != 0 {
		t.Fatalf("a fresh read asked for kept %d checks, %d mismatched", len(p.checks), p.mismatched)
	}
	// A hold past its end is not counted held, on either side; an
	// agreement ends a run of disagreements.
	check(9000, 9100, 9100, 2, 1)
	check(9300, 9400, 11500, 1, 1)
	if p.mismatched != 0 {
		t.Fatalf("an agreement after a disagreement left %d mismatched", p.mismatched)
	}
	if p.check(seatCheck{sent: at(11300), answered: at(11400), at: fs.Add(11 * time.Second), booked: 1, held: 0}, at(13500)) || p.mismatched != 0 {
		t.Fatalf("a hold past its end was judged held (mismatched %d)", p.mismatched)
	}
}
