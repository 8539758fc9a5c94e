package booking

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// Paying for holds (CONTRACT §10). A hold of a priced screening becomes a
// booking only through its payment: StartPaying turns it paying when its
// Checkout Session exists, ConfirmPayment books it when the payment
// completes (or decides that the money goes back), and EndPaying releases
// it when the session expires unpaid. Each is one transaction on the hold,
// its seats, the screening, the user's pass and the payment record, and the
// till's own writes (the payment record, its event's done mark) commit in
// it: seats and money never diverge.

// ReadHold returns uid's hold holdID as stored (one read), and whether it
// holds its seats by Firestore's clock at the read: a paying hold until its
// heldUntil has passed, whether or not the sweep has marked it since (its
// checkout may be handed out again until then: CONTRACT §10a); a held one
// with at least a second left (as StartPaying and ConfirmHold need).
// Errors: ErrInvalidArgument, ErrHoldNotFound, ErrForbidden (another
// user's).
func (s *Service) ReadHold(ctx context.Context, uid, holdID string) (h Hold, live bool, err error) {
	h, snap, err := s.readHold(ctx, uid, holdID)
	if err != nil {
		return Hold{}, false, err
	}
	if h.Status == StatusPaying {
		return h, h.live(snap.ReadTime), nil
	}
	return h, h.live(snap.ReadTime.Add(confirmMargin)), nil
}

// Fence is called in a payment transaction after its reads and before its
// writes: a run that must commit only while it holds its event's lease
// calls its lease's Guard there. Nil: no fence.
type Fence func(tx *firestore.Transaction) error

// StartPaying turns uid's live hold holdID paying for the Checkout Session
// pay: it keeps its seats until server time now + payHold (never past
// MaxHoldSinceCreate after its creation, never shorter than it was), and
// record adds the payment record's writes to the same commit. started is
// false, and nothing is written, when the hold is paying already and lives
// (a retry; the hold returned is as stored). Errors: ErrHoldNotFound,
// ErrForbidden, ErrHoldConfirmed, ErrHoldExpired (it ended, or a held one
// ends within a second), ErrScreeningStarted.
func (s *Service) StartPaying(ctx context.Context, uid, holdID string, payHold time.Duration, pay HoldPayment, record func(tx *firestore.Transaction, h Hold, now time.Time) error) (_ Hold, started bool, err error) {
	h, err := s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
		started = false
		switch {
		case h.Status == StatusPaying && h.live(now):
			return nil
		case h.Status == StatusPaying:
			return ErrHoldExpired // its end passed; the sweep has not marked it yet
		case h.Status == StatusOK:
			return ErrHoldConfirmed
		case !h.live(now.Add(confirmMargin)):
			return ErrHoldExpired
		}
		sc, err := DecodeScreening(docs.screening)
		if err != nil {
			return err
		}
		if sc.started(now) {
			return ErrScreeningStarted
		}
		for _, seat := range docs.seats {
			if !ours(seat, h.ID) {
				return ErrHoldExpired
			}
		}
		until := now.Add(payHold)
		if limit := h.CreatedAt.Add(MaxHoldSinceCreate); until.After(limit) {
			until = limit
		}
		if until.Before(h.HeldUntil) {
			until = h.HeldUntil
		}
		if err := s.settle(tx, docs.pass, Change{Kind: HoldPaying, HoldID: h.ID, Seats: len(h.Seats), Until: until}, now); err != nil {
			return err
		}
		for _, seat := range docs.seats {
			if err := tx.Update(seat.Ref, []firestore.Update{{Path: "heldUntil", Value: until}}); err != nil {
				return err
			}
		}
		h.Status, h.HeldUntil, h.Payment = StatusPaying, until, &pay
		if err := tx.Update(docs.hold.Ref, []firestore.Update{
			{Path: "status", Value: StatusPaying}, {Path: "heldUntil", Value: until}, {Path: "payment", Value: pay},
		}); err != nil {
			return err
		}
		started = true
		return record(tx, *h, now)
	})
	return h, started, err
}

