package payment_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
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

// A checkout cut off for a passing reason after Stripe made its session
// (the caller went away, Firestore could not be reached, or the commit
// that turned the hold paying landed with its answer lost) leaves the
// session for its retry (CONTRACT §10a): Stripe, which replays the first
// answer to the hold's idempotency key, hands the retry that very session,
// so expiring it would give the buyer a checkoutUrl nobody can pay. The
// retry's session is never expired, and the hold is paid through it. The
// replayer also answers idempotency_error to a retry whose parameters
// differ (expires_at, say), as Stripe does.
func TestACheckoutCutOffAfterStripeMadeItsSessionLeavesItForTheRetry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// cut arranges the cut-off on the first attempt, whose context
		// cancel ends; landed: the hold turned paying all the same.
		cut    func(e *env, rp *replayer, dark *firelocktest.Proxy, cancel func())
		landed bool
	}{
		{"the caller went away", func(_ *env, rp *replayer, _ *firelocktest.Proxy, cancel func()) { rp.afterCreate = cancel }, false},
		{"Firestore unavailable", func(_ *env, rp *replayer, dark *firelocktest.Proxy, _ func()) {
			rp.afterCreate = func() { dark.DropAnswers(200 * time.Millisecond) }
		}, false},
		{"the commit landed unheard", func(e *env, _ *replayer, dark *firelocktest.Proxy, _ func()) {
			var once sync.Once
			payment.BeforePaying(e.pay, func() { once.Do(func() { dark.DropAnswers(200 * time.Millisecond) }) })
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			project := firelocktest.ProjectID(t)
			dark := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
			fs, _ := firelocktest.NewClientVia(t, dark.Addr, project)
			direct := firelocktest.NewClientFor(t, project)
			rp := &replayer{}
			e := newEnvOn(t, fs, true, withReplay(rp))
			h := e.hold("u1", 120*time.Second, "B5")

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			c.cut(e, rp, dark, cancel)
			_, _, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
			cancel()
			dark.Heal()
			if err == nil {
				t.Fatalf("the cut-off checkout answered success")
			}
			snap, rerr := direct.Doc("holds/" + h.ID).Get(context.Background())
			if rerr != nil {
				t.Fatal(rerr)
			}
			if got := snap.Data()["status"]; (got == booking.StatusPaying) != c.landed {
				t.Fatalf("after the cut-off (%v) the hold is %v; want paying %v", err, got, c.landed)
			}

			// The buyer tries again.
			co, _, err := e.pay.Checkout(context.Background(), payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
			if err != nil {
				t.Fatalf("the retry: %v", err)
			}
			u, err := url.Parse(co.CheckoutURL)
			if err != nil {
				t.Fatal(err)
			}
			session := u.Query().Get("session")
			if r := e.record(h.ID); session == "" || r.SessionID != session || r.Status != payment.StatusOpen {
				t.Fatalf("the retry answered %s; the record is %+v", co.CheckoutURL, r)
			}
			for _, call := range e.stripe.list() {
				if isExpire(call) {
					t.Fatalf("%s %s: the session the retry hands out (%s) was expired at Stripe", call.Method, call.Path, session)
				}
			}
			if n := distinctKeys(e.stripe.list(), isCreate); n != 1 {
				t.Fatalf("session creates with %d keys, want the hold's one", n)
			}
			if rc := e.mustDeliver(completed, "", e.session(h.ID)); rc.Outcome != payment.OutcomePaid {
				t.Fatalf("paying the retry's session: %+v, want paid", rc)
			}
			if hd := e.doc("holds/" + h.ID); hd["status"] != booking.StatusOK {
				t.Fatalf("the paid hold is %v", hd["status"])
			}
		})
	}
}

// Paying never moves a hold's end earlier (CONTRACT §10a): a hold with
// 900 s left on a screening that keeps paying holds 3 s keeps its end.
func TestPayingNeverMovesTheHoldsEndEarlier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdOf("quick", "u1", 900*time.Second, "A9")
	c := e.checkout("u1", h.ID)
	hd := e.doc("holds/" + h.ID)
	if until := hd["heldUntil"].(time.Time); hd["status"] != "paying" || !until.Equal(h.HeldUntil) || !c.HeldUntil.Equal(h.HeldUntil) {
		t.Fatalf("paying moved the hold's end from %v to %v (answered %v)", h.HeldUntil, until, c.HeldUntil)
	}
	if s := e.doc("screenings/quick/seats/A9"); !s["heldUntil"].(time.Time).Equal(h.HeldUntil) {
		t.Fatalf("seat A9 after paying: %v", s)
	}
}

// CheckoutHold of a paying hold whose heldUntil has passed answers
// hold_expired (CONTRACT §10a), judged by Firestore's clock, before the
// sweep has marked it: alone, or with one of its seats held by another
// user since. Nothing changes, and Stripe is not called.
func TestCheckoutOfAPayingHoldPastItsEndIsExpired(t *testing.T) {
	t.Parallel()
	for _, taken := range []bool{false, true} {
		name := map[bool]string{false: "its seats free", true: "a seat held by another"}[taken]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			h := e.holdOf("quick", "u1", 5*time.Second, "C7", "C8") // paying keeps it 3 s: it ends at 5 s
			first := e.checkout("u1", h.ID)
			time.Sleep(time.Until(first.HeldUntil) + 1500*time.Millisecond)
			if taken {
				e.holdOf("quick", "u2", 120*time.Second, "C8")
			}
			calls := len(e.stripe.list())
			c, _, err := e.pay.Checkout(context.Background(), payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
			if !errors.Is(err, booking.ErrHoldExpired) {
				t.Fatalf("checkout of a paying hold past its end (%v): %+v %v, want ErrHoldExpired", first.HeldUntil, c, err)
			}
			if hd := e.doc("holds/" + h.ID); hd["status"] != "paying" {
				t.Fatalf("the refused checkout changed the hold: %v", hd)
			}
			if r := e.record(h.ID); r.Status != payment.StatusOpen || r.ExpireDue {
				t.Fatalf("the refused checkout changed the record: %+v", r)
			}
			if n := len(e.stripe.list()); n != calls {
				t.Fatalf("the refused checkout called Stripe %d times", n-calls)
			}
		})
	}
}
