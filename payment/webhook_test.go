package payment_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/payment"
	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

const (
	completed = "checkout.session.completed"
	expired   = "checkout.session.expired"
)

// sold is the tickets-sold count of a screening (an exact count).
func (e *env) sold(screening string) int64 {
	e.t.Helper()
	c, err := counter.Open(context.Background(), e.fs, booking.CounterID(screening))
	if errors.Is(err, counter.ErrNotFound) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := c.Count(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestACompletedPaymentConfirmsTheHoldOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.hold("u1", 60*time.Second, "B1", "B2")
	e.checkout("u1", h.ID)
	s := e.session(h.ID)
	ev := stripelocal.NewEventID()
	if rc := e.mustDeliver(completed, ev, s); rc.Outcome != payment.OutcomePaid || rc.HoldID != h.ID {
		t.Fatalf("first delivery: %+v", rc)
	}
	r := e.record(h.ID)
	if r.Status != payment.StatusPaid || r.BookingID == "" || r.PaymentIntentID != s.PaymentIntent() || r.PaidAt == nil || r.LateAccepted {
		t.Fatalf("record after payment: %+v", r)
	}
	b := e.doc("bookings/" + r.BookingID)
	pay, _ := b["payment"].(map[string]any)
	if b["status"] != "confirmed" || b["holdId"] != h.ID || pay["sessionId"] != s.ID || pay["paymentIntentId"] != s.PaymentIntent() || pay["amount"] != int64(2500) {
		t.Fatalf("booking %v", b)
	}
	for _, seat := range h.Seats {
		if d := e.doc("screenings/s1/seats/" + seat); d["status"] != "booked" || d["bookingId"] != r.BookingID {
			t.Fatalf("seat %s: %v", seat, d)
		}
	}
	if hd := e.doc("holds/" + h.ID); hd["status"] != "confirmed" || hd["bookingId"] != r.BookingID {
		t.Fatalf("hold %v", hd)
	}
	if n := e.sold("s1"); n != 2 {
		t.Fatalf("tickets sold %d, want 2", n)
	}
	if d := e.doc("stripeEvents/" + ev); d["state"] != "done" || d["type"] != completed || d["holdId"] != h.ID {
		t.Fatalf("stripeEvents/%s: %v", ev, d)
	}

	// The same event again, and another event of the same payment (Stripe
	// sends async_payment_succeeded too for some methods): nothing changes.
	before, _ := e.fs.Doc("payments/" + h.ID).Get(context.Background())
	if rc := e.mustDeliver(completed, ev, s); rc.Outcome != payment.OutcomeDuplicate {
		t.Fatalf("the same event again: %+v", rc)
	}
	if rc := e.mustDeliver("checkout.session.async_payment_succeeded", "", s); rc.Outcome != payment.OutcomeDuplicate {
		t.Fatalf("another event of the same payment: %+v", rc)
	}
	after, _ := e.fs.Doc("payments/" + h.ID).Get(context.Background())
	if !after.UpdateTime.Equal(before.UpdateTime) || e.sold("s1") != 2 {
		t.Fatalf("a duplicate changed the record (%v -> %v) or the count (%d)", before.UpdateTime, after.UpdateTime, e.sold("s1"))
	}
	if got := e.payments(); got[payment.OutcomePaid] != 1 || got[payment.OutcomeDuplicate] != 2 {
		t.Fatalf("firelock.payments %v: want paid 1, duplicate 2", got)
	}
}

func TestDuplicateDeliveriesAtOnceApplyTheEventOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.hold("u1", 60*time.Second, "C7")
	e.checkout("u1", h.ID)
	s := e.session(h.ID)
	ev := stripelocal.NewEventID()
	var wg sync.WaitGroup
	outcomes := make([]string, 4)
	for i := range outcomes {
		wg.Go(func() {
			for {
				rc, err := e.deliver(completed, ev, s)
				if errors.Is(err, jobs.ErrInProgress) { // Stripe would deliver it again
					continue
				}
				if err != nil {
					t.Errorf("delivery %d: %v", i, err)
				}
				outcomes[i] = rc.Outcome
				return
			}
		})
	}
	wg.Wait()
	paid := 0
	for _, o := range outcomes {
		switch o {
		case payment.OutcomePaid:
			paid++
		case payment.OutcomeDuplicate:
		default:
			t.Errorf("outcome %q", o)
		}
	}
	if paid != 1 || e.sold("s1") != 1 {
		t.Fatalf("outcomes %v, sold %d: want one paid and one seat sold", outcomes, e.sold("s1"))
	}
}

