package sale

import (
	"fmt"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

// The seat map's publisher keeps its listener's recent states only as long
// as a count can need them, whether or not the counts come: when the
// admitter's steps fail before they count (a store fault on the rank, the
// counter or one of the count's seven queries, tried again every tick
// while the run keeps its lease), the states must not pile up with every
// snapshot for as long as the run lasts, each with every hold's end. An
// hour of snapshots ten a second, 500 seats held, one count at the start
// still waiting to be judged; no emulator: the states are made here.
func TestTheSeatMapForgetsItsStatesWhenTheCountsStop(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	p := &seatMapPublisher{seats: map[string]seatSeen{}}
	for i := range 500 {
		p.seats[fmt.Sprintf("S%d", i)] = seatSeen{status: booking.StatusHeld, heldUntil: t0.Add(time.Hour)}
	}
	p.level(t0)
	// One count, not yet judged (its window is still open) when the
	// steps start failing.
	p.check(seatCheck{sent: t0, answered: t0.Add(100 * time.Millisecond), at: t0, booked: 0, held: 500}, t0.Add(100*time.Millisecond))
	const every = 100 * time.Millisecond
	most := 0
	for now := t0.Add(every); now.Before(t0.Add(time.Hour)); now = now.Add(every) {
		p.level(now)
		most = max(most, len(p.levels))
	}
	// A count is judged seatMapLag after its answer and comes a step or so
	// later: ten seconds of states is all it can need, a minute at most for
	// one that waits.
	if bound := int((seatMapRefresh + 10*time.Second) / every); len(p.levels) > bound || most > bound {
		t.Errorf("after an hour without counts the publisher keeps %d states (at most %d at once), each with %d holds' ends; want at most %d",
			len(p.levels), most, len(p.levels[len(p.levels)-1].until), bound)
	}
}
