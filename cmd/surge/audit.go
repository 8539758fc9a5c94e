package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/sale"
)

// saleState is what Firestore holds of a sale at the end, as the audit
// reads it: every place, hold, booking and seat of the screening.
type saleState struct {
	ScreeningID     string
	OpensAt         time.Time
	AdmitPerMinute  int
	MaxActive       int
	PassSeconds     int
	MaxSeatsPerUser int
	Hall            []string // every seat id
	Places          []placeDoc
	Holds           []holdDoc
	Bookings        []bookingDoc
	Seats           map[string]seatDoc
	// AdmissionsRecorded is what the admitter counted (saleStates/{id}.admitted).
	AdmissionsRecorded int64
	// The tickets-sold counter: its shards (0: none) and its count.
	CounterShards  int
	TicketsCounted int64
}

type placeDoc struct {
	ID, UID, Status, Order        string
	JoinedAt                      time.Time
	AdmittedAt, PassUntil, DoneAt *time.Time
}

type holdDoc struct {
	ID, UID, Status, BookingID string
	Seats                      []string
	CreatedAt, HeldUntil       time.Time
	Updated                    time.Time // the last write: a release's commit time
}

type bookingDoc struct {
	ID, UID, Status, HoldID string
	Seats                   []string
	CreatedAt, Updated      time.Time // Updated: a cancellation's commit time
}

type seatDoc struct {
	Status, BookingID, HoldID string
	HeldUntil                 time.Time
}

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

// readState reads the sale of screening id as Firestore holds it.
func readState(ctx context.Context, fs *firestore.Client, id string) (*saleState, error) {
	scr, err := fs.Collection(booking.Screenings).Doc(id).Get(ctx)
	if err != nil {
		return nil, err
	}
	var sc booking.Screening
	if err := scr.DataTo(&sc); err != nil {
		return nil, err
	}
	cfg, _ := scr.Data()["sale"].(map[string]any)
	st := &saleState{ScreeningID: id, Seats: map[string]seatDoc{}}
	st.OpensAt, _ = cfg["opensAt"].(time.Time)
	for name, dst := range map[string]*int{"admitPerMinute": &st.AdmitPerMinute, "maxActive": &st.MaxActive,
		"passSeconds": &st.PassSeconds, "maxSeatsPerUser": &st.MaxSeatsPerUser} {
		n, _ := cfg[name].(int64)
		*dst = int(n)
	}
	for _, r := range sc.Rows {
		for n := 1; n <= sc.SeatsPerRow; n++ {
			st.Hall = append(st.Hall, fmt.Sprintf("%s%d", r, n))
		}
	}

	places, err := fs.Collection(sale.Queue).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range places {
		var p struct {
			UID        string     `firestore:"uid"`
			Status     string     `firestore:"status"`
			Order      string     `firestore:"order"`
			JoinedAt   time.Time  `firestore:"joinedAt"`
			AdmittedAt *time.Time `firestore:"admittedAt"`
			PassUntil  *time.Time `firestore:"passUntil"`
			DoneAt     *time.Time `firestore:"doneAt"`
		}
		if err := s.DataTo(&p); err != nil {
			return nil, fmt.Errorf("place %s: %w", s.Ref.ID, err)
		}
		st.Places = append(st.Places, placeDoc{ID: s.Ref.ID, UID: p.UID, Status: p.Status, Order: p.Order,
			JoinedAt: p.JoinedAt, AdmittedAt: p.AdmittedAt, PassUntil: p.PassUntil, DoneAt: p.DoneAt})
	}

	holds, err := fs.Collection(booking.Holds).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range holds {
		var h booking.Hold
		if err := s.DataTo(&h); err != nil {
			return nil, fmt.Errorf("hold %s: %w", s.Ref.ID, err)
		}
		st.Holds = append(st.Holds, holdDoc{ID: s.Ref.ID, UID: h.UID, Status: h.Status, BookingID: h.BookingID,
			Seats: h.Seats, CreatedAt: h.CreatedAt, HeldUntil: h.HeldUntil, Updated: s.UpdateTime})
	}

	bookings, err := fs.Collection(booking.Bookings).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range bookings {
		var b booking.Booking
		if err := s.DataTo(&b); err != nil {
			return nil, fmt.Errorf("booking %s: %w", s.Ref.ID, err)
		}
		st.Bookings = append(st.Bookings, bookingDoc{ID: s.Ref.ID, UID: b.UID, Status: b.Status, HoldID: b.HoldID,
			Seats: b.Seats, CreatedAt: b.CreatedAt, Updated: s.UpdateTime})
	}

	seats, err := scr.Ref.Collection("seats").Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range seats {
		d := s.Data()
		var sd seatDoc
		sd.Status, _ = d["status"].(string)
		sd.BookingID, _ = d["bookingId"].(string)
		sd.HoldID, _ = d["holdId"].(string)
		sd.HeldUntil, _ = d["heldUntil"].(time.Time)
		st.Seats[s.Ref.ID] = sd
	}

	if s, err := fs.Collection(sale.States).Doc(id).Get(ctx); err == nil {
		st.AdmissionsRecorded, _ = s.Data()["admitted"].(int64)
	}
	switch c, err := counter.Open(ctx, fs, booking.CounterID(id)); {
	case errors.Is(err, counter.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		st.CounterShards = c.NumShards()
		if st.TicketsCounted, err = c.Count(ctx); err != nil {
			return nil, err
		}
	}
	return st, nil
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
func bookingEnd(b bookingDoc) time.Time {
	if b.Status == booking.StatusCanceled {
		return b.Updated
	}
	return time.Time{}
}

// holdEnd is when a hold stopped holding its seats as a hold: its end, its
// release, or its confirmation (then its booking holds them on).
func holdEnd(h holdDoc, booked map[string]bookingDoc) time.Time {
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
func auditCorrectness(st *saleState, cl clientRecords) correctness {
	var c correctness
	byHold := map[string]bookingDoc{} // bookings made from holds, by hold
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
	holds := map[string]holdDoc{}
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
	confirmed := map[string]bookingDoc{}
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
		if n, at := mostSeatsAtOnce(cs); n > st.MaxSeatsPerUser {
			c.OverCap++
			c.example("user %s had %d seats at %s, the cap is %d", uid, n, at.Format(time.RFC3339Nano), st.MaxSeatsPerUser)
		}
	}

	// A live pass for every hold and every booking not made from a hold.
	places := map[string]placeDoc{}
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

// mostSeatsAtOnce sweeps a user's claims: the most seats held at once.
func mostSeatsAtOnce(cs []claim) (int, time.Time) {
	type ev struct {
		at time.Time
		n  int
	}
	var evs []ev
	for _, c := range cs {
		evs = append(evs, ev{c.start, c.seats})
		if !c.end.IsZero() {
			evs = append(evs, ev{c.end, -c.seats})
		}
	}
	// Ends before starts at the same instant: [start, end).
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.n, b.n)) })
	n, most, at := 0, 0, time.Time{}
	for _, e := range evs {
		n += e.n
		if n > most {
			most, at = n, e.at
		}
	}
	return most, at
}

