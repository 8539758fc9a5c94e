package main

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/report"
)

// Best available (CONTRACT §11, issue #39). With -best an admitted shopper
// asks HoldSeats for count seats (PickMin..PickMax, together) and the
// server chooses them, instead of picking seats off the map. It asks for
// what its map shows, as a picker picks up to its number of the seats its
// map shows free: its number together if the map has them, else apart, else
// the seats left. Told 409 no_seats_together (the map lags), it does the
// same with what the answer says is left. Either mode reports
// the figures the two are compared by: HoldSeats' 409s per seat sold, its
// p99 in the burst, and the seats left stranded as singles at the end; the
// best mode also checks every no_seats_together against what Firestore held
// over the call: a block of the asked size free all along is a miss.

// noSeatsAnswer is one 409 no_seats_together a shopper was answered.
type noSeatsAnswer struct {
	count          int
	together       bool
	sent, answered time.Time
}

// noSeatsLog keeps them all.
type noSeatsLog struct {
	mu  sync.Mutex
	all []noSeatsAnswer
}

func (l *noSeatsLog) add(a noSeatsAnswer) {
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
}

// holdBest is a -best shopper's try for a hold: it returns the hold, or no
// hold and the outcome that ended the try. Like a picker, who picks up to
// its number of the seats its map shows free, it asks for what its map
// shows: its number together if they are, else apart, else the seats left;
// with none free it waits for the map to change.
func (s *sim) holdBest(u *user, passUntil time.Time, m *seatMap, want int) (heldRecord, string) {
	together, reacted := true, false
	for tries := 0; ; {
		switch {
		case tries >= s.cfg.HoldTries:
			return heldRecord{}, "gave up"
		case !time.Now().Before(passUntil):
			return heldRecord{}, "pass ended"
		case s.stopping():
			return heldRecord{}, "shopping at the end"
		}
		h := m.hall(s)
		switch free := h.FreeSeats(); {
		case free > 0 && free < want: // fewer left than wanted: those
			want = free
		case free >= want && booking.Best(h, nil, want, true) == nil: // enough, but not together
			together = false
		}
		if booking.Best(h, nil, want, together) == nil {
			m.waitChange(passUntil, s.stop)
			reacted = false
			continue
		}
		if !reacted {
			// A person takes a moment to act on what the map shows
			// (react), and asks for what it shows then.
			reacted = true
			if d := s.react(u); d > 0 {
				s.sleep(min(d, max(time.Until(passUntil), 0)))
				continue // seen afresh, and the pass and the run checked
			}
		}
		reacted = false
		body := map[string]any{"screeningId": s.screening, "count": want,
			"requestId": fmt.Sprintf("surge-%d-best-%d", u.i, tries), "holdSeconds": s.cfg.HoldSeconds}
		if !together {
			body["together"] = false
		}
		select { // a change from now on is one the answer may not know
		case <-m.changed:
		default:
		}
		sent := time.Now()
		a, err := s.call("HoldSeats", u, body)
		switch {
		case err != nil:
			s.fail("user %d: HoldSeats: %v", u.i, err)
			return heldRecord{}, "hold failed"
		case a.status == http.StatusCreated || a.status == http.StatusOK:
			until, _ := time.Parse(time.RFC3339Nano, a.str("heldUntil"))
			return heldRecord{ID: a.str("holdId"), UID: u.acct.uid, Seats: a.seats(), HeldUntil: until}, ""
		case a.status == http.StatusConflict && a.code() == "no_seats_together":
			s.noSeats.add(noSeatsAnswer{count: want, together: together, sent: sent, answered: time.Now()})
			tries++
			e, _ := a.body["error"].(map[string]any)
			left, _ := e["seatsLeft"].(float64)
			switch {
			case left >= float64(want):
				together = false
			case left >= 1:
				want = int(left)
			default:
				// None left, though the map (a second behind) showed some:
				// asking again before the map changes would get the same
				// answer. A person would wait for the map to show a seat
				// come free, too.
				m.waitChange(passUntil, s.stop)
			}
		default:
			return heldRecord{}, "hold " + a.code()
		}
	}
}

