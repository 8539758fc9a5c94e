package jobs

import (
	"sync/atomic"
	"testing"
)

// PlantNoKeepAlive runs job bodies without keeping their lease alive until
// tb ends: a bug for a negative control.
func PlantNoKeepAlive(tb testing.TB) { plant(tb, &plantNoKeepAlive) }

// PlantUnguardedMark settles runs (writes the done mark) without Guard
// until tb ends: a bug for a negative control.
func PlantUnguardedMark(tb testing.TB) { plant(tb, &plantUnguardedMark) }

func plant(tb testing.TB, bug *atomic.Bool) {
	bug.Store(true)
	tb.Cleanup(func() { bug.Store(false) })
}