// doneCommit is when a done place's pass ended: the commit of the booking
// that made it done. doneAt is that booking's deciding read, earlier; the
// booking's commit, conditioned on the place as read, is the first of the
// user's to commit at or after it.
func doneCommit(p placeDoc, bookings []bookingDoc) time.Time {
	if p.DoneAt == nil {
		return time.Time{}
	}
	var first time.Time
	for _, b := range bookings {
		if b.UID == p.UID && !b.CreatedAt.Before(*p.DoneAt) && (first.IsZero() || b.CreatedAt.Before(first)) {
			first = b.CreatedAt
		}
	}
	if first.IsZero() {
		return *p.DoneAt
	}
	return first
}

// passProblem says why a hold or booking committed at "at" had no live
// pass ("" if it had one): the place admitted at or before it, its pass not
// over, and not done (a booking may be the one that made it done).
func passProblem(p placeDoc, uid string, at time.Time, isBooking bool, bookings []bookingDoc) string {
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
	if d := doneCommit(p, bookings); !d.IsZero() && (at.After(d) || (!isBooking && at.Equal(d))) {
		return fmt.Sprintf("committed %s after the pass turned done", at.Sub(d))
	}
	return ""
}

// fairness is the audit's verdict on who was admitted when.
type fairness struct {
	EarlyJoiners  int `json:"earlyJoiners"`
	LateJoiners   int `json:"lateJoiners"`
	EarlyAdmitted int `json:"earlyAdmitted"`
	LateAdmitted  int `json:"lateAdmitted"`
	// EarlyBeforeLate: every early joiner was admitted before the first
	// later joiner (true, and vacuous, when no later joiner was admitted).
	EarlyBeforeLate bool `json:"earlyBeforeLate"`
	// EarlySpearman: ρ of join order against admission order over the
	// admitted early joiners; EarlyLineSpearman over every early joiner,
	// against their place in the line (order), admitted or not.
	EarlySpearman     maybe   `json:"earlySpearman"`
	EarlyLineSpearman maybe   `json:"earlyLineSpearman"`
	LatePairs         int     `json:"latePairs"`
	LateInverted      int     `json:"lateInverted"`
	LateInversions    float64 `json:"lateInversions"` // LateInverted / LatePairs
	// Skipped: places still waiting at the end whose order sorts before an
	// admitted place's (admission passed them by).
	Skipped  int      `json:"skipped"`
	Unranked int      `json:"unranked"` // early joiners without an order at the end
	Examples []string `json:"fairnessExamples,omitempty"`
}