// waitChange waits for the map to change, the pass to end or the run to
// stop.
func (m *seatMap) waitChange(passUntil time.Time, stop <-chan struct{}) {
	t := time.NewTimer(max(time.Until(passUntil), 10*time.Millisecond))
	defer t.Stop()
	select {
	case <-m.changed:
	case <-t.C:
	case <-stop:
	}
}

// hall is the map as a best-available choice sees it: a seat is free
// unless the map shows it booked or held.
func (m *seatMap) hall(s *sim) booking.Hall {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := booking.Hall{Rows: s.rows(), SeatsPerRow: s.cfg.SeatsPerRow, Free: make([]bool, len(s.hall))}
	for i, id := range s.hall {
		_, taken := m.seats[id]
		h.Free[i] = !taken
	}
	return h
}

// bestFigures compare best available with seat picking (issue #39).
type bestFigures struct {
	Mode string `json:"mode"` // "best" or "pick"
	// HoldConflicts: HoldSeats' 409 answers (seat_held, seat_taken,
	// seat_busy when picking; no_seats_together for best available).
	HoldConflicts        int     `json:"holdConflicts"`
	ConflictsPerSeatSold float64 `json:"conflictsPerSeatSold"`
	HoldBurstP99ms       float64 `json:"holdBurstP99Ms"`
	// NoSeatsWhileFree: no_seats_together answers while a block of the size
	// asked for was free from the call's sending to its answer, by the
	// holds' and bookings' own times in Firestore.
	NoSeatsWhileFree int      `json:"noSeatsWhileFree"`
	NoSeatsAnswers   int      `json:"noSeatsAnswers"`
	NoSeatsExamples  []string `json:"noSeatsExamples,omitempty"`
	// Stranded: seats neither booked nor held at the end with no such seat
	// beside them in their row, and their share of the hall.
	Stranded      int     `json:"strandedAtEnd"`
	StrandedShare float64 `json:"strandedShare"`
}

// taken lists, by seat, the spans [from, to) it was held or booked, from
// the holds and bookings Firestore holds (to zero: still).
type taken map[string][][2]time.Time

func takenSpans(st *report.Sale) taken {
	byHold := map[string]report.Booking{}
	for _, b := range st.Bookings {
		if b.HoldID != "" {
			byHold[b.HoldID] = b
		}
	}
	out := taken{}
	for _, h := range st.Holds {
		for _, seat := range h.Seats {
			out[seat] = append(out[seat], [2]time.Time{h.CreatedAt, holdEnd(h, byHold)})
		}
	}
	for _, b := range st.Bookings {
		for _, seat := range b.Seats {
			out[seat] = append(out[seat], [2]time.Time{b.CreatedAt, bookingEnd(b)})
		}
	}
	return out
}

// freeThroughout: no span of the seat touches [from, to].
func (t taken) freeThroughout(seat string, from, to time.Time) bool {
	for _, s := range t[seat] {
		if s[0].Before(to) && (s[1].IsZero() || s[1].After(from)) {
			return false
		}
	}
	return true
}

// hallAt is the hall with the seats free at instant at.
func (t taken) hallAt(rows []string, perRow int, hall []string, at time.Time) booking.Hall {
	h := booking.Hall{Rows: rows, SeatsPerRow: perRow, Free: make([]bool, len(hall))}
	for i, seat := range hall {
		h.Free[i] = t.freeThroughout(seat, at, at)
	}
	return h
}

// missed says whether a no_seats_together was answered while a block of
// its size was free all along.
func (t taken) missed(a noSeatsAnswer, rows []string, perRow int, hall []string) bool {
	h := booking.Hall{Rows: rows, SeatsPerRow: perRow, Free: make([]bool, len(hall))}
	for i, seat := range hall {
		h.Free[i] = t.freeThroughout(seat, a.sent, a.answered)
	}
	return booking.Best(h, nil, a.count, a.together) != nil
}

