package payment_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// Checkouts and payments racing the holds' ends, with faults (issue #48's
// adversarial review of §10a): buyers on two tabs press Pay at once, one
// tab often goes away the moment Stripe has answered, Firestore's answers
// are dropped, delayed or reset at random, the sweep runs all along, and
// each buyer pays in time, pays after the hold lapsed, or walks away. Then:
// no checkoutUrl was answered for a session expired at Stripe before that
// answer (a dead URL), nor for a hold that had ended when it was asked,
// every session answered is its hold's recorded one
// (Stripe's idempotency replayed as Stripe does), and every completed
// payment is exactly one confirmed booking or one refund.
func TestCheckoutsAndPaymentsRacingExpiryNeverHandOutADeadSession(t *testing.T) {
	t.Parallel()
	project := firelocktest.ProjectID(t)
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	fs, _ := firelocktest.NewClientVia(t, p.Addr, project)
	e := newEnvOn(t, fs, true, withReplay(&replayer{}))
	direct := newEnvOn(t, firelocktest.NewClientFor(t, project), false)
	const buyers, holdFor = 12, 8 * time.Second
	holds := make([]booking.Hold, buyers)
	for i := range holds {
		holds[i] = direct.holdOf("quick", fmt.Sprintf("b%02d", i), holdFor, fmt.Sprintf("%c%d", 'A'+i/10, i%10+1))
	}

	type answer struct {
		holdID, session string
		sent, at        time.Time // when it was asked, and came back
		heldUntil       time.Time // as answered
	}
	var mu sync.Mutex
	var answers []answer
	paid := map[string]bool{}

	stop := make(chan struct{})
	chaos := p.InjectAtRandom(t, rand.New(rand.NewPCG(7, 7)), stop, nil)
	sweepDone := make(chan struct{})
	go func() { // the sweep, all along
		defer close(sweepDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			direct.pay.Sweep(context.Background(), time.Time{})
		}
	}()
	var wg sync.WaitGroup
	for i, h := range holds {
		rnd := rand.New(rand.NewPCG(uint64(i), 48))
		uid := h.UID
		checkout := func(tab int) {
			for try := 0; try < 60; try++ {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				if (tab+try)%2 == 0 { // this tab goes away once Stripe has answered
					ctx = context.WithValue(ctx, cutAfterStripe{}, cancel)
				}
				sent := time.Now()
				c, _, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: uid, HoldID: h.ID, Origin: "http://localhost:5173"})
				cancel()
				switch {
				case err == nil:
					u, _ := url.Parse(c.CheckoutURL)
					mu.Lock()
					answers = append(answers, answer{h.ID, u.Query().Get("session"), sent, time.Now(), c.HeldUntil})
					mu.Unlock()
					return
				case errors.Is(err, booking.ErrHoldExpired), errors.Is(err, booking.ErrHoldConfirmed):
					return
				}
				time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond) // the tabs share no rnd
			}
		}
		wg.Go(func() {
			var tabs sync.WaitGroup
			tabs.Go(func() { checkout(0) })
			tabs.Go(func() { checkout(1) })
			tabs.Wait()
			snap, err := direct.fs.Doc("payments/" + h.ID).Get(context.Background()) // the session, as recorded (if any)
			if err != nil {
				return // never turned paying (it lapsed first)
			}
			var r payment.Record
			if err := snap.DataTo(&r); err != nil {
				t.Error(err)
				return
			}
			s := direct.session(h.ID)
			var ev string
			switch rnd.IntN(3) {
			case 0: // pays at once
				ev = completed
			case 1: // comes back to Pay around the hold's end, and pays; a rival may want the seat
				until := direct.doc("holds/" + h.ID)["heldUntil"].(time.Time)
				time.Sleep(time.Until(until.Add(time.Duration(rnd.IntN(3000)-1500) * time.Millisecond)))
				checkout(2)
				if rnd.IntN(2) == 0 {
					direct.bookings.Hold(context.Background(), "x", booking.Request{UID: uid + "-rival", ScreeningID: "quick", Seats: h.Seats, RequestID: "rival"}, time.Minute)
				}
				ev = completed
			default: // walks away
				ev = expired
			}
			if ev == completed {
				mu.Lock()
				paid[h.ID] = true
				mu.Unlock()
			}
			for attempt := 0; attempt < 60; attempt++ {
				if _, err := e.deliver(ev, "", s); err == nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Errorf("%s for hold %s was never applied", ev, h.ID)
		})
	}
	wg.Wait()
	close(stop)
	<-chaos
	<-sweepDone
	for range 3 { // settle what the faults left due
		if err := direct.pay.Sweep(context.Background(), time.Time{}); err == nil {
			break
		}
	}

	if len(answers) < buyers/2 {
		t.Fatalf("%d answers over %d holds (%d Firestore faults): the stories did not happen", len(answers), buyers, p.Faults())
	}
	// No dead URL: no session answered after it was expired at Stripe.
	expiredAt := map[string]time.Time{}
	for _, c := range e.stripe.list() {
		if isExpire(c) {
			s := strings.TrimSuffix(strings.TrimPrefix(c.Path, "/v1/checkout/sessions/"), "/expire")
			if at, ok := expiredAt[s]; !ok || c.At.Before(at) {
				expiredAt[s] = c.At
			}
		}
	}
	for _, a := range answers {
		if at, ok := expiredAt[a.session]; ok && at.Before(a.at) {
			t.Errorf("hold %s: checkoutUrl of session %s answered at %s, after the session was expired at Stripe at %s",
				a.holdID, a.session, a.at.Format("15:04:05.000"), at.Format("15:04:05.000"))
		}
		// The emulator's clock is this machine's: a hold that had ended
		// when the call was sent is not paid for (CONTRACT §10a).
		if !a.heldUntil.After(a.sent) {
			t.Errorf("hold %s: a checkoutUrl answered for a hold that had ended (heldUntil %s, asked at %s)",
				a.holdID, a.heldUntil.Format("15:04:05.000"), a.sent.Format("15:04:05.000"))
		}
		if r := direct.record(a.holdID); r.SessionID != a.session {
			t.Errorf("hold %s: answered session %s, recorded %s", a.holdID, a.session, r.SessionID)
		}
	}
	// Every completed payment: one confirmed booking, or one refund.
	booked, refunded := 0, 0
	for id := range paid {
		r := direct.record(id)
		hd := direct.doc("holds/" + id)
		switch {
		case r.Status == payment.StatusPaid && r.BookingID != "" && !r.RefundDue && hd["status"] == booking.StatusOK &&
			direct.doc("bookings/" + r.BookingID)["status"] == booking.StatusOK:
			booked++
		case r.Status == payment.StatusRefunded && r.RefundID != "" && r.BookingID == "" && hd["status"] != booking.StatusOK:
			refunded++
		default:
			t.Errorf("hold %s paid: record %+v, hold %v", id, r, hd["status"])
		}
	}
	t.Logf("%d answers over %d holds; %d paid: %d booked, %d refunded; %d sessions expired at Stripe; %d Firestore faults",
		len(answers), buyers, len(paid), booked, refunded, len(expiredAt), p.Faults())
}
