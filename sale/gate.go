package sale

import (
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// The seat-cap tally on a place, kept by the Gate in the commit that takes
// or frees seats:
//
//	holds:    {holdId: {seats, until}}  holds made under the pass
//	bookings: {bookingId: seats}        confirmed bookings (direct, or from a hold)
//	doneAt:   when the place turned done (the pass ended early)
//
// A hold counts while until lies after Firestore's now; a released or
// confirmed hold leaves the map, a cancelled booking too. Ended holds are
// pruned from the map by the next Admit.
const (
	fieldHolds    = "holds"
	fieldBookings = "bookings"
	fieldDoneAt   = "doneAt"
)

// Gated reports whether the screening has a sale (valid or not: a
// misconfigured sale keeps its seats closed, it does not open them).
func (s *Service) Gated(screening *firestore.DocumentSnapshot) bool {
	if screening == nil || !screening.Exists() {
		return false
	}
	v, ok := screening.Data()["sale"]
	return ok && v != nil
}

// Pass is uid's place in the screening's queue.
func (s *Service) Pass(screeningID, uid string) *firestore.DocumentRef {
	return s.place(QueueID(screeningID, uid))
}

// SeatMap is the sale's one-document seat map (CONTRACT §7a), which
// best-available holds choose from.
func (s *Service) SeatMap(screeningID string) *firestore.DocumentRef {
	return s.client.Collection(SeatMaps).Doc(screeningID)
}

// SeatCap is the sale's maxSeatsPerUser (0 while the sale is misconfigured:
// Admit refuses every claim then).
func (s *Service) SeatCap(screening *firestore.DocumentSnapshot) int {
	cfg, err := s.config(screening)
	if err != nil {
		return 0
	}
	return cfg.MaxSeatsPerUser
}

// tally is what a place's user holds and has booked, at Firestore time now.
type tally struct {
	seats     int      // in live holds and bookings
	liveHolds int      // live holds
	ended     []string // holds that have ended: pruned on the next write
	bookings  int      // bookings
	status    string
}

func tallyOf(pass *firestore.DocumentSnapshot, now time.Time, except string) tally {
	d := pass.Data()
	t := tally{}
	t.status, _ = d["status"].(string)
	holds, _ := d[fieldHolds].(map[string]any)
	for id, v := range holds {
		h, _ := v.(map[string]any)
		until, _ := h["until"].(time.Time)
		n, _ := h["seats"].(int64)
		switch {
		case id == except:
		case now.Before(until):
			t.seats += int(n)
			t.liveHolds++
		default:
			t.ended = append(t.ended, id)
		}
	}
	bookings, _ := d[fieldBookings].(map[string]any)
	for id, v := range bookings {
		n, _ := v.(int64)
		if id != except {
			t.seats += int(n)
			t.bookings++
		}
	}
	return t
}

// done is the update that ends a live pass early: its user holds nothing
// and has booked (CONTRACT §7), which frees the pass's slot.
func (t tally) done(now time.Time) []firestore.Update {
	if t.status != StatusAdmitted || t.liveHolds > 0 || t.bookings == 0 {
		return nil
	}
	return []firestore.Update{{Path: "status", Value: StatusDone}, {Path: fieldDoneAt, Value: now}}
}

// Admit decides a new hold or booking under the screening's sale at
// Firestore time now: after an operator closed the sale,
// booking.ErrSaleClosed; before opensAt, booking.ErrSaleNotOpen; without a
// live pass of the caller for this screening (with more than the pass
// margin left), booking.ErrNotAdmitted; past maxSeatsPerUser, counting live
// holds and bookings, booking.ErrSeatLimit. Otherwise it returns the
// tally's updates of the pass, and ends the pass (done) when a booking
// leaves the user holding nothing.
func (s *Service) Admit(screening, pass *firestore.DocumentSnapshot, c booking.Claim, now time.Time) ([]firestore.Update, error) {
	if controlOf(screening).Closed {
		return nil, fmt.Errorf("%w: an operator closed it", booking.ErrSaleClosed)
	}
	cfg, err := s.config(screening)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", booking.ErrSaleNotOpen, err)
	}
	if now.Before(cfg.OpensAt) {
		return nil, fmt.Errorf("%w: it opens at %s", booking.ErrSaleNotOpen, cfg.OpensAt.UTC().Format(time.RFC3339))
	}
	if pass == nil || !pass.Exists() {
		return nil, fmt.Errorf("%w: join the queue first", booking.ErrNotAdmitted)
	}
	p, err := placeOf(pass)
	if err != nil {
		return nil, err
	}
	switch {
	case p.UID != c.UID || p.ScreeningID != c.ScreeningID:
		return nil, fmt.Errorf("%w: the pass is for another screening or user", booking.ErrNotAdmitted)
	case p.Status == StatusWaiting:
		return nil, fmt.Errorf("%w: still waiting in the queue", booking.ErrNotAdmitted)
	case p.Status != StatusAdmitted || p.PassUntil == nil || !now.Add(s.o.passMargin).Before(*p.PassUntil):
		return nil, fmt.Errorf("%w: the pass has ended", booking.ErrNotAdmitted)
	}
	t := tallyOf(pass, now, c.ID)
	if t.seats+len(c.Seats) > cfg.MaxSeatsPerUser {
		return nil, fmt.Errorf("%w: %d of your %d seats are held or booked already; %d more is too many",
			booking.ErrSeatLimit, t.seats, cfg.MaxSeatsPerUser, len(c.Seats))
	}
	var ups []firestore.Update
	for _, id := range t.ended {
		ups = append(ups, firestore.Update{FieldPath: firestore.FieldPath{fieldHolds, id}, Value: firestore.Delete})
	}
	switch c.Kind {
	case booking.ClaimHold:
		ups = append(ups, firestore.Update{FieldPath: firestore.FieldPath{fieldHolds, c.ID}, Value: map[string]any{"seats": len(c.Seats), "until": c.Until}})
	case booking.ClaimBooking:
		ups = append(ups, firestore.Update{FieldPath: firestore.FieldPath{fieldBookings, c.ID}, Value: len(c.Seats)})
		t.bookings++
		ups = append(ups, t.done(now)...)
	default:
		return nil, fmt.Errorf("sale: unknown claim kind %q", c.Kind)
	}
	return ups, nil
}

