package sale

import (
	"fmt"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// The seat map's publisher keeps its listener's recent changes only as
// long as a count can need them, whether or not the counts come: when the
// admitter's steps fail before they count (a store fault on the rank, the
// counter or one of the count's seven queries, tried again every tick
// while the run keeps its lease), the changes must not pile up with every
// snapshot for as long as the run lasts. An hour of snapshots ten a
// second, each extending one of 500 holds, one count at the start still
// waiting to be judged; no emulator: the changes are made here.
func TestTheSeatMapForgetsItsStatesWhenTheCountsStop(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	p := &seatMapPublisher{seats: map[string]seatSeen{}, since: t0, readTime: t0}
	for i := range 500 {
		p.seats[fmt.Sprintf("S%d", i)] = seatSeen{status: booking.StatusHeld, heldUntil: t0.Add(time.Hour), at: t0}
	}
	// One count, not yet judged (the listener has not caught up with it)
	// when the steps start failing.
	p.check(seatCheck{answered: t0.Add(100 * time.Millisecond), at: t0, booked: 0, held: 500}, t0.Add(100*time.Millisecond))
	const every = 100 * time.Millisecond
	most, i := 0, 0
	for now := t0.Add(every); now.Before(t0.Add(time.Hour)); now = now.Add(every) {
		p.change(fmt.Sprintf("S%d", i%500), seatSeen{status: booking.StatusHeld, heldUntil: now.Add(time.Hour), at: now.Add(-every / 2)}, true, now)
		p.took(now, now)
		most = max(most, len(p.history))
		i++
	}
	// A count is judged at most seatMapBehind after its answer and comes
	// a step or so after its read time: ten seconds of changes is all it
	// can need, a minute at most for one that waits.
	if bound := int((seatMapRefresh + 10*time.Second) / every); len(p.history) > bound || most > bound {
		t.Errorf("after an hour without counts the publisher keeps %d changes (at most %d at once); want at most %d",
			len(p.history), most, bound)
	}
	t.Logf("kept %d changes at the end, %d at most", len(p.history), most)
}
