package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/report"
	"github.com/firelock/firelock/sale"
)

// TestAheadOfAsTheApp pins the port of the app's aheadOf
// (web/src/app/queue.ts) to the cases of web/test/queue.test.ts, and the
// case behind issue #51's missed peak: a sale with no marks and nothing
// admitted puts every place at the front.
func TestAheadOfAsTheApp(t *testing.T) {
	early := func(draw string) string { return "0" + draw + strings.Repeat("0", 32-len(draw)) }
	later := func(us int) string { return fmt.Sprintf("1%017d", us) + "abcdefabcdef" }
	tail := func(us int) string { return fmt.Sprintf("1%017d", us) + "~" }
	st := func(through string, marks ...sale.Mark) *publicState {
		return &publicState{Waiting: 1 << 40, AdmittedThrough: through, Marks: marks}
	}
	for _, c := range []struct {
		name  string
		order string
		st    *publicState
		want  int64
		known bool
	}{
		{"no order", "", st(""), 0, false},
		{"at admittedThrough", early("4"), st(early("4"), sale.Mark{Order: early("8"), Ahead: 40}), 0, true},
		{"at a mark", early("8"), st("", sale.Mark{Order: early("4"), Ahead: 10}, sale.Mark{Order: early("8"), Ahead: 20}), 20, true},
		{"between marks", early("6"), st("", sale.Mark{Order: early("8"), Ahead: 30}, sale.Mark{Order: early("4"), Ahead: 10}), 20, true},
		{"between later marks", later(2_000_000), st("", sale.Mark{Order: tail(1_000_000), Ahead: 100}, sale.Mark{Order: tail(6_000_000), Ahead: 200}), 120, true},
		{"before the first mark", early("2"), st("", sale.Mark{Order: early("4"), Ahead: 10}), 5, true},
		{"past the last mark", later(9_000_000), st("", sale.Mark{Order: early("4"), Ahead: 10}, sale.Mark{Order: tail(5_000_000), Ahead: 45}), 45, true},
		{"no marks, nobody admitted: at the front", later(9_000_000), st(""), 0, true},
	} {
		got, known := aheadOf(c.order, c.st)
		if got != c.want || known != c.known {
			t.Errorf("%s: aheadOf = %d, %v; want %d, %v", c.name, got, known, c.want, c.known)
		}
	}
}

// The simulated people spread their reads of a place without its order as
// the app does (salestate.test.ts' placeReadDelayMs cases).
func TestPlaceReadDelayAsTheApp(t *testing.T) {
	for _, c := range []struct {
		waiting int64
		attempt int
		random  float64
		want    time.Duration
	}{
		{5000, 0, 0, 0},
		{5000, 0, 0.999, 9990 * time.Millisecond},
		{200, 0, 0.5, 500 * time.Millisecond},
		{5000, 1, 0, 10 * time.Second},
		{5000, 1, 0.999, 19990 * time.Millisecond},
		{5000, 2, 0, 15 * time.Second},
		{100, 1, 0, time.Second},
	} {
		if got := placeReadDelay(c.waiting, c.attempt, c.random); got.Round(time.Millisecond) != c.want {
			t.Errorf("placeReadDelay(%d, %d, %v) = %v, want %v", c.waiting, c.attempt, c.random, got, c.want)
		}
	}
	if got := placeReadDelay(1_000_000, 0, 0.999); got >= maxPollEvery {
		t.Errorf("a line of a million: the first read after %v, want under %v", got, maxPollEvery)
	}
}

// TestSeatMapIdleAsTheApp pins the port of the app's seatMapIdle
// (web/src/app/salestate.ts) to the cases of web/test/salestate.test.ts:
// the map pauses only while it shows nothing free and an open (or
// operator-paused) sale's SaleState says no seat is left.
func TestSeatMapIdleAsTheApp(t *testing.T) {
	hall := []string{"A1", "A2", "A3", "A4"}
	mapOf := func(seats string) *seatMap {
		m := &seatMap{seats: map[string]report.Seat{}}
		for i, ch := range []byte(seats) {
			switch ch {
			case sale.SeatBooked:
				m.seats[hall[i]] = report.Seat{Status: booking.StatusBooked}
			case sale.SeatHeld:
				m.seats[hall[i]] = report.Seat{Status: booking.StatusHeld, HeldUntil: farFuture}
			}
		}
		return m
	}
	open0 := &publicState{State: sale.StateOpen, SeatsLeft: 0}
	for _, c := range []struct {
		name  string
		seats string
		st    *publicState
		want  bool
	}{
		{"held and booked, none left", "hhbb", open0, true},
		{"all held, none left", "hhhh", open0, true},
		{"a seat free first", ".hbb", open0, false},
		{"a seat free last", "hhb.", open0, false},
		{"a seat not written yet", "hhb", open0, false},
		{"a seat left by SaleState", "hhbb", &publicState{State: sale.StateOpen, SeatsLeft: 1}, false},
		{"paused by an operator, none left", "hhbb", &publicState{State: sale.StatePaused, SeatsLeft: 0}, true},
		{"paused by an operator, a seat left", "hhbb", &publicState{State: sale.StatePaused, SeatsLeft: 1}, false},
		{"scheduled", "hhbb", &publicState{State: sale.StateScheduled}, false},
		{"sold out", "bbbb", &publicState{State: sale.StateSoldOut}, false},
		{"no state polled yet", "hhbb", nil, false},
	} {
		if got := mapOf(c.seats).idle(hall, c.st); got != c.want {
			t.Errorf("%s: idle(%q, %+v) = %v, want %v", c.name, c.seats, c.st, got, c.want)
		}
	}
	if (&seatMap{seats: map[string]report.Seat{}}).idle(nil, open0) {
		t.Error("no hall: idle, want not")
	}
}
