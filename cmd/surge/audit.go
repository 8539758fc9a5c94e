package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/report"
)

// clientRecords is what the users were told: every 201 hold and every
// 201 confirmation.
type clientRecords struct {
	Holds    []heldRecord
	Bookings []bookedRecord
}

type heldRecord struct {
	ID, UID   string
	Seats     []string
	HeldUntil time.Time
}

type bookedRecord struct {
	ID, HoldID, UID string
	Seats           []string
}

// correctness is the audit's verdict on what was sold.
type correctness struct {
	SeatsSold    int `json:"seatsSold"`
	DoubleBooked int `json:"doubleBooked"`
	LostHolds    int `json:"lostHolds"`
	LostBookings int `json:"lostBookings"` // a 201 confirmation with no such confirmed booking
	OverCap      int `json:"overCap"`      // users past maxSeatsPerUser at some instant
	WithoutPass  int `json:"withoutPass"`  // holds or bookings made without a live pass
	// AdmittedTwice: admissions the admitter recorded beyond the places
	// admitted (a place admitted twice counts twice there).
	AdmittedTwice int `json:"admittedTwice"`
	// The tickets-sold counter: its count against the seats sold, and its
	// shards against what the sale's rate needs (the admitter makes them).
	TicketsCounted      int64    `json:"ticketsCounted"`
	CounterShards       int      `json:"counterShards"`
	CounterShardsNeeded int      `json:"counterShardsNeeded"`
	Examples            []string `json:"correctnessExamples,omitempty"` // the first few violations, named
}

const maxExamples = 10

