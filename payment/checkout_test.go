package payment_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
)

func TestCheckoutMakesOneSessionAndTurnsTheHoldPaying(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	h := e.hold("u1", 60*time.Second, "A3", "B4")
	c, created, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
	if err != nil || !created {
		t.Fatalf("checkout: %v created %v", err, created)
	}
	// Row A is 20.00, the rest 12.50.
	if c.Amount != 2000+1250 || c.Currency != "eur" || c.CheckoutURL == "" {
		t.Fatalf("checkout %+v: want 3250 eur and a URL", c)
	}
	// The hold is paying and kept for payHoldSeconds (600 s default) from
	// the commit, on the hold and on its seats alike.
	hd := e.doc("holds/" + h.ID)
	until := hd["heldUntil"].(time.Time)
	if hd["status"] != "paying" || until.Before(h.HeldUntil.Add(500*time.Second)) {
		t.Fatalf("hold after checkout: %v, heldUntil %v (was %v)", hd, until, h.HeldUntil)
	}
	for _, seat := range h.Seats {
		if s := e.doc("screenings/s1/seats/" + seat); !s["heldUntil"].(time.Time).Equal(until) || s["holdId"] != h.ID {
			t.Fatalf("seat %s after checkout: %v", seat, s)
		}
	}
	r := e.record(h.ID)
	if r.Status != payment.StatusOpen || r.UID != "u1" || r.Amount != 3250 || r.SessionID == "" || !strings.Contains(r.ReturnURL, "screening=s1") {
		t.Fatalf("record %+v", r)
	}
	// A retry answers the same checkout and asks Stripe nothing.
	before := e.stripe.count(anyCall)
	again, created, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
	if err != nil || created || again != c {
		t.Fatalf("retry: %+v created %v err %v; want %+v", again, created, err, c)
	}
	if n := e.stripe.count(anyCall); n != before {
		t.Fatalf("a retry made %d Stripe calls", n-before)
	}
	// One session, created with the key derived from the hold.
	if n := e.stripe.count(isCreate); n != 1 || e.stripe.count(keyOf("firelock-checkout-"+h.ID)) != 1 {
		t.Fatalf("Stripe calls %+v: want one create keyed by the hold", e.stripe.list())
	}
}

func TestCheckoutRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	mine := e.hold("u1", 60*time.Second, "C1")
	lapsing := e.hold("u1", 5*time.Second, "C2")
	confirmed := e.holdOf("free1", "u1", 60*time.Second, "C3")
	free := e.holdOf("free1", "u1", 60*time.Second, "C4")
	if _, _, err := e.bookings.ConfirmHold(ctx, "u1", confirmed.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // lapsing has ended
	cases := []struct {
		name, uid, hold string
		want            error
	}{
		{"another user's hold", "u2", mine.ID, booking.ErrForbidden},
		{"no such hold", "u1", "nope", booking.ErrHoldNotFound},
		{"a lapsed hold", "u1", lapsing.ID, booking.ErrHoldExpired},
		{"a confirmed hold", "u1", confirmed.ID, booking.ErrHoldConfirmed},
		{"a free screening", "u1", free.ID, payment.ErrNotPriced},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: c.uid, HoldID: c.hold, Origin: "http://localhost:5173"})
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if d := e.doc("payments/" + c.hold); d != nil {
				t.Fatalf("a refused checkout wrote payments/%s: %v", c.hold, d)
			}
		})
	}
	if hd := e.doc("holds/" + mine.ID); hd["status"] != "held" || !hd["heldUntil"].(time.Time).Equal(mine.HeldUntil) {
		t.Fatalf("another user's checkout changed the hold: %v", hd)
	}
	if n := e.stripe.count(anyCall); n != 0 {
		t.Fatalf("refused checkouts called Stripe %d times: %+v", n, e.stripe.list())
	}
}

func TestPricedScreeningsAreBookedOnlyByPaying(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "u1", ScreeningID: "s1", Seats: []string{"D1"}, RequestID: "b1"}); !errors.Is(err, booking.ErrPaymentRequired) {
		t.Fatalf("BookSeats on a priced screening: %v, want ErrPaymentRequired", err)
	}
	h := e.hold("u1", 60*time.Second, "D2")
	if _, _, err := e.bookings.ConfirmHold(ctx, "u1", h.ID); !errors.Is(err, booking.ErrPaymentRequired) {
		t.Fatalf("ConfirmHold on a priced screening: %v, want ErrPaymentRequired", err)
	}
	e.checkout("u1", h.ID)
	if _, _, err := e.bookings.ConfirmHold(ctx, "u1", h.ID); !errors.Is(err, booking.ErrPaymentRequired) {
		t.Fatalf("ConfirmHold on a paying hold: %v, want ErrPaymentRequired", err)
	}
	if d := e.doc("screenings/s1/seats/D1"); d != nil {
		t.Fatalf("a refused booking took D1: %v", d)
	}
	// A free screening is unchanged (CONTRACT §3).
	if _, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "u1", ScreeningID: "free1", Seats: []string{"D1"}, RequestID: "b2"}); err != nil {
		t.Fatalf("BookSeats on a free screening: %v", err)
	}
}

func TestStripeOutOfReachAnswersUnavailableAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAPIURL("http://127.0.0.1:1")) // nothing listens on port 1
	h := e.hold("u1", 60*time.Second, "E5")
	_, _, err := e.pay.Checkout(context.Background(), payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
	if !errors.Is(err, payment.ErrStripeUnavailable) {
		t.Fatalf("checkout with Stripe out of reach: %v, want ErrStripeUnavailable", err)
	}
	if hd := e.doc("holds/" + h.ID); hd["status"] != "held" || !hd["heldUntil"].(time.Time).Equal(h.HeldUntil) {
		t.Fatalf("the hold changed: %v", hd)
	}
	if d := e.doc("payments/" + h.ID); d != nil {
		t.Fatalf("a record was written: %v", d)
	}
	// stripe-go tried three times (two retries), with one key.
	calls := e.stripe.list()
	if len(calls) != 3 || calls[0].Key != calls[2].Key || calls[0].Key != "firelock-checkout-"+h.ID {
		t.Fatalf("attempts %+v: want 3 with the hold's key", calls)
	}
}