func (s *sim) rows() []string {
	var rows []string
	for r := range len(s.hall) / s.cfg.SeatsPerRow {
		rows = append(rows, rowLabel(r))
	}
	return rows
}

// bestFiguresOf measures a run of either mode.
func bestFiguresOf(cfg config, st *report.Sale, s *sim, r *Report, end time.Time) bestFigures {
	f := bestFigures{Mode: "pick"}
	if cfg.Best {
		f.Mode = "best"
	}
	for k, n := range s.tally {
		if strings.HasPrefix(k, "HoldSeats 409") {
			f.HoldConflicts += n
		}
	}
	if r.SeatsSold > 0 {
		f.ConflictsPerSeatSold = math.Round(float64(f.HoldConflicts)/float64(r.SeatsSold)*100) / 100
	}
	for _, fn := range r.Functions {
		if fn.Name == "HoldSeats" {
			f.HoldBurstP99ms = fn.BurstP99ms
		}
	}
	spans := takenSpans(st)
	rows := s.rows()
	s.noSeats.mu.Lock()
	answers := s.noSeats.all
	s.noSeats.mu.Unlock()
	f.NoSeatsAnswers = len(answers)
	for _, a := range answers {
		if spans.missed(a, rows, cfg.SeatsPerRow, s.hall) {
			f.NoSeatsWhileFree++
			if len(f.NoSeatsExamples) < maxExamples {
				f.NoSeatsExamples = append(f.NoSeatsExamples, fmt.Sprintf("%d seats (together %v) refused %.1f-%.1f s after opensAt while a block was free",
					a.count, a.together, a.sent.Sub(st.OpensAt).Seconds(), a.answered.Sub(st.OpensAt).Seconds()))
			}
		}
	}
	h := spans.hallAt(rows, cfg.SeatsPerRow, s.hall, end)
	f.Stranded = len(h.Stranded())
	if len(s.hall) > 0 {
		f.StrandedShare = math.Round(float64(f.Stranded)/float64(len(s.hall))*10000) / 10000
	}
	return f
}

// judgeBest adds the best-available goals (judged with -best only).
func (r *Report) judgeBest(g goals, add func(kind, format string, args ...any)) {
	if !r.Config.Best {
		return
	}
	b := r.Best
	if b.NoSeatsWhileFree > 0 {
		add("goal", "%d of %d no_seats_together answers while a block of the size asked for was free (goal 0)", b.NoSeatsWhileFree, b.NoSeatsAnswers)
	}
	if g.HoldBurstP99 > 0 && b.HoldBurstP99ms > ms(g.HoldBurstP99) {
		add("goal", "HoldSeats' burst p99 %.0f ms (goal %s)", b.HoldBurstP99ms, g.HoldBurstP99)
	}
	if b.StrandedShare > g.StrandedShare {
		add("goal", "%d seats (%.1f%%) left stranded as singles at the end (goal %.1f%%)", b.Stranded, 100*b.StrandedShare, 100*g.StrandedShare)
	}
}

// printBest prints the comparison figures.
func (r *Report) printBest(p func(format string, args ...any)) {
	b := r.Best
	p("\nseats chosen by %s  HoldSeats 409s %d (%.2f per seat sold);  HoldSeats burst p99 %.0f ms;  stranded singles at the end %d (%.1f%%)",
		map[string]string{"best": "the server (best available)", "pick": "the shoppers (seat picking)"}[b.Mode],
		b.HoldConflicts, b.ConflictsPerSeatSold, b.HoldBurstP99ms, b.Stranded, 100*b.StrandedShare)
	if b.Mode == "best" {
		p("  no_seats_together answers %d, of them while a block of the size asked for was free all along %d", b.NoSeatsAnswers, b.NoSeatsWhileFree)
		for _, e := range b.NoSeatsExamples {
			p("  ! %s", e)
		}
	}
}
