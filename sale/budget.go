package sale

import (
	"slices"
	"time"

	"cloud.google.com/go/firestore"
)

// A writeBudget keeps one document of the admitter's to at most n writes
// in any window: CONTRACT §7's "no document takes more than about 1 write
// per second, sustained" (issue #48.10: a 2,000-user surge wrote
// saleStates 11 times in 10 s, the ticks and the wake-ups of one admitter
// together). It counts the commits themselves, by Firestore's clock: the
// document carries the commit times of its writes before the last
// (writes), and its update time is the last, so whoever writes it next,
// this run or the admitter that takes the sale over, knows them all.
type writeBudget struct {
	n      int
	window time.Duration
}

// defaultWriteBudget: at most 10 writes in any 10 s per document. A
// sale's normal rhythm, a step a second, is not held back by it (one write
// in any second would hold a due admission back up to a second: the
// opening's first admission came 1.9-2.2 s after opensAt, against the
// contract's 2 s, where it comes in 1.1-1.2 s); only wake-ups beyond a
// write a second, sustained, wait for the window.
var defaultWriteBudget = writeBudget{n: 10, window: 10 * time.Second}

// commits are the commit times of the document's latest writes, oldest
// first: the stored ones and, if it exists, its update time.
func commits(writes []time.Time, snap *firestore.DocumentSnapshot) []time.Time {
	k := slices.Clone(writes)
	if snap != nil && snap.Exists() {
		k = append(k, snap.UpdateTime)
	}
	return k
}

// from is when the document, as read in a transaction (snap, whose stored
// history is writes), may take its next write: a write decided at
// Firestore time now commits after now, so it keeps the budget if the
// n-th latest commit lies a window or more before now. Zero: at once.
func (b writeBudget) from(writes []time.Time, snap *firestore.DocumentSnapshot) time.Time {
	k := commits(writes, snap)
	if len(k) < b.n {
		return time.Time{}
	}
	return k[len(k)-b.n].Add(b.window)
}

// allows: the document may be written at Firestore time now.
func (b writeBudget) allows(writes []time.Time, snap *firestore.DocumentSnapshot, now time.Time) bool {
	return !now.Before(b.from(writes, snap))
}

// after is the history to store with a write of the document read as
// snap: the commit times of the n-1 writes before it (its own commit is
// its update time).
func (b writeBudget) after(writes []time.Time, snap *firestore.DocumentSnapshot) []time.Time {
	k := commits(writes, snap)
	return k[max(0, len(k)-(b.n-1)):]
}
