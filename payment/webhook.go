package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The event types StripeWebhook acts on (CONTRACT §10); deploy.sh
// registers these with the endpoint. Others are answered 200 and ignored.
var EventTypes = []string{
	"checkout.session.completed",
	"checkout.session.async_payment_succeeded",
	"checkout.session.expired",
	"checkout.session.async_payment_failed",
}

// Outcomes of a delivery (the firelock.payments outcomes, and the
// answers' "outcome").
const (
	OutcomePaid             = "paid"
	OutcomeLateAccepted     = "late_accepted"
	OutcomeRefunded         = "refunded"
	OutcomeExpired          = "expired"
	OutcomeDuplicate        = "duplicate"
	OutcomeInvalidSignature = "invalid_signature"
	// Outcomes that are not counted: nothing happened to any money.
	OutcomeIgnored     = "ignored"      // an event type firelock does not act on
	OutcomeUnknownHold = "unknown_hold" // the event names no hold firelock has
	OutcomeNothing     = "nothing"      // acted on, with nothing to change
)

// Receipt is what HandleWebhook made of one delivery.
type Receipt struct {
	EventID string `json:"eventId,omitempty"`
	Type    string `json:"type,omitempty"`
	HoldID  string `json:"holdId,omitempty"`
	Outcome string `json:"outcome"`
}

// HandleWebhook verifies one delivery of a Stripe webhook event and applies
// it exactly once (CONTRACT §10). The body must be the raw bytes Stripe
// sent, and signature its Stripe-Signature header: a missing, wrong or
// stale (over 300 s) signature is ErrInvalidSignature, and a signed body
// that is not an event of the pinned API version is ErrBadEvent; neither
// writes anything.
//
// Each event runs under its lease stripeEvents/{eventId} (jobs.Events): a
// duplicate delivery finds it done and changes nothing, one that meets it
// running waits for it (jobs.ErrInProgress if it does not end in time).
// Events are judged by the state of the hold and its payment record, never
// by their order: a completed payment confirms a live paying hold; a late
// one books the hold's seats if every one is still free, and is refunded
// in full otherwise or if its user released the hold; an expired or failed
// session releases its paying hold. A nil error means the event is done
// (answer 2xx); any other error means Stripe should deliver it again.
func (s *Service) HandleWebhook(ctx context.Context, executionID string, payload []byte, signature string) (rc Receipt, err error) {
	defer func() { s.metrics.delivered(ctx, rc.Outcome, err) }()
	if s.cfg.WebhookSecret == "" {
		return Receipt{}, fmt.Errorf("%w: %s is not set", ErrNotConfigured, EnvWebhookSecret)
	}
	ev, err := webhook.ConstructEvent(payload, signature, s.cfg.WebhookSecret)
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader),
		errors.Is(err, webhook.ErrNoValidSignature), errors.Is(err, webhook.ErrTooOld):
		return Receipt{Outcome: OutcomeInvalidSignature}, fmt.Errorf("%w: %v", ErrInvalidSignature, err)
	case err != nil:
		return Receipt{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	rc = Receipt{EventID: ev.ID, Type: string(ev.Type)}
	kind := kindOf(string(ev.Type))
	if kind == "" {
		rc.Outcome = OutcomeIgnored
		return rc, nil
	}
	if ev.Data == nil {
		return rc, fmt.Errorf("%w: event %s has no data", ErrBadEvent, ev.ID)
	}
	var cs stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil || cs.ID == "" {
		return rc, fmt.Errorf("%w: event %s: data.object is not a Checkout Session: %v", ErrBadEvent, ev.ID, err)
	}
	if kind == kindPaid && string(ev.Type) == "checkout.session.completed" && cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		rc.Outcome = OutcomeIgnored // a delayed method: async_payment_succeeded or _failed follows
		return rc, nil
	}
	rc.HoldID = cs.Metadata["holdId"]
	if rc.HoldID == "" {
		rc.HoldID = cs.ClientReferenceID
	}
	if rc.HoldID == "" || lock.ValidateKey(rc.HoldID) != nil || lock.ValidateKey(ev.ID) != nil {
		s.log.WarnContext(ctx, "a Stripe event that names no hold of firelock's: ignored", "eventId", ev.ID, "type", ev.Type, "sessionId", cs.ID, "holdId", rc.HoldID)
		rc.Outcome = OutcomeUnknownHold
		return rc, nil
	}
	if _, err := s.client.Collection(booking.Holds).Doc(rc.HoldID).Get(ctx); status.Code(err) == codes.NotFound {
		s.log.WarnContext(ctx, "a Stripe event for a hold that does not exist: ignored", "eventId", ev.ID, "type", ev.Type, "sessionId", cs.ID, "holdId", rc.HoldID)
		rc.Outcome = OutcomeUnknownHold
		return rc, nil
	} else if err != nil {
		return rc, err
	}
	var ran *jobs.Run
	body := func(ctx context.Context, run *jobs.Run) error {
		ran = run
		var o string
		var err error
		if kind == kindPaid {
			o, err = s.applyPaid(ctx, run, executionID, rc.HoldID, &cs)
		} else {
			o, err = s.applyEnded(ctx, run, rc.HoldID, cs.ID)
		}
		rc.Outcome = o
		return err
	}
	if s.hooks.noEventLease {
		return rc, body(ctx, nil)
	}
	o, err := s.events.Do(ctx, ev.ID, body, jobs.WithExecutionID(executionID), jobs.WithName(string(ev.Type)),
		jobs.WithRunFields(map[string]any{"holdId": rc.HoldID, "sessionId": cs.ID, "eventId": ev.ID}))
	switch {
	case o == jobs.AlreadyDone:
		rc.Outcome = OutcomeDuplicate
	case err == nil && rc.Outcome == "" && ran != nil:
		// The body's commit landed but its answer was lost: the event is
		// done, by this delivery, as its done mark recorded.
		rc.Outcome = ran.Landed()
		if rc.Outcome == OutcomeRefunded {
			s.metrics.count(ctx, OutcomeRefunded) // settle counts only a refund it heard recorded
		}
	}
	return rc, err
}