// PaidAction is what a completed payment does to its hold.
type PaidAction string

// What a completed payment does.
const (
	// PaidNothing: the payment was applied before (a duplicate event).
	PaidNothing PaidAction = "nothing"
	// PaidConfirm: the paying hold lives, and the gate allows it
	// (Refused nil); it becomes a booking.
	PaidConfirm PaidAction = "confirm"
	// PaidLate: the hold has ended, every one of its seats is free, and the
	// screening's gate allows it (Refused nil): the seats are booked all
	// the same (a late payment accepted).
	PaidLate PaidAction = "late"
	// PaidRefund: the seats cannot be had (taken, released by the user or
	// by an operator's revoke, the screening started, or booking them
	// would break a rule of the sale: PaidHold.Refused): nothing is
	// booked, and the payment goes back in full.
	PaidRefund PaidAction = "refund"
)

// PaidHold is a hold whose payment completed, as ConfirmPayment's
// transaction read it, for the till to decide on.
type PaidHold struct {
	Hold    Hold
	Payment *firestore.DocumentSnapshot // the payment record (it may not exist)
	Now     time.Time                   // Firestore's time of the read
	// Live: the hold is paying and holds all its seats at Now.
	Live bool
	// SeatsFree: every seat of the hold is free at Now (a seat still
	// showing this hold, lapsed, is free).
	SeatsFree bool
	// Started: the screening has started (it takes no booking).
	Started bool
	// Refused is why the screening's gate refuses to book the hold for
	// its payment at Now (Gate.PaidBooking: ErrNotAdmitted for a revoked
	// pass; for a late payment also ErrSaleClosed, ErrSeatLimit), judged
	// on the screening and the pass as this transaction read them; nil
	// when it allows it, or the screening is not gated. Judged for a live
	// paying hold, and for one that has ended whose seats are all free.
	Refused error
}

// ConfirmPayment applies the completed payment paid of hold holdID, in one
// transaction: it reads the hold, its seats, the screening, the pass and
// the payment record, calls fence, and asks decide what to do. PaidConfirm
// and PaidLate book the seats exactly as ConfirmHold does (the same
// writes: seats, booking, its tickets, hold, pass, tickets-sold counter),
// the booking carrying paid; record then adds the till's writes (the
// payment record, the event's done mark) to the same commit, for every
// action. It returns
// the booking made (zero unless booked) and the action. Errors:
// ErrHoldNotFound, the fence's and decide's, or Firestore's.
func (s *Service) ConfirmPayment(ctx context.Context, holdID, executionID string, paid BookingPayment, fence Fence,
	decide func(PaidHold) (PaidAction, error), record func(tx *firestore.Transaction, p PaidHold, a PaidAction, b *Booking) error) (Booking, PaidAction, error) {
	var b Booking
	var action PaidAction
	_, err := s.onHold(ctx, anyHolder, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
		b, action = Booking{}, ""
		sc, err := DecodeScreening(docs.screening)
		if err != nil {
			return err
		}
		p := PaidHold{Hold: *h, Payment: docs.payment, Now: now, Started: sc.started(now), Live: h.Status == StatusPaying && h.live(now), SeatsFree: true}
		for _, seat := range docs.seats {
			if !ours(seat, h.ID) {
				p.Live = false
			}
			if seatState(seat, now) != "" && !ours(seat, h.ID) {
				p.SeatsFree = false // booked, or under someone else's live hold
			}
		}
		if (p.Live || p.SeatsFree) && s.gate != nil && s.gate.Gated(docs.screening) {
			var pass *firestore.DocumentSnapshot
			if len(docs.pass) > 0 {
				pass = docs.pass[0]
			}
			p.Refused = s.gate.PaidBooking(docs.screening, pass, Claim{Kind: ClaimBooking, ID: h.ID, UID: h.UID, ScreeningID: h.ScreeningID, Seats: h.Seats}, !p.Live, now)
		}
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		if action, err = decide(p); err != nil {
			return err
		}
		switch action {
		case PaidConfirm, PaidLate:
			if p.Started || p.Refused != nil || (action == PaidConfirm && !p.Live) || (action == PaidLate && !p.SeatsFree) {
				return fmt.Errorf("booking: the till chose %s for hold %s, which cannot have it (live %v, seats free %v, started %v, refused: %v)", action, h.ID, p.Live, p.SeatsFree, p.Started, p.Refused)
			}
			b = confirmation(h)
			b.Payment = &paid
			if err := s.confirmIn(ctx, tx, h, docs, &b, now, executionID); err != nil {
				return err
			}
		case PaidNothing, PaidRefund:
		default:
			return fmt.Errorf("booking: unknown paid action %q", action)
		}
		return record(tx, p, action, &b)
	})
	return b, action, err
}

