package payment

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/firelock/firelock/booking"
)

// Collections (CONTRACT §10).
const (
	// Payments holds one record per paid-for hold: payments/{holdId}.
	Payments = "payments"
	// Events holds the per-event leases of Stripe's webhook events:
	// stripeEvents/{eventId}.
	Events = "stripeEvents"
)

// Record statuses (CONTRACT §10).
const (
	StatusOpen     = "open"     // the Checkout Session may still be paid
	StatusPaid     = "paid"     // the money came in
	StatusExpired  = "expired"  // the session ended unpaid
	StatusRefunded = "refunded" // the money went back in full
)

// Refund reasons.
const (
	// ReasonSeatsLost: a late payment whose seats were no longer all free
	// (or whose screening had started).
	ReasonSeatsLost = "seats_lost"
	// ReasonReleased: a payment for a hold its user had released.
	ReasonReleased = "released"
	// ReasonCancelled: the paid booking was cancelled (CancelBooking).
	ReasonCancelled = "cancelled"
	// ReasonSaleClosed, ReasonSeatLimit: a late payment whose booking would
	// break a rule of the screening's sale at that moment: an operator had
	// closed it, or the user would go past maxSeatsPerUser (CONTRACT §10a).
	ReasonSaleClosed = "sale_closed"
	ReasonSeatLimit  = "seat_limit"
	// ReasonRevoked: a payment for a hold that an operator's revoke
	// released, or a late one of a user whose pass was revoked.
	ReasonRevoked = "revoked"
)

// Record is a payment record, payments/{holdId}: the CONTRACT §10 fields,
// and the outbox of what is due at Stripe (ExpireDue, RefundDue) until it
// is done. Every change to it commits with the change to the seats it
// pays for, in one transaction that read it.
type Record struct {
	HoldID      string   `firestore:"holdId" json:"holdId"`
	UID         string   `firestore:"uid" json:"uid"`
	ScreeningID string   `firestore:"screeningId" json:"screeningId"`
	Seats       []string `firestore:"seats" json:"seats"`
	SessionID   string   `firestore:"sessionId" json:"sessionId"`
	CheckoutURL string   `firestore:"checkoutUrl" json:"checkoutUrl"`
	// ReturnURL is where the checkout page sends the buyer back.
	ReturnURL       string    `firestore:"returnUrl" json:"returnUrl"`
	Amount          int64     `firestore:"amount" json:"amount"`
	Currency        string    `firestore:"currency" json:"currency"`
	Status          string    `firestore:"status" json:"status"`
	PaymentIntentID string    `firestore:"paymentIntentId,omitempty" json:"paymentIntentId,omitempty"`
	BookingID       string    `firestore:"bookingId,omitempty" json:"bookingId,omitempty"`
	RefundID        string    `firestore:"refundId,omitempty" json:"refundId,omitempty"`
	RefundReason    string    `firestore:"refundReason,omitempty" json:"refundReason,omitempty"`
	LateAccepted    bool      `firestore:"lateAccepted,omitempty" json:"lateAccepted,omitempty"`
	EndedBy         string    `firestore:"endedBy,omitempty" json:"endedBy,omitempty"`
	ExpireDue       bool      `firestore:"expireDue,omitempty" json:"-"`
	RefundDue       bool      `firestore:"refundDue,omitempty" json:"-"`
	CreatedAt       time.Time `firestore:"createdAt" json:"createdAt"`
	UpdatedAt       time.Time `firestore:"updatedAt" json:"updatedAt"`
	// PaidAt, RefundedAt: when the money came in and went back, for the
	// sale's minute figures (revenue, refunds).
	PaidAt     *time.Time `firestore:"paidAt,omitempty" json:"paidAt,omitempty"`
	RefundedAt *time.Time `firestore:"refundedAt,omitempty" json:"refundedAt,omitempty"`
}

// recordOf decodes a payment record; ok is false if it does not exist.
func recordOf(snap *firestore.DocumentSnapshot) (Record, bool, error) {
	if snap == nil || !snap.Exists() {
		return Record{}, false, nil
	}
	var r Record
	if err := snap.DataTo(&r); err != nil {
		return Record{}, true, err
	}
	return r, true, nil
}

