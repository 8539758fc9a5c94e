package sale

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// Under a steady burst of holds and releases the admitter's counts raise
// no false alarm: a fresh read they ask for finds seats the listener had
// missed or not yet delivered (issue #51: a full read every 10 s cost 9-13
// reads a seat sold; a false alarm every few ticks would cost more). 200
// seats, 8 writers holding and releasing seats as fast as the emulator
// takes them, an admitter for 35 s, the burst 15 s of it with the periodic
// full read an hour away: at most one fresh read that found nothing, and
// no more fresh reads in all than the 10-s refresh made before (3 in 35
// s). The emulator's listener falls behind under this burst on a busy
// machine (fresh reads have found 73-93 seats it had not delivered), so
// "nothing missed" is not this test's to assume.
func TestTheSeatMapsCountsRaiseNoFalseAlarmsUnderABurst(t *testing.T) {
	t.Parallel() // its own project
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	seats := Layout(booking.Screening{Rows: strings.Split("ABCDEFGHIJ", ""), SeatsPerRow: 20})
	svc, stats := e.statsService()
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	a.seatMapRefresh = time.Hour
	until := e.serverNow().Add(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(35*time.Second)) }()
	var wg sync.WaitGroup
	var writes atomic.Int64
	stop := time.Now().Add(15 * time.Second)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 51))
			for time.Now().Before(stop) {
				seat := seats[rng.IntN(len(seats))]
				ref := e.fs.Collection(booking.Screenings).Doc(e.id).Collection(booking.SeatsCollection).Doc(seat)
				var err error
				if rng.IntN(2) == 0 {
					_, err = ref.Delete(context.Background())
				} else {
					_, err = ref.Set(context.Background(), map[string]any{"status": booking.StatusHeld, "holdId": "h-" + seat, "heldUntil": until})
				}
				if err == nil {
					writes.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// Once the burst is over the map shows the seats as they are: read
	// from Firestore, not through a listener of the test's own, which the
	// emulator has left without a first snapshot for the whole burst.
	want := e.storedSeatMap(t, seats, e.serverNow())
	e.waitForStoredSeatMapDoc(t, want, 15*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log := e.log.String()
	asked := strings.Count(log, "the seats' counts disagree with the listener")
	found := strings.Count(log, "a fresh read found seats the listener had missed")
	got := stats.Snapshot()
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "stopped publishing") {
			t.Log(l)
		}
	}
	direct := strings.Count(log, "a fresh listener sent nothing; read every seat")
	t.Logf("%d seat writes in 15 s; fresh reads asked for by the counts: %d (that found misses: %d); read by the publisher itself, a fresh listener silent: %d; the listeners read %d documents",
		writes.Load(), asked, found, direct, got.ReadsBy["Listen"])
	if falseAlarms := asked - found; falseAlarms > 1 {
		t.Errorf("the counts asked for %d fresh reads that found the listener right (of %d in 35 s); want at most 1", falseAlarms, asked)
	}
	if asked > 3 {
		t.Errorf("the counts asked for %d fresh reads in 35 s (%d found misses); want at most 3, as the 10-s refresh made", asked, found)
	}
}

// waitForStoredSeatMapDoc reads seatMaps/{id} (a get every 200 ms) until
// its seats are want, or fails after within.
func (e *env) waitForStoredSeatMapDoc(t *testing.T, want string, within time.Duration) {
	t.Helper()
	last := "none"
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		snap, err := e.fs.Collection(SeatMaps).Doc(e.id).Get(context.Background())
		var m SeatMap
		if err == nil && snap.DataTo(&m) == nil {
			if m.Seats == want {
				return
			}
			last = m.Seats
		}
	}
	t.Fatalf("the stored seat map is not %q within %v; last %q", want, within, last)
}
