package sale

import (
	"context"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// A page whose seat map waits while nothing is free learns from SaleState
// when a seat comes free (issue #51), so seatsLeft leaving nothing, and
// reaching it, goes out like a change of state (within publishEvery of the
// last publication), not with the numbers (numbersEvery): a freed seat
// reaches those pages about a second later, not five, or twenty at
// 200,000 people.
func TestSeatsLeftLeavingAndReachingNothingGoOutAtOnce(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	e.join("u1")
	e.join("u2") // someone waits: the sale stays busy, and open
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	published := e.watchPublic(ctx)
	ran := make(chan error, 1)
	a := e.admitter()
	go func() { ran <- a.Run(ctx, time.Now().Add(25*time.Second)) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}()
	// waitFor returns the first publication after from that shows
	// seatsLeft left, and the one before it.
	waitFor := func(left int64, from int) (Public, Public, int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			seen := published()
			for i := max(from, 1); i < len(seen); i++ {
				if seen[i].SeatsLeft == left && seen[i].State == StateOpen {
					return seen[i-1], seen[i], i
				}
			}
		}
		t.Fatalf("no publication with seatsLeft %d in 15 s: %+v", left, published())
		return Public{}, Public{}, 0
	}

	_, _, i := waitFor(2, 0)
	e.setSeat("A1", booking.StatusHeld, time.Now().Add(time.Hour))
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	_, full, i := waitFor(0, i+1)
	// The seat comes free half a second after nothing was left was
	// published: the numbers alone would wait until numbersEvery after it.
	time.Sleep(time.Until(full.UpdatedAt.Add(500 * time.Millisecond)))
	e.setSeat("A1", "", time.Time{})
	before, freed, i := waitFor(1, i+1)
	if gap := freed.UpdatedAt.Sub(before.UpdatedAt); gap > numbersEvery-2*time.Second {
		t.Errorf("seatsLeft 0 → 1 went out %v after the last publication, want about publishEvery (%v), not numbersEvery (%v)", gap, publishEvery, numbersEvery)
	}
	// And the last seat taken again, half a second later: nothing left.
	time.Sleep(time.Until(freed.UpdatedAt.Add(500 * time.Millisecond)))
	e.setSeat("A1", booking.StatusHeld, time.Now().Add(time.Hour))
	before, full, _ = waitFor(0, i+1)
	if gap := full.UpdatedAt.Sub(before.UpdatedAt); gap > numbersEvery-2*time.Second {
		t.Errorf("seatsLeft 1 → 0 went out %v after the last publication, want about publishEvery (%v), not numbersEvery (%v)", gap, publishEvery, numbersEvery)
	}
}