// admissionOrder sorts admitted places in the order they were admitted:
// by admission time, then (one transaction admits many) by order, in which
// the admitter admits them.
func admissionOrder(a, b placeDoc) int {
	return cmp.Or(a.AdmittedAt.Compare(*b.AdmittedAt), cmp.Compare(a.Order, b.Order))
}

func auditFairness(st *saleState) fairness {
	var f fairness
	var admitted, early []placeDoc
	for _, p := range st.Places {
		if p.JoinedAt.Before(st.OpensAt) {
			f.EarlyJoiners++
			early = append(early, p)
			if p.Order == "" {
				f.Unranked++
			}
		} else {
			f.LateJoiners++
		}
		if p.AdmittedAt != nil {
			admitted = append(admitted, p)
		}
	}
	slices.SortFunc(admitted, admissionOrder)
	pos := map[string]int{}
	lastEarly, firstLate := -1, -1
	var lateJoin []placeDoc
	var ej, ea []float64
	maxOrder := ""
	for i, p := range admitted {
		pos[p.ID] = i
		maxOrder = max(maxOrder, p.Order)
		if p.JoinedAt.Before(st.OpensAt) {
			f.EarlyAdmitted++
			lastEarly = i
			ej = append(ej, float64(p.JoinedAt.UnixMicro()))
			ea = append(ea, float64(i))
		} else {
			f.LateAdmitted++
			if firstLate < 0 {
				firstLate = i
			}
			lateJoin = append(lateJoin, p)
		}
	}
	f.EarlyBeforeLate = f.LateAdmitted == 0 || (f.EarlyAdmitted == f.EarlyJoiners && lastEarly < firstLate)
	if !f.EarlyBeforeLate && len(f.Examples) < maxExamples {
		f.Examples = append(f.Examples, fmt.Sprintf("%d of %d early joiners admitted, the last at position %d; the first later joiner at %d",
			f.EarlyAdmitted, f.EarlyJoiners, lastEarly, firstLate))
	}
	f.EarlySpearman = maybe(spearman(ej, ea))

	// The whole line of early joiners: join order against draw order.
	slices.SortFunc(early, func(a, b placeDoc) int { return cmp.Compare(a.Order, b.Order) })
	var lj, lo []float64
	for i, p := range early {
		if p.Order != "" {
			lj = append(lj, float64(p.JoinedAt.UnixMicro()))
			lo = append(lo, float64(i))
		}
	}
	f.EarlyLineSpearman = maybe(spearman(lj, lo))

	// Later joiners: pairs admitted in the other order than they joined.
	slices.SortFunc(lateJoin, func(a, b placeDoc) int { return cmp.Or(a.JoinedAt.Compare(b.JoinedAt), cmp.Compare(a.ID, b.ID)) })
	seq := make([]int, len(lateJoin))
	for i, p := range lateJoin {
		seq[i] = pos[p.ID]
	}
	f.LatePairs = len(seq) * (len(seq) - 1) / 2
	f.LateInverted = inversions(seq)
	if f.LatePairs > 0 {
		f.LateInversions = float64(f.LateInverted) / float64(f.LatePairs)
	}

	for _, p := range st.Places {
		if p.AdmittedAt == nil && p.Order != "" && p.Order < maxOrder {
			f.Skipped++
			if len(f.Examples) < maxExamples {
				f.Examples = append(f.Examples, fmt.Sprintf("place %s (order %s) still waits behind admitted order %s", p.ID, p.Order, maxOrder))
			}
		}
	}
	return f
}