func TestWebhookRefusesWhatStripeDidNotSignAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	h := e.hold("u1", 60*time.Second, "D4")
	e.checkout("u1", h.ID)
	s := e.session(h.ID)
	ev := stripelocal.Event(completed, "", s)
	other := stripelocal.NewWebhookSecret()
	cases := []struct {
		name, body, sig string
		want            error
	}{
		{"no signature", string(ev), "", payment.ErrInvalidSignature},
		{"another endpoint's secret", string(ev), stripelocal.Sign(ev, other, time.Now()), payment.ErrInvalidSignature},
		{"a stale signature", string(ev), stripelocal.Sign(ev, e.secret, time.Now().Add(-webhook.DefaultTolerance-5*time.Second)), payment.ErrInvalidSignature},
		{"a changed body", strings.Replace(string(ev), `"amount_total":1250`, `"amount_total":1`, 1), stripelocal.Sign(ev, e.secret, time.Now()), payment.ErrInvalidSignature},
		{"a garbled header", string(ev), "t=abc,v1=zz", payment.ErrInvalidSignature},
		{"signed, not JSON", "{not json", stripelocal.Sign([]byte("{not json"), e.secret, time.Now()), payment.ErrBadEvent},
		{"signed, an older API version", strings.Replace(string(ev), stripe.APIVersion, "2020-08-27", 1), "", payment.ErrBadEvent},
		{"signed, another release train", strings.Replace(string(ev), stripe.APIVersion, "2025-03-31.basil", 1), "", payment.ErrBadEvent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sig := c.sig
			if sig == "" && c.want == payment.ErrBadEvent {
				sig = stripelocal.Sign([]byte(c.body), e.secret, time.Now())
			}
			rc, err := e.pay.HandleWebhook(ctx, "x", []byte(c.body), sig)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %+v %v, want %v", rc, err, c.want)
			}
		})
	}
	if snaps, _ := e.fs.Collection(payment.Events).Documents(ctx).GetAll(); len(snaps) != 0 {
		t.Fatalf("refused deliveries wrote %d stripeEvents", len(snaps))
	}
	if r := e.record(h.ID); r.Status != payment.StatusOpen {
		t.Fatalf("record %+v", r)
	}
	if got := e.payments(); got[payment.OutcomeInvalidSignature] != 5 {
		t.Fatalf("firelock.payments %v: want invalid_signature 5", got)
	}

	// An event type firelock does not act on, and an event for a hold it
	// does not have: answered (nil) and ignored.
	for _, c := range []struct {
		t, hold, want string
	}{{"charge.refunded", h.ID, payment.OutcomeIgnored}, {completed, "no-such-hold", payment.OutcomeUnknownHold}} {
		s2 := s
		s2.HoldID = c.hold
		rc, err := e.deliver(c.t, "", s2)
		if err != nil || rc.Outcome != c.want {
			t.Fatalf("%s for %s: %+v %v, want %s", c.t, c.hold, rc, err, c.want)
		}
	}
	if snaps, _ := e.fs.Collection(payment.Events).Documents(ctx).GetAll(); len(snaps) != 0 {
		t.Fatalf("ignored events wrote %d stripeEvents", len(snaps))
	}
}

func TestAnExpiredSessionReleasesItsHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.hold("u1", 60*time.Second, "E1", "E2")
	e.checkout("u1", h.ID)
	s := e.session(h.ID)
	if rc := e.mustDeliver(expired, "", s); rc.Outcome != payment.OutcomeExpired {
		t.Fatalf("expired: %+v", rc)
	}
	if hd := e.doc("holds/" + h.ID); hd["status"] != "released" {
		t.Fatalf("hold %v", hd)
	}
	for _, seat := range h.Seats {
		if d := e.doc("screenings/s1/seats/" + seat); d != nil {
			t.Fatalf("seat %s still shows %v", seat, d)
		}
	}
	if r := e.record(h.ID); r.Status != payment.StatusExpired || r.EndedBy != string(booking.EndedByCheckout) {
		t.Fatalf("record %+v", r)
	}
	// The same session's expiry again changes nothing.
	if rc := e.mustDeliver(expired, "", s); rc.Outcome != payment.OutcomeNothing {
		t.Fatalf("expired again: %+v", rc)
	}
}