// EndPaying releases paying hold holdID whose Checkout Session sessionID
// expired or failed: its seats are free at once, and the till records the
// payment's end (HoldEnded, EndedByCheckout) in the same commit, after
// fence; record adds the till's other writes. A hold that is not paying
// for that session is left alone (record still runs, with the payment
// record as read). It returns whether it released the hold.
func (s *Service) EndPaying(ctx context.Context, holdID, sessionID string, fence Fence, record func(tx *firestore.Transaction, h Hold, payment *firestore.DocumentSnapshot, released bool) error) (released bool, err error) {
	_, err = s.onHold(ctx, anyHolder, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
		released = false
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		if h.Status == StatusPaying && h.Payment != nil && h.Payment.SessionID == sessionID {
			if err := s.settle(tx, docs.pass, Change{Kind: HoldReleased, HoldID: h.ID, Seats: len(h.Seats)}, now); err != nil {
				return err
			}
			if err := s.endHold(tx, h, docs, StatusReleased, EndedByCheckout, now); err != nil {
				return err
			}
			released = true
		}
		return record(tx, *h, docs.payment, released)
	})
	return released, err
}

// NoteRefund records refundID on the cancelled booking bookingID, in tx
// (the till's commit that records the refund).
func (s *Service) NoteRefund(tx *firestore.Transaction, bookingID, refundID string) error {
	return tx.Update(s.client.Collection(Bookings).Doc(bookingID), []firestore.Update{{Path: "refundId", Value: refundID}})
}

// confirmIn adds to tx the writes that turn hold h (its documents as read
// in tx at server time now) into booking b: the seats booked, the booking
// and its tickets created (b.Tickets lists them), the hold confirmed, the
// pass's tally and the tickets-sold counter. Seats that still show the hold stay locked by the execution
// that held them; others (a late payment's) are taken by executionID.
func (s *Service) confirmIn(ctx context.Context, tx *firestore.Transaction, h *Hold, docs heldDocs, b *Booking, now time.Time, executionID string) error {
	if err := s.settle(tx, docs.pass, Change{Kind: HoldConfirmed, HoldID: h.ID, BookingID: b.ID, Seats: len(h.Seats), Paid: b.Payment != nil}, now); err != nil {
		return err
	}
	ctr, err := s.counter(ctx, h.ScreeningID)
	if err != nil {
		return err
	}
	for _, seat := range docs.seats {
		lockedBy := any(executionID)
		if ours(seat, h.ID) {
			lockedBy = seat.Data()["lockedBy"]
		}
		if err := tx.Set(seat.Ref, map[string]any{"status": StatusBooked, "bookingId": b.ID, "bookedAt": firestore.ServerTimestamp, "lockedBy": lockedBy}); err != nil {
			return err
		}
	}
	issued, err := s.issue(b)
	if err != nil {
		return err
	}
	if err := tx.Create(s.client.Collection(Bookings).Doc(b.ID), *b); err != nil {
		return err
	}
	if err := s.createTicketsIn(tx, issued); err != nil {
		return err
	}
	if err := tx.Update(docs.hold.Ref, []firestore.Update{{Path: "status", Value: StatusOK}, {Path: "bookingId", Value: b.ID}}); err != nil {
		return err
	}
	shard, ups := ctr.IncrementWrite(int64(len(h.Seats)))
	return tx.Update(shard, ups)
}