// metering is the audit's verdict on how admission was metered.
type metering struct {
	Admitted             int     `json:"admitted"`
	MaxAdmittedPerMinute int     `json:"maxAdmittedPerMinute"` // in any 60 s
	MaxLivePasses        int     `json:"maxLivePasses"`
	FirstAdmission       float64 `json:"firstAdmissionSeconds"` // after opensAt; -1: nobody admitted
	// Refills: from a pass ending while every slot was taken (and someone
	// waited, and the rate allowed) to the next admission.
	Refills   int     `json:"refills"`
	RefillP50 float64 `json:"refillP50Seconds"`
	RefillMax float64 `json:"refillMaxSeconds"`
}

// passEnd is when a pass stopped counting against maxActive: its
// passUntil, or the commit that made it done.
func passEnd(p placeDoc, bookings []bookingDoc) time.Time {
	end := *p.PassUntil
	if d := doneCommit(p, bookings); !d.IsZero() && d.Before(end) {
		end = d
	}
	return end
}

func auditMetering(st *saleState, runEnd time.Time) metering {
	m := metering{FirstAdmission: -1}
	var times []time.Time
	type pass struct{ start, end time.Time }
	var passes []pass
	for _, p := range st.Places {
		if p.AdmittedAt == nil || p.PassUntil == nil {
			continue
		}
		times = append(times, *p.AdmittedAt)
		passes = append(passes, pass{*p.AdmittedAt, passEnd(p, st.Bookings)})
	}
	m.Admitted = len(times)
	if len(times) == 0 {
		return m
	}
	slices.SortFunc(times, time.Time.Compare)
	m.FirstAdmission = seconds(times[0].Sub(st.OpensAt))
	// The admitter counts admissions in (now - 60 s, now]: [t, t+60 s) windows hold the same sets.
	m.MaxAdmittedPerMinute, _ = maxInWindow(times, time.Minute)

	cs := make([]claim, len(passes))
	for i, p := range passes {
		cs[i] = claim{seats: 1, start: p.start, end: p.end}
	}
	m.MaxLivePasses, _ = mostSeatsAtOnce(cs)

	// Refills: ends of passes that held the last slot.
	var gaps []time.Duration
	seen := map[time.Time]bool{}
	soldAt := st.lastSaleOf()
	for _, e := range passes {
		at := e.end
		if seen[at] || !at.Before(runEnd) {
			continue
		}
		seen[at] = true
		live := 0
		for _, p := range passes {
			if p.start.Before(at) && !p.end.Before(at) {
				live++
			}
		}
		inRate := 0
		for _, t := range times {
			if t.After(at.Add(-time.Minute)) && !t.After(at) {
				inRate++
			}
		}
		waiting := false
		for _, p := range st.Places {
			if p.JoinedAt.Before(at.Add(-time.Second)) && (p.AdmittedAt == nil || p.AdmittedAt.After(at)) {
				waiting = true
				break
			}
		}
		soldOut := !soldAt.IsZero() && !at.Before(soldAt)
		if live < st.MaxActive || inRate >= st.AdmitPerMinute || !waiting || soldOut {
			continue
		}
		i, _ := slices.BinarySearchFunc(times, at, time.Time.Compare)
		if i < len(times) {
			gaps = append(gaps, times[i].Sub(at))
		} else {
			gaps = append(gaps, runEnd.Sub(at)) // never refilled
		}
	}
	slices.Sort(gaps)
	m.Refills = len(gaps)
	m.RefillP50 = seconds(quantile(gaps, 0.5))
	if len(gaps) > 0 {
		m.RefillMax = seconds(gaps[len(gaps)-1])
	}
	return m
}

// lastSaleOf is when the last seat of a sold-out hall was sold (zero if
// the hall did not sell out).
func (st *saleState) lastSaleOf() time.Time {
	sold := map[string]bool{}
	var last time.Time
	for _, b := range st.Bookings {
		if b.Status != "confirmed" {
			continue
		}
		for _, s := range b.Seats {
			sold[s] = true
		}
		if b.CreatedAt.After(last) {
			last = b.CreatedAt
		}
	}
	if len(sold) < len(st.Hall) {
		return time.Time{}
	}
	return last
}

// spearmanBound is the |ρ| a fair draw stays within at sigmas standard
// errors, for n pairs (+Inf when there are too few to judge).
func spearmanBound(n int, sigmas float64) float64 {
	if n < 3 {
		return math.Inf(1)
	}
	return sigmas / math.Sqrt(float64(n-1))
}