// PaidBooking judges whether a completed payment may book hold c at
// Firestore time now (CONTRACT §10a), on the screening and the pass as the
// payment's transaction read them. A pass an operator revoked refuses it,
// live or late (booking.ErrNotAdmitted): the revoke's commit ended the
// pass and its holds are being released, so a payment that completes
// after it is refunded, as one for a hold it released is. A late one (the
// hold has ended, its seats all free) is refused also after an operator
// closed the sale (booking.ErrSaleClosed), and when the user would go past
// maxSeatsPerUser, counting their live holds and bookings as Admit does
// (booking.ErrSeatLimit). A hold made before the sale had its gate (no
// pass) is judged by the close only; so is the cap of a sale that cannot
// be read (misconfigured). An ended pass refuses nothing: a hold made
// under a pass may be paid after the pass ends.
func (s *Service) PaidBooking(screening, pass *firestore.DocumentSnapshot, c booking.Claim, late bool, now time.Time) error {
	if pass != nil && pass.Exists() {
		if _, revoked := pass.Data()[FieldRevokedAt]; revoked {
			return fmt.Errorf("%w: an operator revoked your pass", booking.ErrNotAdmitted)
		}
	}
	if !late {
		return nil
	}
	if controlOf(screening).Closed {
		return fmt.Errorf("%w: an operator closed it", booking.ErrSaleClosed)
	}
	if pass == nil || !pass.Exists() {
		return nil
	}
	cfg, err := s.config(screening)
	if err != nil {
		return nil
	}
	if t := tallyOf(pass, now, c.ID); t.seats+len(c.Seats) > cfg.MaxSeatsPerUser {
		return fmt.Errorf("%w: %d of your %d seats are held or booked already; %d more is too many",
			booking.ErrSeatLimit, t.seats, cfg.MaxSeatsPerUser, len(c.Seats))
	}
	return nil
}

