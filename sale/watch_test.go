package sale

import (
	"context"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// watchWrites listens to ref until ctx ends; the returned function gives
// every write of it seen so far, in order (one snapshot a commit: a resent
// snapshot of the same write is not a write).
func watchWrites(ctx context.Context, ref *firestore.DocumentRef) func() []*firestore.DocumentSnapshot {
	var mu sync.Mutex
	var seen []*firestore.DocumentSnapshot
	it := ref.Snapshots(ctx)
	go func() {
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				return
			}
			mu.Lock()
			if n := len(seen); snap.Exists() && (n == 0 || !seen[n-1].UpdateTime.Equal(snap.UpdateTime)) {
				seen = append(seen, snap)
			}
			mu.Unlock()
		}
	}()
	return func() []*firestore.DocumentSnapshot {
		mu.Lock()
		defer mu.Unlock()
		return append([]*firestore.DocumentSnapshot(nil), seen...)
	}
}

// publication is one write of sales/{id} as a listener saw it: its commit
// time and what it said.
type publication struct {
	at time.Time
	Public
}

// watchPublications listens to sales/{id} until ctx ends; the returned
// function gives every write seen so far, in order.
func (e *env) watchPublications(ctx context.Context) func() []publication {
	writes := watchWrites(ctx, e.fs.Collection(Sales).Doc(e.id))
	return func() []publication {
		var out []publication
		for _, snap := range writes() {
			var p Public
			if snap.DataTo(&p) == nil {
				out = append(out, publication{snap.UpdateTime, p})
			}
		}
		return out
	}
}

// watchPublic is watchPublications without the commit times.
func (e *env) watchPublic(ctx context.Context) func() []Public {
	pubs := e.watchPublications(ctx)
	return func() []Public {
		var out []Public
		for _, p := range pubs() {
			out = append(out, p.Public)
		}
		return out
	}
}

// flapLastSeat holds and frees seat A1 every period until until, so that
// seatsLeft flips between 0 and 1 (the sale's other seat, A2, held).
func (e *env) flapLastSeat(until time.Time, period time.Duration) {
	for i := 0; time.Now().Before(until); i++ {
		if i%2 == 0 {
			e.setSeat("A1", booking.StatusHeld, time.Now().Add(time.Hour))
		} else {
			e.setSeat("A1", "", time.Time{})
		}
		time.Sleep(period)
	}
}

// secondApart fails t for every two writes of sales/{id} less than
// publishEvery apart by their commit times (CONTRACT §7: at most once per
// second).
func secondApart(t *testing.T, pubs []publication) {
	t.Helper()
	for i := 1; i < len(pubs); i++ {
		if gap := pubs[i].at.Sub(pubs[i-1].at); gap < publishEvery {
			t.Errorf("sales/{id} written twice %v apart at %v", gap, pubs[i].at.UTC().Format(time.TimeOnly+".000"))
		}
	}
}

// flips counts the publications whose seatsLeft is 0 where the one before
// it was not, or the other way round.
func flips(pubs []publication) int {
	n := 0
	for i := 1; i < len(pubs); i++ {
		if (pubs[i].SeatsLeft == 0) != (pubs[i-1].SeatsLeft == 0) {
			n++
		}
	}
	return n
}