func (c *correctness) example(format string, args ...any) {
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// claim is a hold's or a booking's hold on a seat over [start, end): a
// confirmed hold and its booking are one claim. end zero: still held.
type claim struct {
	owner      string
	uid        string
	seats      int
	start, end time.Time
}

func (c claim) overlaps(o claim) bool {
	return (o.end.IsZero() || c.start.Before(o.end)) && (c.end.IsZero() || o.start.Before(c.end))
}

// bookingEnd is when a booking stopped holding its seats (zero: never).
func bookingEnd(b report.Booking) time.Time {
	if b.Status == booking.StatusCanceled {
		return b.Updated
	}
	return time.Time{}
}

// holdEnd is when a hold stopped holding its seats as a hold: its end, its
// release, or its confirmation (then its booking holds them on).
func holdEnd(h report.Hold, booked map[string]report.Booking) time.Time {
	switch h.Status {
	case "released":
		if h.Updated.Before(h.HeldUntil) {
			return h.Updated
		}
	case "confirmed":
		if b, ok := booked[h.ID]; ok {
			return b.CreatedAt
		}
	}
	return h.HeldUntil
}

// auditCorrectness checks what Firestore holds against what users were
// told: every seat sold once, every 201 hold kept its seats to its end,
// nobody past the seat cap, nothing held or booked without a live pass.
func auditCorrectness(st *report.Sale, cl clientRecords) correctness {
	var c correctness
	byHold := map[string]report.Booking{} // bookings made from holds, by hold
	for _, b := range st.Bookings {
		if b.HoldID != "" {
			byHold[b.HoldID] = b
		}
	}

	// Seats sold once: one confirmed booking per seat, and the seat names it.
	soldBy := map[string][]string{}
	for _, b := range st.Bookings {
		if b.Status != booking.StatusOK {
			continue
		}
		for _, s := range b.Seats {
			soldBy[s] = append(soldBy[s], b.ID)
		}
	}
	bad := map[string]bool{}
	for seat, bs := range soldBy {
		if len(bs) > 1 {
			bad[seat] = true
			c.example("seat %s sold to %d bookings: %v", seat, len(bs), bs)
		} else if d := st.Seats[seat]; d.Status != "booked" || d.BookingID != bs[0] {
			bad[seat] = true
			c.example("seat %s is sold to booking %s but its document says %s %s", seat, bs[0], d.Status, d.BookingID)
		}
	}
	for seat, d := range st.Seats {
		if d.Status == "booked" && len(soldBy[seat]) == 0 {
			bad[seat] = true
			c.example("seat %s is booked (booking %s) by no confirmed booking", seat, d.BookingID)
		}
	}
	c.DoubleBooked = len(bad)
	c.SeatsSold = len(soldBy) - len(bad)

	// Claims on each seat never overlap.
	claims := map[string][]claim{}
	holds := map[string]report.Hold{}
	for _, h := range st.Holds {
		holds[h.ID] = h
		end := holdEnd(h, byHold)
		if b, ok := byHold[h.ID]; ok && h.Status == "confirmed" {
			end = bookingEnd(b)
		}
		for _, s := range h.Seats {
			claims[s] = append(claims[s], claim{owner: "hold " + h.ID, start: h.CreatedAt, end: end})
		}
	}
	for _, b := range st.Bookings {
		if b.HoldID != "" {
			continue
		}
		for _, s := range b.Seats {
			claims[s] = append(claims[s], claim{owner: "booking " + b.ID, start: b.CreatedAt, end: bookingEnd(b)})
		}
	}
	lost := map[string]bool{}
	for seat, cs := range claims {
		for i := range cs {
			for j := i + 1; j < len(cs); j++ {
				if cs[i].overlaps(cs[j]) {
					lost[cs[i].owner], lost[cs[j].owner] = true, true
					c.example("seat %s: %s and %s overlap", seat, cs[i].owner, cs[j].owner)
				}
			}
		}
	}
	for _, h := range cl.Holds {
		got, ok := holds[h.ID]
		if !ok || got.UID != h.UID || !slices.Equal(slices.Sorted(slices.Values(got.Seats)), slices.Sorted(slices.Values(h.Seats))) {
			lost["hold "+h.ID] = true
			c.example("hold %s answered 201 for %v but Firestore holds %v", h.ID, h.Seats, got.Seats)
		}
	}
	c.LostHolds = len(lost)
	confirmed := map[string]report.Booking{}
	for _, b := range st.Bookings {
		confirmed[b.ID] = b
	}
	for _, b := range cl.Bookings {
		if got, ok := confirmed[b.ID]; !ok || got.Status != "confirmed" || got.UID != b.UID {
			c.LostBookings++
			c.example("booking %s answered 201 but Firestore holds %+v", b.ID, got)
		}
	}

	// The seat cap, at every instant: live holds and bookings of a user.
	perUser := map[string][]claim{}
	for _, h := range st.Holds {
		perUser[h.UID] = append(perUser[h.UID], claim{owner: "hold " + h.ID, seats: len(h.Seats), start: h.CreatedAt, end: holdEnd(h, byHold)})
	}
	for _, b := range st.Bookings {
		perUser[b.UID] = append(perUser[b.UID], claim{owner: "booking " + b.ID, seats: len(b.Seats), start: b.CreatedAt, end: bookingEnd(b)})
	}
	for uid, cs := range perUser {
		ivs := make([]report.Interval, len(cs))
		for i, c := range cs {
			ivs[i] = report.Interval{Seats: c.seats, Start: c.start, End: c.end}
		}
		if n, at := report.MostAtOnce(ivs); n > st.MaxSeatsPerUser {
			c.OverCap++
			c.example("user %s had %d seats at %s, the cap is %d", uid, n, at.Format(time.RFC3339Nano), st.MaxSeatsPerUser)
		}
	}

	// A live pass for every hold and every booking not made from a hold.
	places := map[string]report.Place{}
	for _, p := range st.Places {
		places[p.UID] = p
	}
	for _, h := range st.Holds {
		if why := passProblem(places[h.UID], h.UID, h.CreatedAt, false, st.Bookings); why != "" {
			c.WithoutPass++
			c.example("hold %s of %s: %s", h.ID, h.UID, why)
		}
	}
	for _, b := range st.Bookings {
		if b.HoldID != "" {
			continue // a hold made under a pass may be confirmed after it
		}
		if why := passProblem(places[b.UID], b.UID, b.CreatedAt, true, st.Bookings); why != "" {
			c.WithoutPass++
			c.example("booking %s of %s: %s", b.ID, b.UID, why)
		}
	}

	var admitted int64
	for _, p := range st.Places {
		if p.AdmittedAt != nil {
			admitted++
		}
	}
	c.TicketsCounted, c.CounterShards = st.TicketsCounted, st.CounterShards
	c.CounterShardsNeeded = counterShardsNeeded(st.AdmitPerMinute)
	if c.TicketsCounted != int64(c.SeatsSold+c.DoubleBooked) {
		c.example("the tickets-sold counter says %d, the bookings %d", c.TicketsCounted, c.SeatsSold+c.DoubleBooked)
	}
	if st.AdmissionsRecorded > admitted {
		c.AdmittedTwice = int(st.AdmissionsRecorded - admitted)
		c.example("the admitter recorded %d admissions, %d places were admitted", st.AdmissionsRecorded, admitted)
	}
	return c
}

// counterShardsNeeded is how many shards the tickets-sold counter needs at
// a sale's rate (docs/waiting-room.md): each admitted user confirms about
// one booking, so bookings come at most at the admission rate; a shard
// takes about one write a second, so 1.5 shards per booking a second, and
// never fewer than a screening's default.
func counterShardsNeeded(admitPerMinute int) int {
	return max(booking.CounterShards, int(math.Ceil(float64(admitPerMinute)/60*1.5)))
}

// passProblem says why a hold or booking committed at "at" had no live
// pass ("" if it had one): the place admitted at or before it, its pass not
// over, and not done (a booking may be the one that made it done).
func passProblem(p report.Place, uid string, at time.Time, isBooking bool, bookings []report.Booking) string {
	switch {
	case p.ID == "":
		return "no place in the queue"
	case p.AdmittedAt == nil || p.PassUntil == nil:
		return "never admitted"
	case at.Before(*p.AdmittedAt):
		return fmt.Sprintf("committed %s before the admission", p.AdmittedAt.Sub(at))
	case !at.Before(*p.PassUntil):
		return fmt.Sprintf("committed %s after the pass ended", at.Sub(*p.PassUntil))
	}
	if d := report.DoneCommit(p, bookings); !d.IsZero() && (at.After(d) || (!isBooking && at.Equal(d))) {
		return fmt.Sprintf("committed %s after the pass turned done", at.Sub(d))
	}
	return ""
}
