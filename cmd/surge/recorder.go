package main

import (
	"fmt"
	"maps"
	"sync"
)

// recorder is what a simulation was told, for its report: every answer or
// verdict counted by its key, and the first few errors. The people's
// simulation (sim: "HoldSeats 409 seat_held", ...) and the door's (doorSim:
// "admitted (offline)", ...) record through it.
type recorder struct {
	mu     sync.Mutex
	tally  map[string]int
	errors []string // the first maxErrors
}

// maxErrors is how many errors a report keeps.
const maxErrors = 20

func newRecorder() *recorder { return &recorder{tally: map[string]int{}} }

// note counts one answer or verdict.
func (r *recorder) note(key string) {
	r.mu.Lock()
	r.tally[key]++
	r.mu.Unlock()
}

// fail records an error, if fewer than maxErrors are kept.
func (r *recorder) fail(format string, args ...any) {
	r.mu.Lock()
	if len(r.errors) < maxErrors {
		r.errors = append(r.errors, fmt.Sprintf(format, args...))
	}
	r.mu.Unlock()
}

// counts is a copy of the tally so far (for progress lines while the
// simulation runs; its report reads the tally once it is over).
func (r *recorder) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.tally)
}
