package sale

import (
	"context"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
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
	var mu sync.Mutex
	writes := map[string][]time.Time{}
	var seen []Public
	watch := func(ref *firestore.DocumentRef) {
		it := ref.Snapshots(ctx)
		go func() {
			defer it.Stop()
			for {
				snap, err := it.Next()
				if err != nil {
					return
				}
				if snap.Exists() {
					mu.Lock()
					k := ref.Path
					if n := len(writes[k]); n == 0 || !writes[k][n-1].Equal(snap.UpdateTime) {
						writes[k] = append(writes[k], snap.UpdateTime)
						if ref.Parent.ID == Sales {
							var p Public
							if snap.DataTo(&p) == nil {
								seen = append(seen, p)
							}
						}
					}
					mu.Unlock()
				}
			}
		}()
	}
	salesRef, statesRef := e.fs.Collection(Sales).Doc(e.id), e.fs.Collection(States).Doc(e.id)
	watch(salesRef)
	watch(statesRef)
	ran := make(chan error, 1)
	a := e.admitter()
	go func() { ran <- a.Run(ctx, time.Now().Add(40*time.Second)) }()
	time.Sleep(4 * time.Second)
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	start := time.Now()
	for i := 0; time.Since(start) < 25*time.Second; i++ {
		if i%2 == 0 {
			e.setSeat("A1", booking.StatusHeld, time.Now().Add(time.Hour))
		} else {
			e.setSeat("A1", "", time.Time{})
		}
		time.Sleep(350 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil && ctx.Err() == nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sales, states := writes[salesRef.Path], writes[statesRef.Path]
	var zeros, flips int
	for i, p := range seen {
		if p.SeatsLeft == 0 {
			zeros++
		}
		if i > 0 && (p.SeatsLeft == 0) != (seen[i-1].SeatsLeft == 0) {
			flips++
		}
	}
	t.Logf("sales/{id}: %d writes (%d flips of seatsLeft 0); saleStates/{id}: %d writes", len(sales), flips, len(states))
	// The flapping must reach sales/{id}, or the budgets are not tested;
	// about 20 flips on a quiet machine, 9 beside make test's other
	// packages (its steps come slower).
	if flips < 4 {
		t.Errorf("only %d flips of seatsLeft 0 published: the flapping did not reach sales/{id}", flips)
	}
	for i := 1; i < len(sales); i++ {
		if gap := sales[i].Sub(sales[i-1]); gap < 900*time.Millisecond {
			t.Errorf("sales/{id} written twice %v apart at %v", gap, sales[i].UTC().Format(time.TimeOnly+".000"))
		}
	}
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
	if n, at := in(states, 10*time.Second); n > 10 {
		t.Errorf("saleStates/{id} took %d writes in 10 s from %v", n, at.UTC().Format(time.TimeOnly+".000"))
	}
	if n, at := in(sales, 10*time.Second); n > 11 {
		t.Errorf("sales/{id} took %d writes in 10 s from %v", n, at.UTC().Format(time.TimeOnly+".000"))
	}
}
