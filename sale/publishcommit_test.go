package sale

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// sales/{id} is written at most once a second (CONTRACT §7) by the times
// its writes land, not by the times its steps read at. A publication whose
// commit lands late (a slow network, a busy emulator: here 700 ms after
// its transaction read) must still be the last for a second. The
// fresh-clone run of 2026-11-30 03:47 saw two writes 812 ms apart in
// TestSeatsLeftFlappingKeepsTheWriteBudgets, beside make test's other
// packages.
func TestSalePublicationsAreASecondApartByTheirCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	e.svc = New(e.fs, append(testOptions(e.log), WithTick(100*time.Millisecond, 300*time.Millisecond))...)
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	a := e.admitter()
	var slow sync.Mutex
	late := 0
	a.published = func() {
		slow.Lock()
		defer slow.Unlock()
		if late < 3 {
			late++
			time.Sleep(700 * time.Millisecond) // this publication's commit lands 0.7 s after its read
		}
	}
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx, time.Now().Add(20*time.Second)) }()
	time.Sleep(2 * time.Second)
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	// seatsLeft flips between 0 and 1: each flip is published within a
	// second, like a change of state.
	e.flapLastSeat(time.Now().Add(8400*time.Millisecond), 350*time.Millisecond)
	cancel()
	if err := <-ran; err != nil && ctx.Err() == nil {
		t.Error(err)
	}
	writes := seen()
	slow.Lock()
	defer slow.Unlock()
	if late < 3 || len(writes) < 6 {
		t.Fatalf("%d publications made late, %d writes of sales/{id}: the test did not reach what it tests", late, len(writes))
	}
	secondApart(t, writes)
	t.Logf("%d writes of sales/{id}, %d of them committed 0.7 s late", len(writes), late)
}
