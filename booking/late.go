package booking

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// Late landings. A booking or hold is decided at a read's time (or, on the
// one-commit path, at the bounds of Firestore's clock) and takes effect at
// its commit's time, which the network can hold back. No precondition can
// compare a commit's time with a time, so a commit decided before the
// screening's start can land after it. Such a claim is undone before it is
// answered: the request answers screening_started and leaves nothing
// behind (CONTRACT §3: a started screening takes no new booking or hold).
// A retry of it, or any later request that finds its document, undoes it
// too, so an undo that fails (the network again) is finished by the retry
// the 503 asks for.

// lateWindow bounds how late a found document may have landed for a retry
// to take it for a late landing: no commit is held back that long (calls
// end with their function's deadline), while an admin who moves a
// screening's start into the past must not have retries undo the bookings
// made before the edit.
const lateWindow = time.Minute

// landedLate says whether c's document (made by this call: committed at
// c.committed; or found by it: doc) took effect at or after the start of
// the screening the claim was decided on.
func (c *claim) landedLate(doc *firestore.DocumentSnapshot) bool {
	if c.startsAt.IsZero() {
		return false
	}
	if doc == nil {
		return !c.committed.IsZero() && !c.committed.Before(c.startsAt)
	}
	return !doc.CreateTime.Before(c.startsAt) && doc.CreateTime.Before(c.startsAt.Add(lateWindow))
}

// undoLate removes a claim that landed after the start, in one transaction:
// its seats (those still showing it), its document, a booking's tickets and
// its tickets-sold count, and the gate's record on the user's pass. It answers
// ErrScreeningStarted once undone.
func (s *Service) undoLate(ctx context.Context, c *claim) error {
	var freed []*firestore.DocumentRef
	err := s.runTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		freed = nil
		doc, err := tx.Get(c.ref)
		if notFound(err) {
			return nil // undone already (a retry's undo, or ours that landed unheard)
		}
		if err != nil {
			return err
		}
		refs := make([]*firestore.DocumentRef, len(c.seats))
		for i, seat := range c.seats {
			refs[i] = s.seatDoc(c.r.ScreeningID, seat)
		}
		pass := s.passRef(c.r.ScreeningID, c.r.UID)
		snaps, err := tx.GetAll(append(refs, pass...))
		if err != nil {
			return err
		}
		if c.kind == ClaimBooking {
			// Its tickets go with it: the commit that made them landed
			// after the start, and their buyer is told it never happened.
			var b Booking
			if err := doc.DataTo(&b); err != nil {
				return err
			}
			for _, id := range s.ticketIDs(b) {
				if err := tx.Delete(s.tickets.Ref(id)); err != nil {
					return err
				}
			}
		}
		idField := "bookingId"
		if c.kind == ClaimHold {
			idField = "holdId"
		}
		for i, seat := range snaps[:len(refs)] {
			if seat.Exists() && seat.Data()[idField] == c.id {
				if err := tx.Delete(refs[i]); err != nil {
					return err
				}
				freed = append(freed, refs[i])
			}
		}
		status, _ := doc.Data()["status"].(string)
		change := Change{Kind: HoldReleased, HoldID: c.id, Seats: len(c.seats)}
		if c.kind == ClaimBooking {
			change = Change{Kind: BookingCancelled, BookingID: c.id, Seats: len(c.seats)}
			if status == StatusOK {
				ctr, err := s.counter(ctx, c.r.ScreeningID)
				if err != nil {
					return err
				}
				shard, ups := ctr.IncrementWrite(-int64(len(c.seats)))
				if err := tx.Update(shard, ups); err != nil {
					return err
				}
			}
		}
		if err := s.settle(tx, snaps[len(refs):], change, doc.ReadTime); err != nil {
			return err
		}
		return tx.Delete(c.ref)
	})
	if err != nil {
		return fmt.Errorf("booking: the %s landed after the screening started and could not be undone yet (send it again to finish): %w", c.kind, err)
	}
	s.taken.mark(false, freed...)
	return fmt.Errorf("%w: the %s's commit landed at or after the start (%s), and was undone", ErrScreeningStarted, c.kind, c.startsAt.UTC().Format(time.RFC3339))
}
