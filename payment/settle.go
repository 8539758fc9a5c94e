package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/jobs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Settle makes at Stripe what hold holdID's payment record says is due,
// and records it done: it expires the Checkout Session of a hold that
// ended unpaid (ExpireDue), and refunds in full a payment whose seats were
// lost or released or whose booking was cancelled (RefundDue). Each call
// carries an idempotency key derived from the hold, and the record says
// what is due until it is done, so any number of Settles (a request's own,
// the sweep's, a redelivered event's) expire once and refund once. A hold
// without a record, or with nothing due, is left alone.
func (s *Service) Settle(ctx context.Context, holdID string) error { return s.settle(ctx, holdID, nil) }

// settle is Settle within an event's run: its last commit is fenced by the
// run's lease and carries the run's done mark.
func (s *Service) settle(ctx context.Context, holdID string, run *jobs.Run) error {
	if s.stripe == nil {
		return fmt.Errorf("%w: %s is not set", ErrNotConfigured, EnvSecretKey)
	}
	ref := s.ledger.Payment(holdID)
	snap, err := ref.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return s.record(ctx, ref, run, nil)
	}
	if err != nil {
		return err
	}
	rec, _, err := recordOf(snap)
	if err != nil {
		return err
	}
	switch {
	case rec.RefundDue && rec.Status == StatusPaid:
		refundID, err := s.refund(ctx, rec)
		if err != nil {
			return err
		}
		refunded := false
		err = s.record(ctx, ref, run, func(tx *firestore.Transaction, now time.Time, cur Record) error {
			refunded = false
			if !cur.RefundDue || cur.Status != StatusPaid {
				return nil // recorded meanwhile (the sweep, or a redelivery)
			}
			if cur.BookingID != "" {
				if err := s.bookings.NoteRefund(tx, cur.BookingID, refundID); err != nil {
					return err
				}
			}
			refunded = true
			return tx.Update(ref, []firestore.Update{
				{Path: "status", Value: StatusRefunded}, {Path: "refundId", Value: refundID}, {Path: "refundedAt", Value: now},
				{Path: "updatedAt", Value: now}, {Path: "refundDue", Value: firestore.Delete},
			})
		})
		if err == nil && refunded {
			s.metrics.count(ctx, OutcomeRefunded)
		}
		return err
	case rec.ExpireDue && rec.Status == StatusOpen:
		paying, err := s.expireSession(ctx, rec.SessionID)
		if err != nil {
			return err
		}
		expired := false
		err = s.record(ctx, ref, run, func(tx *firestore.Transaction, now time.Time, cur Record) error {
			expired = false
			if !cur.ExpireDue || cur.Status != StatusOpen {
				return nil
			}
			ups := []firestore.Update{{Path: "expireDue", Value: firestore.Delete}, {Path: "updatedAt", Value: now}}
			if !paying { // a paid session is not expired: its completed event decides (the late-payment rule)
				ups = append(ups, firestore.Update{Path: "status", Value: StatusExpired}, firestore.Update{Path: "expiredAt", Value: now})
				expired = true
			}
			return tx.Update(ref, ups)
		})
		if err == nil && expired {
			s.metrics.count(ctx, OutcomeExpired)
		}
		return err
	}
	return s.record(ctx, ref, run, nil)
}

// record runs write in a transaction that reads the record afresh (after
// the run's fence), and adds the run's done mark to it.
func (s *Service) record(ctx context.Context, ref *firestore.DocumentRef, run *jobs.Run, write func(tx *firestore.Transaction, now time.Time, cur Record) error) error {
	if run == nil && write == nil {
		return nil
	}
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if f := fenceOf(run); f != nil {
			if err := f(tx); err != nil {
				return err
			}
		}
		snap, err := tx.Get(ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		if write != nil && snap.Exists() {
			cur, _, err := recordOf(snap)
			if err != nil {
				return err
			}
			if err := write(tx, snap.ReadTime, cur); err != nil {
				return err
			}
		}
		return s.markDone(tx, run, OutcomeRefunded) // within a run, settle makes the refund its event decided (applyPaid)
	})
	if err == nil && run != nil {
		run.Committed()
	}
	return err
}