// Settle returns the tally's updates of the pass for a change to a hold or
// booking admitted before (nil when the pass does not exist or never
// counted it): an extended or late-placed hold counts until its new end; a
// confirmed hold becomes a booking; a released hold and a cancelled booking
// stop counting. When a confirmation leaves the user holding nothing, a
// live pass turns done. An extension needs a live pass with more than the
// pass margin left, as a new hold does (booking.ErrNotAdmitted): a user
// whose pass ended keeps the hold until its end, and may still confirm it
// (CONTRACT §7), but cannot keep seats past it while the slot has gone to
// the next person (issue #29.2).
func (s *Service) Settle(pass *firestore.DocumentSnapshot, c booking.Change, now time.Time) ([]firestore.Update, error) {
	if pass == nil || !pass.Exists() {
		return nil, nil
	}
	d := pass.Data()
	holds, _ := d[fieldHolds].(map[string]any)
	bookings, _ := d[fieldBookings].(map[string]any)
	_, counted := holds[c.HoldID]
	holdPath := firestore.FieldPath{fieldHolds, c.HoldID}
	if _, revoked := d[FieldRevokedAt]; revoked && counted && (c.Kind == booking.HoldPaying || (c.Kind == booking.HoldConfirmed && !c.Paid)) {
		// The revoke's commit marked the place; its holds are being
		// released. A confirm or a checkout after the revoke's answer
		// must not keep them (a payment is refused before it gets here:
		// PaidBooking).
		return nil, fmt.Errorf("%w: an operator revoked your pass, and its holds are released", booking.ErrNotAdmitted)
	}
	switch c.Kind {
	case booking.HoldExtended, booking.HoldPlaced, booking.HoldPaying:
		if !counted { // made before the sale: not the pass's to govern
			return nil, nil
		}
		if c.Kind == booking.HoldExtended {
			p, err := placeOf(pass)
			if err != nil {
				return nil, err
			}
			if p.Status != StatusAdmitted || p.PassUntil == nil || !now.Add(s.o.passMargin).Before(*p.PassUntil) {
				return nil, fmt.Errorf("%w: your pass has ended, so the hold cannot be extended; it stays until its end and may still be confirmed", booking.ErrNotAdmitted)
			}
		}
		return []firestore.Update{{FieldPath: append(holdPath, "until"), Value: c.Until}}, nil
	case booking.HoldConfirmed:
		t := tallyOf(pass, now, c.HoldID)
		t.bookings++
		var ups []firestore.Update
		if counted {
			ups = append(ups, firestore.Update{FieldPath: holdPath, Value: firestore.Delete})
		}
		ups = append(ups, firestore.Update{FieldPath: firestore.FieldPath{fieldBookings, c.BookingID}, Value: c.Seats})
		return append(ups, t.done(now)...), nil
	case booking.HoldReleased:
		if !counted {
			return nil, nil
		}
		// No done here: a user who lets seats go may pick others while the
		// pass lives. Only a booking ends a pass early.
		return []firestore.Update{{FieldPath: holdPath, Value: firestore.Delete}}, nil
	case booking.BookingCancelled:
		if _, ok := bookings[c.BookingID]; !ok {
			return nil, nil
		}
		return []firestore.Update{{FieldPath: firestore.FieldPath{fieldBookings, c.BookingID}, Value: firestore.Delete}}, nil
	}
	return nil, fmt.Errorf("sale: unknown change kind %q", c.Kind)
}
