package main

import (
	"strings"
	"testing"

	"github.com/firelock/firelock/functions"
)

// The fit check decides from the need and RLIMIT_NOFILE alone: under the
// soft limit it runs, under the hard one it raises the soft limit first,
// above both it refuses, naming the need, the limits and what to change.
func TestDescriptorFit(t *testing.T) {
	for _, c := range []struct {
		name       string
		need       int
		soft, hard uint64
		raise, ok  bool
	}{
		{"fits under the soft limit", 1000, 1024, 4096, false, true},
		{"exactly the soft limit", 1024, 1024, 4096, false, true},
		{"fits once raised to the hard limit", 3000, 1024, 4096, true, true},
		{"exactly the hard limit", 4096, 1024, 4096, true, true},
		{"does not fit", 4097, 1024, 4096, false, false},
		{"does not fit, soft = hard", 20001, 20000, 20000, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := fitDescriptors(c.need, c.soft, c.hard)
			if (err == nil) != c.ok || f.Raise != c.raise {
				t.Fatalf("fitDescriptors(%d, %d, %d) = raise %v, %v; want raise %v, ok %v", c.need, c.soft, c.hard, f.Raise, err, c.raise, c.ok)
			}
			if err != nil {
				for _, want := range []string{"-max-conns", "ulimit -n"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the refusal %q does not say %q", err, want)
					}
				}
			}
		})
	}
}

// Both ends of every user connection are in the process: the need grows
// by two descriptors a connection to each function, and the ten-times
// crowd at its default bound fits well under the 20,000 of issue #41,
// where 10,000 unbounded connections (20,000 descriptors and more) could
// not.
func TestDescriptorsNeededCountsBothEnds(t *testing.T) {
	cfg := defaults()
	base := descriptorsNeeded(cfg)
	cfg.MaxConns += 100
	if got, want := descriptorsNeeded(cfg)-base, 200*len(functions.HTTPFunctions); got != want {
		t.Errorf("100 more connections to each function need %d more descriptors, want %d", got, want)
	}
	cfg = defaults()
	cfg.Early, cfg.Late, cfg.Seats = 5000, 5000, 1000
	if _, err := fitDescriptors(descriptorsNeeded(cfg), 20000, 20000); err != nil {
		t.Errorf("the ten-times surge at the defaults: %v", err)
	}
	cfg.MaxConns = 1000
	if _, err := fitDescriptors(descriptorsNeeded(cfg), 20000, 20000); err == nil {
		t.Errorf("1,000 connections to each of %d functions fit under 20,000 descriptors; both ends are in this process", len(functions.HTTPFunctions))
	}
}