// Event kinds.
const (
	kindPaid  = "paid"
	kindEnded = "ended"
)

func kindOf(t string) string {
	switch t {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		return kindPaid
	case "checkout.session.expired", "checkout.session.async_payment_failed":
		return kindEnded
	}
	return ""
}

// fenceOf fences a payment transaction by run's lease (nothing without a
// run: the planted lease-less handler).
func fenceOf(run *jobs.Run) booking.Fence {
	if run == nil {
		return nil
	}
	return func(tx *firestore.Transaction) error { return run.Lease().Guard(tx) }
}

// markDone adds run's done mark to tx (after its fence), recording the
// outcome the commit decides, so a delivery whose commit lands unheard
// still answers it (jobs.Run.Landed).
func (s *Service) markDone(tx *firestore.Transaction, run *jobs.Run, outcome string) error {
	if run == nil {
		return nil
	}
	if h := s.hooks.beforeDone; h != nil {
		h()
	}
	return run.MarkDoneWith(tx, outcome)
}

// errUnmatched: a payment firelock cannot match to the hold's record.
var errUnmatched = errors.New("payment: a payment that matches no record")

// applyPaid applies a completed payment of session cs for hold holdID, and
// then makes the refund it may have made due. It returns the outcome.
func (s *Service) applyPaid(ctx context.Context, run *jobs.Run, executionID, holdID string, cs *stripe.CheckoutSession) (string, error) {
	paid := booking.BookingPayment{SessionID: cs.ID, Amount: cs.AmountTotal, Currency: string(cs.Currency)}
	if cs.PaymentIntent != nil {
		paid.PaymentIntentID = cs.PaymentIntent.ID
	}
	refundDue := false
	reason := "" // why a refund is due, as decided
	_, action, err := s.bookings.ConfirmPayment(ctx, holdID, executionID, paid, fenceOf(run),
		func(p booking.PaidHold) (a booking.PaidAction, err error) {
			a, reason, err = s.decidePaid(p, cs.ID)
			return a, err
		},
		func(tx *firestore.Transaction, p booking.PaidHold, a booking.PaidAction, b *booking.Booking) error {
			rec, _, err := recordOf(p.Payment)
			if err != nil {
				return err
			}
			refundDue = rec.RefundDue && rec.Status == StatusPaid
			ups := []firestore.Update{
				{Path: "status", Value: StatusPaid}, {Path: "paymentIntentId", Value: paid.PaymentIntentID},
				{Path: "paidAt", Value: p.Now}, {Path: "updatedAt", Value: p.Now}, {Path: "expireDue", Value: firestore.Delete},
			}
			switch a {
			case booking.PaidConfirm, booking.PaidLate:
				ups = append(ups, firestore.Update{Path: "bookingId", Value: b.ID})
				if a == booking.PaidLate {
					ups = append(ups, firestore.Update{Path: "lateAccepted", Value: true})
				}
			case booking.PaidRefund:
				ups = append(ups, firestore.Update{Path: "refundDue", Value: true}, firestore.Update{Path: "refundReason", Value: reason})
				refundDue = true
			default:
				ups = nil
			}
			if len(ups) > 0 {
				if err := tx.Update(p.Payment.Ref, ups); err != nil {
					return err
				}
			}
			if refundDue {
				return nil // the event is done once its refund is made (settle)
			}
			return s.markDone(tx, run, paidOutcome(a))
		})
	if err != nil {
		return "", err
	}
	if !refundDue && run != nil {
		run.Committed() // the done mark was in that commit
	}
	switch {
	case refundDue:
		if h := s.hooks.beforeSettle; h != nil {
			h(holdID)
		}
		if err := s.settle(ctx, holdID, run); err != nil {
			return "", err
		}
		return OutcomeRefunded, nil
	}
	return paidOutcome(action), nil
}

// paidOutcome is the outcome of a completed payment applied by action
// (without a refund due).
func paidOutcome(a booking.PaidAction) string {
	switch a {
	case booking.PaidConfirm:
		return OutcomePaid
	case booking.PaidLate:
		return OutcomeLateAccepted
	}
	return OutcomeDuplicate
}

