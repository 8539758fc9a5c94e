package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every kind of document whose hottest took more writes in 10 s than the
// goal is flagged, the sale's admission state as much as a seat (issue
// #48.10: saleStates took 11 while another document was the hottest of
// all), and the text marks each kind's line. With every kind within the
// goal, none is.
func TestEveryKindOverTheHotWriteGoalIsFlagged(t *testing.T) {
	cfg := defaults()
	hot := func(states, seat int) *Report {
		r := &Report{Config: cfg,
			HottestDoc: "screenings/surge/seats/A1", HottestDocWritesPer10s: max(states, seat),
			HottestByKind: []hotDoc{
				{Kind: kindOf("screenings/surge/seats/A1"), Doc: "screenings/surge/seats/A1", WritesPer10s: seat, Writes: 40},
				{Kind: kindOf("saleStates/surge"), Doc: "saleStates/surge", WritesPer10s: states, Writes: 300},
			}}
		r.judge(cfg.Goals)
		return r
	}
	flagged := func(r *Report, doc string) bool {
		for _, f := range failuresOf(r, "goal") {
			if strings.HasPrefix(f.What, doc+" took") {
				return true
			}
		}
		return false
	}
	over := hot(11, 12)
	if !flagged(over, "saleStates/surge") || !flagged(over, "screenings/surge/seats/A1") {
		t.Fatalf("saleStates at 11 and a seat at 12 in 10 s (goal %d): flagged %+v", cfg.Goals.HotWritesPer10s, failuresOf(over, "goal"))
	}
	var text bytes.Buffer
	over.print(&text)
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.Contains(line, "saleStates/surge") && strings.Contains(line, "writes in all") && !strings.HasSuffix(line, "FAIL") {
			t.Fatalf("the text does not mark saleStates over the goal: %q", line)
		}
	}
	if within := hot(10, 7); flagged(within, "saleStates/surge") || flagged(within, "screenings/surge/seats/A1") {
		t.Fatalf("every kind within the goal, flagged %+v", failuresOf(within, "goal"))
	}
}