// ReleaseHold releases uid's hold (booking.Service.ReleaseHold), and, for
// a paying hold, expires its Checkout Session at once (Settle), so nobody
// can pay for seats no longer held. Should Stripe be out of reach, the
// release stands and the sweep expires the session within a minute.
func (s *Service) ReleaseHold(ctx context.Context, uid, holdID string) (booking.Hold, error) {
	h, err := s.bookings.ReleaseHold(ctx, uid, holdID)
	return s.expireReleased(ctx, h, err)
}

// RevokeHold is ReleaseHold for an operator's revoke of the user's pass
// (booking.Service.RevokeHold; a sale.HoldRevoker): a payment that
// completes for the hold later is refunded as revoked.
func (s *Service) RevokeHold(ctx context.Context, uid, holdID string) (booking.Hold, error) {
	h, err := s.bookings.RevokeHold(ctx, uid, holdID)
	return s.expireReleased(ctx, h, err)
}

// expireReleased expires the Checkout Session of h, a hold just released
// (err nil), if it was paying (Settle); should Stripe be out of reach, the
// release stands and the sweep expires the session.
func (s *Service) expireReleased(ctx context.Context, h booking.Hold, err error) (booking.Hold, error) {
	if err != nil || h.Payment == nil {
		return h, err
	}
	if err := s.Settle(ctx, h.ID); err != nil {
		s.log.WarnContext(ctx, "released a paying hold; its Checkout Session is expired by the sweep", "holdId", h.ID, "error", err.Error())
	}
	return h, nil
}

// CancelBooking cancels uid's booking (booking.Service.Cancel), and, for a
// paid booking, refunds it in full at once (Settle): exactly once, whatever
// the retries. Should Stripe be out of reach, the cancellation stands, the
// refund stays due, and the sweep makes it; the booking shows refundId once
// it is made.
func (s *Service) CancelBooking(ctx context.Context, uid, bookingID string) (booking.Booking, error) {
	b, err := s.bookings.Cancel(ctx, uid, bookingID)
	if err != nil || b.Payment == nil || b.HoldID == "" {
		return b, err
	}
	if err := s.Settle(ctx, b.HoldID); err != nil {
		s.log.WarnContext(ctx, "cancelled a paid booking; its refund is made by the sweep", "bookingId", bookingID, "holdId", b.HoldID, "error", err.Error())
		return b, nil
	}
	snap, err := s.client.Collection(booking.Bookings).Doc(bookingID).Get(ctx)
	if err == nil {
		b.RefundID, _ = snap.Data()["refundId"].(string)
	}
	return b, nil
}

// SweepEvery is how often Sweep looks for paying holds that ended, within
// a run of sweepExpired: their sessions are expired within about this long.
const SweepEvery = 15 * time.Second

// Sweep ends paying holds that lapsed (booking.Service.ExpirePaying, which
// records ExpireDue) and settles every record with something due, until
// until (zero: one pass), every SweepEvery. The scheduled job sweepExpired
// runs it, so a session is expired, and a refund that a request could not
// make is made, within a minute (CONTRACT §10).
func (s *Service) Sweep(ctx context.Context, until time.Time) error {
	for {
		err := s.sweepOnce(ctx)
		next := time.Now().Add(SweepEvery)
		if until.IsZero() || !next.Before(until) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			s.log.WarnContext(ctx, "payments sweep", "error", err.Error())
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (s *Service) sweepOnce(ctx context.Context) error {
	var errs []error
	if _, err := s.bookings.ExpirePaying(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.stripe == nil {
		return errors.Join(errs...)
	}
	for _, due := range []string{"expireDue", "refundDue"} {
		snaps, err := s.client.Collection(Payments).Where(due, "==", true).Documents(ctx).GetAll()
		if err != nil {
			errs = append(errs, fmt.Errorf("payment: list records with %s: %w", due, err))
			continue
		}
		for _, snap := range snaps {
			if err := s.Settle(ctx, snap.Ref.ID); err != nil {
				errs = append(errs, fmt.Errorf("payment: settle %s: %w", snap.Ref.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