// decidePaid is the late-payment rule (CONTRACT §10, §10a), applied to a
// hold and its payment record as one transaction read them: a payment
// applied before changes nothing; one for a live paying hold confirms it,
// unless an operator revoked the user's pass; a late one (the hold ended)
// books the seats if every one is still free, the user did not release
// the hold, an operator did not revoke it, and booking it breaks no rule
// of the sale at that moment (the sale closed, the user's seat cap:
// PaidHold.Refused); otherwise it is refunded, for the reason returned.
func (s *Service) decidePaid(p booking.PaidHold, sessionID string) (booking.PaidAction, string, error) {
	rec, ok, err := recordOf(p.Payment)
	switch {
	case err != nil:
		return "", "", err
	case !ok || rec.SessionID != sessionID:
		// Only a recorded session's URL was ever given to a buyer, and
		// Stripe's idempotency makes one session per hold: this cannot be
		// paid. Stripe keeps delivering it (an error), and the log says so.
		return "", "", fmt.Errorf("%w: session %s was paid for hold %s, whose record names %q: refund it in Stripe's dashboard", errUnmatched, sessionID, p.Hold.ID, rec.SessionID)
	case s.hooks.arrivalOrder && !p.Live:
		return booking.PaidRefund, refundReason(p, rec), nil // planted: a completed event for a hold that is not paying is taken as lost
	case !s.hooks.noEventLease && (rec.Status == StatusPaid || rec.Status == StatusRefunded):
		return booking.PaidNothing, "", nil
	case p.Hold.Status == booking.StatusOK:
		if s.hooks.noEventLease {
			return booking.PaidRefund, refundReason(p, rec), nil // planted: a duplicate, not recognised, looks like a payment whose seats are taken
		}
		return "", "", fmt.Errorf("payment: hold %s is confirmed while its record is %s", p.Hold.ID, rec.Status)
	case p.Live && !p.Started && p.Refused == nil:
		return booking.PaidConfirm, "", nil
	}
	if reason := refundReason(p, rec); reason != "" {
		return booking.PaidRefund, reason, nil
	}
	return booking.PaidLate, "", nil
}

// refundReason is why a payment that cannot confirm a live paying hold
// as it stands is refunded, or "" if it may be booked late: the hold
// released by its user (ReasonReleased) or by an operator's revoke
// (ReasonRevoked); seats taken since, or the screening started
// (ReasonSeatsLost); or the sale's rule the booking would break
// (PaidHold.Refused: ReasonSaleClosed, ReasonRevoked, ReasonSeatLimit).
func refundReason(p booking.PaidHold, rec Record) string {
	switch {
	case rec.EndedBy == string(booking.EndedByRevoke):
		return ReasonRevoked
	case rec.EndedBy == string(booking.EndedByUser) || (p.Hold.Status == booking.StatusReleased && rec.EndedBy == ""):
		return ReasonReleased
	case !p.SeatsFree || p.Started:
		return ReasonSeatsLost
	case errors.Is(p.Refused, booking.ErrSaleClosed):
		return ReasonSaleClosed
	case errors.Is(p.Refused, booking.ErrNotAdmitted):
		return ReasonRevoked
	case errors.Is(p.Refused, booking.ErrSeatLimit):
		return ReasonSeatLimit
	case p.Refused != nil:
		return ReasonSeatsLost // a refusal the gate did not name: the seats cannot be had
	}
	return ""
}

// applyEnded applies an expired or failed session: its paying hold is
// released (seats free at once) and its record expired.
func (s *Service) applyEnded(ctx context.Context, run *jobs.Run, holdID, sessionID string) (string, error) {
	outcome := OutcomeNothing
	_, err := s.bookings.EndPaying(ctx, holdID, sessionID, fenceOf(run), func(tx *firestore.Transaction, h booking.Hold, payment *firestore.DocumentSnapshot, released bool) error {
		outcome = OutcomeNothing
		rec, ok, err := recordOf(payment)
		if err != nil {
			return err
		}
		switch {
		case released:
			outcome = OutcomeExpired
		case s.hooks.arrivalOrder && ok:
			// planted: the record follows the last event to arrive
			outcome = OutcomeExpired
			if err := tx.Update(payment.Ref, []firestore.Update{{Path: "status", Value: StatusExpired}}); err != nil {
				return err
			}
		case ok && rec.Status == StatusOpen && rec.SessionID == sessionID:
			// The hold ended before (its user or its time): Stripe has
			// expired the session, so nothing is due there any more.
			outcome = OutcomeExpired
			if err := tx.Update(payment.Ref, []firestore.Update{
				{Path: "status", Value: StatusExpired}, {Path: "expireDue", Value: firestore.Delete}, {Path: "updatedAt", Value: firestore.ServerTimestamp},
			}); err != nil {
				return err
			}
		}
		return s.markDone(tx, run, outcome)
	})
	if err == nil && run != nil {
		run.Committed()
	}
	return outcome, err
}
