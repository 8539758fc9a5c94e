package sale

import (
	"context"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// seatsLeft leaving or reaching 0 goes out like a change of state
// (issue #51). A buyer who holds and releases the last free seat over and
// over flips it every few hundred ms: sales/{id} must still take at most
// about a write a second, and saleStates/{id} at most 10 in any 10 s (the
// production budget). The admitter steps every 100 ms, so that publishEvery
// and the budget bound the writes, not the tick: at the production tick of
// 1 s this passed with both planted away (publishing each flip at once, no
// budget); at 100 ms that plant wrote sales/{id} 72 times, 0.24 s apart.
func TestSeatsLeftFlappingKeepsTheWriteBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	e.svc = New(e.fs, append(testOptions(e.log), WithTick(100*time.Millisecond, 300*time.Millisecond), WithWriteBudget(10, 10*time.Second))...)
	e.join("u1")
	e.join("u2")
	e.join("u3")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	states := watchWrites(ctx, e.fs.Collection(States).Doc(e.id))
	ran := make(chan error, 1)
	a := e.admitter()
	go func() { ran <- a.Run(ctx, time.Now().Add(40*time.Second)) }()
	time.Sleep(4 * time.Second)
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	e.flapLastSeat(time.Now().Add(25*time.Second), 350*time.Millisecond)
	cancel()
	if err := <-ran; err != nil && ctx.Err() == nil {
		t.Error(err)
	}
	pubs := seen()
	var sales, stateWrites []time.Time
	for _, p := range pubs {
		sales = append(sales, p.at)
	}
	for _, snap := range states() {
		stateWrites = append(stateWrites, snap.UpdateTime)
	}
	n := flips(pubs)
	t.Logf("sales/{id}: %d writes (%d flips of seatsLeft 0); saleStates/{id}: %d writes", len(sales), n, len(stateWrites))
	// The flapping must reach sales/{id}, or the budgets are not tested;
	// about 20 flips on a quiet machine, 9 beside make test's other
	// packages (its steps come slower).
	if n < 4 {
		t.Errorf("only %d flips of seatsLeft 0 published: the flapping did not reach sales/{id}", n)
	}
	secondApart(t, pubs)
	in := func(ts []time.Time, window time.Duration) (int, time.Time) {
		most, at := 0, time.Time{}
		for i := range ts {
			n := 0
			for j := i; j < len(ts) && ts[j].Sub(ts[i]) < window; j++ {
				n++
			}
			if n > most {
				most, at = n, ts[i]
			}
		}
		return most, at
	}
	if n, at := in(stateWrites, 10*time.Second); n > 10 {
		t.Errorf("saleStates/{id} took %d writes in 10 s from %v", n, at.UTC().Format(time.TimeOnly+".000"))
	}
	if n, at := in(sales, 10*time.Second); n > 11 {
		t.Errorf("sales/{id} took %d writes in 10 s from %v", n, at.UTC().Format(time.TimeOnly+".000"))
	}
}