func TestALatePaymentIsBookedWhileItsSeatsAreFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdOf("quick", "u1", 5*time.Second, "A1", "A2")
	e.checkout("u1", h.ID)
	time.Sleep(time.Until(h.HeldUntil) + time.Second) // the hold lapses unpaid
	if rc := e.mustDeliver(completed, "", e.session(h.ID)); rc.Outcome != payment.OutcomeLateAccepted {
		t.Fatalf("late payment: %+v", rc)
	}
	r := e.record(h.ID)
	if r.Status != payment.StatusPaid || !r.LateAccepted || r.BookingID == "" {
		t.Fatalf("record %+v", r)
	}
	for _, seat := range h.Seats {
		if d := e.doc("screenings/quick/seats/" + seat); d["status"] != "booked" || d["bookingId"] != r.BookingID {
			t.Fatalf("seat %s: %v", seat, d)
		}
	}
	if e.sold("quick") != 2 || e.stripe.count(isRefund) != 0 {
		t.Fatalf("sold %d, refunds %d", e.sold("quick"), e.stripe.count(isRefund))
	}
}

func TestALatePaymentForSeatsTakenSinceIsRefundedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdOf("quick", "u1", 5*time.Second, "B1", "B2")
	e.checkout("u1", h.ID)
	time.Sleep(time.Until(h.HeldUntil) + time.Second)
	other := e.holdOf("quick", "u2", 60*time.Second, "B2") // free again: u2 holds it
	ev := stripelocal.NewEventID()
	if rc := e.mustDeliver(completed, ev, e.session(h.ID)); rc.Outcome != payment.OutcomeRefunded {
		t.Fatalf("late payment for a taken seat: %+v", rc)
	}
	r := e.record(h.ID)
	if r.Status != payment.StatusRefunded || r.RefundReason != payment.ReasonSeatsLost || r.RefundID == "" || r.BookingID != "" || r.RefundDue {
		t.Fatalf("record %+v", r)
	}
	if d := e.doc("screenings/quick/seats/B2"); d["holdId"] != other.ID {
		t.Fatalf("u2's seat: %v", d)
	}
	if d := e.doc("screenings/quick/seats/B1"); d != nil && d["status"] == "booked" {
		t.Fatalf("B1 was booked: %v", d)
	}
	if e.sold("quick") != 0 {
		t.Fatalf("sold %d", e.sold("quick"))
	}
	e.mustDeliver(completed, ev, e.session(h.ID))
	e.mustDeliver(completed, "", e.session(h.ID))
	if n := e.stripe.count(isRefund); n != 1 || e.stripe.count(keyOf("firelock-refund-"+h.ID)) != 1 {
		t.Fatalf("refund calls %d: want 1, keyed by the hold", n)
	}
}

func TestAPaymentForAHoldItsUserReleasedIsRefunded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.hold("u1", 60*time.Second, "C3")
	e.checkout("u1", h.ID)
	s := e.session(h.ID)
	if _, err := e.pay.ReleaseHold(context.Background(), "u1", h.ID); err != nil {
		t.Fatal(err)
	}
	// Released: the seat is free, and the session was expired at Stripe.
	if d := e.doc("screenings/s1/seats/C3"); d != nil {
		t.Fatalf("seat %v", d)
	}
	if r := e.record(h.ID); r.Status != payment.StatusExpired || r.EndedBy != string(booking.EndedByUser) || e.stripe.count(isExpire) != 1 {
		t.Fatalf("record %+v, expire calls %d", r, e.stripe.count(isExpire))
	}
	// A payment that completes all the same goes back: the user let go.
	if rc := e.mustDeliver(completed, "", s); rc.Outcome != payment.OutcomeRefunded {
		t.Fatalf("%+v", rc)
	}
	if r := e.record(h.ID); r.Status != payment.StatusRefunded || r.RefundReason != payment.ReasonReleased {
		t.Fatalf("record %+v", r)
	}
}

func TestCancellingAPaidBookingRefundsItOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	h := e.hold("u1", 60*time.Second, "D8", "D9")
	e.checkout("u1", h.ID)
	e.mustDeliver(completed, "", e.session(h.ID))
	bookingID := e.record(h.ID).BookingID
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := e.pay.CancelBooking(ctx, "u1", bookingID); err != nil {
				t.Errorf("cancel: %v", err)
			}
		})
	}
	wg.Wait()
	r := e.record(h.ID)
	b := e.doc("bookings/" + bookingID)
	if r.Status != payment.StatusRefunded || r.RefundReason != payment.ReasonCancelled || b["status"] != "cancelled" || b["refundId"] != r.RefundID {
		t.Fatalf("record %+v, booking %v", r, b)
	}
	if e.stripe.count(keyOf("firelock-refund-"+h.ID)) < 1 || distinctKeys(e.stripe.list(), isRefund) != 1 {
		t.Fatalf("refund calls %+v: want one refund (one key)", e.stripe.list())
	}
	if e.sold("s1") != 0 {
		t.Fatalf("sold %d", e.sold("s1"))
	}
	if got := e.payments(); got[payment.OutcomeRefunded] != 1 {
		t.Fatalf("firelock.payments %v: want refunded 1", got)
	}
}

func TestTheSweepExpiresTheSessionOfAPayingHoldThatLapsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdOf("quick", "u1", 5*time.Second, "E9")
	e.checkout("u1", h.ID)
	time.Sleep(time.Until(h.HeldUntil) + time.Second)
	if err := e.pay.Sweep(context.Background(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if hd := e.doc("holds/" + h.ID); hd["status"] != "expired" {
		t.Fatalf("hold %v", hd)
	}
	if r := e.record(h.ID); r.Status != payment.StatusExpired || r.EndedBy != string(booking.EndedByTime) || r.ExpireDue {
		t.Fatalf("record %+v", r)
	}
	if n := e.stripe.count(isExpire); n != 1 {
		t.Fatalf("expire calls %d", n)
	}
	// Nothing is due any more: a second sweep calls nobody.
	if err := e.pay.Sweep(context.Background(), time.Time{}); err != nil || e.stripe.count(isExpire) != 1 {
		t.Fatalf("second sweep: %v, expire calls %d", err, e.stripe.count(isExpire))
	}
}

// distinctKeys counts the distinct idempotency keys of the calls that match.
func distinctKeys(calls []call, match func(call) bool) int {
	keys := map[string]bool{}
	for _, c := range calls {
		if match(c) {
			keys[c.Key] = true
		}
	}
	return len(keys)
}

func TestTakingsCountWhatWasPaidAndRefunded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Minute)
	// Paid in time (12.50), paid late and booked (9.00), paid late and
	// refunded because its seat was taken (9.00 in, 9.00 out).
	inTime := e.hold("u1", 60*time.Second, "C1")
	e.checkout("u1", inTime.ID)
	lateFree := e.holdOf("quick", "u2", 5*time.Second, "D1")
	e.checkout("u2", lateFree.ID)
	lateGone := e.holdOf("quick", "u3", 5*time.Second, "D2")
	e.checkout("u3", lateGone.ID)
	time.Sleep(time.Until(lateGone.HeldUntil) + time.Second)
	e.holdOf("quick", "u4", 60*time.Second, "D2")
	for _, h := range []string{inTime.ID, lateFree.ID, lateGone.ID} {
		e.mustDeliver(completed, "", e.session(h))
	}
	ledger := payment.NewLedger(e.fs)
	for _, c := range []struct {
		screening              string
		revenue, refunds, late int64
	}{{"s1", 1250, 0, 0}, {"quick", 1800, 900, 1}} {
		rev, ref, late, err := ledger.Takings(ctx, c.screening, start, time.Now().Add(time.Minute))
		if err != nil || rev != c.revenue || ref != c.refunds || late != c.late {
			t.Errorf("%s: takings %d, %d, %d (%v); want %d, %d, %d", c.screening, rev, ref, late, err, c.revenue, c.refunds, c.late)
		}
	}
	if rev, ref, late, err := ledger.Takings(ctx, "quick", start.Add(-time.Hour), start); err != nil || rev+ref+late != 0 {
		t.Errorf("takings before anything was paid: %d, %d, %d (%v)", rev, ref, late, err)
	}
}
