package report

import (
	"time"

	"github.com/firelock/firelock/booking"
)

// Minute is one minute of a sale, labelled by its start: what happened in
// it (counts), and the levels at its end. It is derived from the same
// places, holds, bookings and log as every other figure of the report, so
// the minutes add up to the summary: the joins to the people who joined,
// the admissions to those admitted.
type Minute struct {
	Start time.Time `json:"start"`
	// Counts within the minute.
	Joins      int `json:"joins"`
	Admissions int `json:"admissions"`
	Expired    int `json:"expired"` // passes that ran out
	Revoked    int `json:"revoked"` // places and passes revoked
	Holds      int `json:"holds"`
	Bookings   int `json:"bookings"`
	// Levels at the minute's end (at the report's end, for the last).
	Waiting   int `json:"waiting"`
	Active    int `json:"active"`
	SeatsHeld int `json:"seatsHeld"`
	SeatsSold int `json:"seatsSold"`
	SeatsLeft int `json:"seatsLeft"`
	// Paused: the sale was paused at some time in the minute.
	Paused bool `json:"paused"`
	// Revenue and Refunds: the money that came in and went back within
	// the minute (CONTRACT §10), in the currency's smallest unit.
	Revenue int64 `json:"revenue"`
	Refunds int64 `json:"refunds"`
}

// holdEnd is when a hold stopped holding its seats: its confirmation's
// booking, its release, or heldUntil.
func holdEnd(h Hold, bookings map[string]Booking) time.Time {
	switch h.Status {
	case booking.StatusOK:
		if b, ok := bookings[h.BookingID]; ok {
			return b.CreatedAt
		}
	case booking.StatusReleased:
		return earlier(h.Updated, h.HeldUntil)
	}
	return h.HeldUntil
}

// minutes cuts the sale into minutes, from the minute of its first
// record (a join, a log entry, a hold or booking) to the end of the
// report at now: now itself while the sale runs, else its last record.
func (st *Sale) minutes(story story, now time.Time) []Minute {
	byID := map[string]Booking{}
	for _, b := range st.Bookings {
		byID[b.ID] = b
	}
	var first, last time.Time
	seen := func(t time.Time) {
		if t.IsZero() || t.After(now) {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		last = later(last, t)
	}
	type pass struct {
		start, end time.Time // end zero: live
		how        passEnding
	}
	var passes []pass
	for _, p := range st.Places {
		seen(p.JoinedAt)
		seen(p.LeftLine())
		if p.AdmittedAt == nil {
			continue
		}
		seen(*p.AdmittedAt)
		how, end := st.ending(p, now)
		seen(end)
		passes = append(passes, pass{*p.AdmittedAt, end, how})
	}
	for _, h := range st.Holds {
		seen(h.CreatedAt)
		seen(holdEnd(h, byID))
	}
	for _, b := range st.Bookings {
		seen(b.CreatedAt)
		if b.Status == booking.StatusCanceled {
			seen(b.Updated)
		}
	}
	for _, e := range st.Log {
		seen(e.At)
	}
	for _, p := range st.Payments {
		if p.PaidAt != nil {
			seen(*p.PaidAt)
		}
		if p.RefundedAt != nil {
			seen(*p.RefundedAt)
		}
	}
	if first.IsZero() {
		return nil
	}
	end := last
	if !story.end.Before(now) { // still running: up to now
		end = now
	}
	var out []Minute
	in := func(t, from, to time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
	before := func(t, at time.Time) bool { return !t.IsZero() && t.Before(at) }
	for start := first.Truncate(time.Minute); ; start = start.Add(time.Minute) {
		to := start.Add(time.Minute)
		at := earlier(to, end) // the levels' moment
		m := Minute{Start: start, Paused: story.pausedWithin(start, to) > 0}
		for _, p := range st.Places {
			left := p.LeftLine()
			if in(p.JoinedAt, start, to) {
				m.Joins++
			}
			if in(left, start, to) || (p.AdmittedAt != nil && p.RevokedAt != nil && in(*p.RevokedAt, start, to)) {
				m.Revoked++
			}
			if p.JoinedAt.Before(at) && (p.AdmittedAt == nil || !p.AdmittedAt.Before(at)) && !before(left, at) {
				m.Waiting++
			}
		}
		for _, p := range passes {
			if in(p.start, start, to) {
				m.Admissions++
			}
			if p.how == passRanOut && in(p.end, start, to) {
				m.Expired++
			}
			if p.start.Before(at) && !before(p.end, at) {
				m.Active++
			}
		}
		for _, h := range st.Holds {
			if in(h.CreatedAt, start, to) {
				m.Holds++
			}
			if h.CreatedAt.Before(at) && !holdEnd(h, byID).Before(at) {
				m.SeatsHeld += len(h.Seats)
			}
		}
		for _, b := range st.Bookings {
			if in(b.CreatedAt, start, to) {
				m.Bookings++
			}
			if b.CreatedAt.Before(at) && (b.Status != booking.StatusCanceled || !b.Updated.Before(at)) {
				m.SeatsSold += len(b.Seats)
			}
		}
		for _, p := range st.Payments {
			if p.PaidAt != nil && in(*p.PaidAt, start, to) {
				m.Revenue += p.Amount
			}
			if p.RefundedAt != nil && in(*p.RefundedAt, start, to) {
				m.Refunds += p.Amount
			}
		}
		m.SeatsLeft = max(0, len(st.Hall)-m.SeatsHeld-m.SeatsSold)
		out = append(out, m)
		if !to.Before(end) {
			break
		}
	}
	return out
}
