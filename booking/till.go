package booking

import (
	"time"

	"cloud.google.com/go/firestore"
)

// A Till takes payment for the holds of priced screenings (CONTRACT §10);
// package payment is one. Seats and money never diverge because every
// change to one is committed with the change to the other: booking reads a
// hold's payment record in the transactions that end a paying hold or
// cancel a paid booking, and commits the Till's updates of it with the
// seats. What happens outside Firestore (expiring a Checkout Session,
// refunding) follows the record, which says it is due; the Till makes it
// happen after the commit, idempotently.
type Till interface {
	// Payment is the record of hold holdID's payment: payments/{holdId}.
	Payment(holdID string) *firestore.DocumentRef
	// HoldEnded returns the updates of the payment record (as read in the
	// transaction) of paying hold h, which ends unpaid now: by its user
	// (EndedByUser), by its time (EndedByTime), by its session
	// (EndedByCheckout) or by an operator's revoke (EndedByRevoke). The
	// Checkout Session is then due to be expired (but for EndedByCheckout).
	HoldEnded(payment *firestore.DocumentSnapshot, h Hold, by EndedBy, now time.Time) ([]firestore.Update, error)
	// BookingCancelled returns the updates of the payment record of paid
	// booking b, which is being cancelled: its refund is then due.
	BookingCancelled(payment *firestore.DocumentSnapshot, b Booking, now time.Time) ([]firestore.Update, error)
}

// EndedBy says what ended a paying hold without its payment.
type EndedBy string

// How a paying hold ends unpaid.
const (
	EndedByUser EndedBy = "user" // ReleaseHold
	EndedByTime EndedBy = "time" // it lapsed (ExpireHolds)
	// EndedByRevoke: an operator revoked the user's pass, which released
	// the hold (RevokeHold).
	EndedByRevoke EndedBy = "revoke"
	// EndedByCheckout: its Checkout Session expired, or its payment failed
	// (EndPaying).
	EndedByCheckout EndedBy = "checkout"
)

// WithTill takes payment for priced screenings through t: BookSeats and
// ConfirmHold of a priced screening answer ErrPaymentRequired with or
// without a till; with one, the holds' payments are recorded in the same
// commits as their seats.
func WithTill(t Till) Option { return func(s *Service) { s.till = t } }

// paymentRef is hold h's payment record, as a list of zero (no till, or
// no payment) or one reference to read with the hold's documents.
func (s *Service) paymentRef(h *Hold) []*firestore.DocumentRef {
	if s.till == nil || h.Payment == nil {
		return nil
	}
	return []*firestore.DocumentRef{s.till.Payment(h.ID)}
}