// Ledger keeps the payment records; it is booking's Till, so the records
// change in the same commits as the seats. It needs only Firestore: build
// it first, give it to booking.WithTill, then build the Service on the
// booking.Service.
type Ledger struct {
	client *firestore.Client
}

var _ booking.Till = (*Ledger)(nil)

// NewLedger returns the Ledger on client.
func NewLedger(client *firestore.Client) *Ledger { return &Ledger{client: client} }

// Payment is hold holdID's record.
func (l *Ledger) Payment(holdID string) *firestore.DocumentRef {
	return l.client.Collection(Payments).Doc(holdID)
}

// HoldEnded records that a paying hold ended unpaid. Ended by its Checkout
// Session (it expired, or its payment failed), the record is expired; ended
// by its user or its time, the session must still be expired at Stripe so
// that nobody pays for seats no longer held: ExpireDue, done by the next
// Settle (at once after ReleaseHold, or by the sweep).
func (l *Ledger) HoldEnded(payment *firestore.DocumentSnapshot, _ booking.Hold, by booking.EndedBy, now time.Time) ([]firestore.Update, error) {
	r, ok, err := recordOf(payment)
	if err != nil || !ok || r.Status != StatusOpen {
		return nil, err
	}
	ups := []firestore.Update{{Path: "endedBy", Value: string(by)}, {Path: "updatedAt", Value: now}}
	if by == booking.EndedByCheckout {
		return append(ups, firestore.Update{Path: "status", Value: StatusExpired}), nil
	}
	return append(ups, firestore.Update{Path: "expireDue", Value: true}), nil
}

// BookingCancelled records that a paid booking is cancelled: its refund is
// due (RefundDue, made by Settle with an idempotency key derived from the
// hold, so exactly once).
func (l *Ledger) BookingCancelled(payment *firestore.DocumentSnapshot, _ booking.Booking, now time.Time) ([]firestore.Update, error) {
	r, ok, err := recordOf(payment)
	if err != nil || !ok || r.Status != StatusPaid || r.RefundDue || r.RefundReason != "" {
		return nil, err
	}
	return []firestore.Update{{Path: "refundDue", Value: true}, {Path: "refundReason", Value: ReasonCancelled}, {Path: "updatedAt", Value: now}}, nil
}

// Takings is the money of the screening's payments from from (inclusive)
// to to (exclusive): the amounts paid (paidAt in the stretch) and refunded
// (refundedAt in it), and how many late payments were booked; three
// aggregation queries (a read per 1,000 index entries each). It is the
// sale's Takings (sale.WithTakings): the saleStats minutes' revenue,
// refunds and latePayments.
func (l *Ledger) Takings(ctx context.Context, screeningID string, from, to time.Time) (revenue, refunds, late int64, err error) {
	q := l.client.Collection(Payments).Where("screeningId", "==", screeningID)
	between := func(field string) *firestore.Query {
		b := q.Where(field, ">=", from).Where(field, "<", to)
		return &b
	}
	if revenue, err = aggregate(ctx, between("paidAt").NewAggregationQuery().WithSum("amount", "v")); err != nil {
		return 0, 0, 0, err
	}
	if refunds, err = aggregate(ctx, between("refundedAt").NewAggregationQuery().WithSum("amount", "v")); err != nil {
		return 0, 0, 0, err
	}
	lateQ := between("paidAt").Where("lateAccepted", "==", true)
	late, err = aggregate(ctx, lateQ.NewAggregationQuery().WithCount("v"))
	return revenue, refunds, late, err
}

func aggregate(ctx context.Context, aq *firestore.AggregationQuery) (int64, error) {
	res, err := aq.Get(ctx)
	if err != nil {
		return 0, err
	}
	switch v := res["v"].(type) {
	case *firestorepb.Value:
		if v.GetIntegerValue() != 0 {
			return v.GetIntegerValue(), nil
		}
		return int64(v.GetDoubleValue()), nil
	}
	return 0, fmt.Errorf("payment: aggregation answered %T", res["v"])
}
