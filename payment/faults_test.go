package payment_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/payment"
)

// Between the functions and Stripe, a network that drops answers (Stripe
// did the work), holds them back past the client's deadline, or resets
// connections. Every attempt of a checkout carries the hold's one key, so
// Stripe makes one session of them all; an attempt that fails leaves the
// hold as it was, and one that succeeds leaves it paying with one record.
func TestCheckoutThroughAFaultyNetworkCarriesOneKeyAndLeavesNothingHalfDone(t *testing.T) {
	t.Parallel()
	proxy := firelocktest.NewProxy(t, strings.TrimPrefix(mock.URL, "http://"))
	e := newEnv(t, withAPIURL("http://"+proxy.Addr))
	ctx := context.Background()
	faults := []struct {
		name   string
		inject func() error
	}{
		{"answers dropped", func() error { return proxy.DropAnswers(500 * time.Millisecond) }},
		{"answers late", func() error { return proxy.Delay(4 * time.Second) }}, // the client gives up after 3 s
		{"connections reset", proxy.Reset},
	}
	seats := []string{"C1", "C2", "C3"}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			h := e.hold("u1", 120*time.Second, seats[i])
			if err := f.inject(); err != nil {
				t.Fatal(err)
			}
			_, _, err := e.pay.Checkout(ctx, payment.CheckoutRequest{UID: "u1", HoldID: h.ID, Origin: "http://localhost:5173"})
			proxy.Heal()
			if !errors.Is(err, payment.ErrStripeUnavailable) {
				t.Fatalf("checkout through %s: %v, want ErrStripeUnavailable", f.name, err)
			}
			if hd := e.doc("holds/" + h.ID); hd["status"] != "held" || e.doc("payments/"+h.ID) != nil {
				t.Fatalf("a failed checkout left the hold %v and a record %v", hd, e.doc("payments/"+h.ID))
			}
			c := e.checkout("u1", h.ID) // Stripe is back: the buyer tries again
			if r := e.record(h.ID); r.Status != payment.StatusOpen || r.Amount != c.Amount || e.doc("holds/" + h.ID)["status"] != "paying" {
				t.Fatalf("after the retry: record %+v", r)
			}
			key := "firelock-checkout-" + h.ID
			attempts := e.stripe.count(keyOf(key))
			if attempts < 2 {
				t.Fatalf("%d attempts with key %s", attempts, key)
			}
			t.Logf("%s: %d attempts, all with the hold's key", f.name, attempts)
		})
	}
	if n, k := e.stripe.count(isCreate), distinctKeys(e.stripe.list(), isCreate); k != len(faults) {
		t.Fatalf("%d session creates with %d keys: want one key per hold", n, k)
	}
}

// A refund whose answers are lost is made again with the same key until
// it is recorded; the booking is cancelled at once either way.
func TestARefundThroughAFaultyNetworkIsMadeOnce(t *testing.T) {
	t.Parallel()
	proxy := firelocktest.NewProxy(t, strings.TrimPrefix(mock.URL, "http://"))
	e := newEnv(t, withAPIURL("http://"+proxy.Addr))
	ctx := context.Background()
	h := e.hold("u1", 120*time.Second, "D1")
	e.checkout("u1", h.ID)
	e.mustDeliver(completed, "", e.session(h.ID))
	bookingID := e.record(h.ID).BookingID
	if err := proxy.DropAnswers(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b, err := e.pay.CancelBooking(ctx, "u1", bookingID)
	if err != nil || b.Status != "cancelled" || b.RefundID != "" {
		t.Fatalf("cancel with Stripe's answers lost: %+v %v (want cancelled, refund still due)", b, err)
	}
	if r := e.record(h.ID); !r.RefundDue || r.Status != payment.StatusPaid {
		t.Fatalf("record %+v: want the refund due", r)
	}
	proxy.Heal()
	if err := e.pay.Sweep(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r := e.record(h.ID)
	if r.Status != payment.StatusRefunded || r.RefundID == "" || e.doc("bookings/" + bookingID)["refundId"] != r.RefundID {
		t.Fatalf("after the sweep: record %+v", r)
	}
	if k := distinctKeys(e.stripe.list(), isRefund); k != 1 || e.stripe.count(isRefund) < 2 {
		t.Fatalf("refund attempts %d with %d keys: want several, one key", e.stripe.count(isRefund), k)
	}
}

// A webhook run that goes dark between its deciding commit and the refund
// it decided (its instance crashed, or lost the network): its lease ends
// unrenewed, and the next delivery of the event takes the event over and
// finishes it: one refund, recorded, the event done.
func TestAWebhookRunCutOffMidwayIsFinishedByTheNextDelivery(t *testing.T) {
	t.Parallel()
	project := firelocktest.ProjectID(t)
	dark := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	fsA, optsA := firelocktest.NewClientVia(t, dark.Addr, project)
	withLockVia := func(_ *payment.Config, o *[]payment.Option) {
		*o = append(*o, payment.WithEventOptions(jobs.WithLease(3*time.Second), jobs.WithLockOptions(lock.WithClientOptions(optsA...))))
	}
	b := newEnvOn(t, firelocktest.NewClientFor(t, project), true)
	a := newEnvOn(t, fsA, false, withLockVia) // each service checks its own endpoint secret

	// A late payment for a seat taken since: its event decides a refund.
	h := b.holdOf("quick", "u1", 5*time.Second, "E4")
	b.checkout("u1", h.ID)
	time.Sleep(time.Until(h.HeldUntil) + time.Second)
	b.holdOf("quick", "u2", 120*time.Second, "E4")

	cut := make(chan struct{})
	payment.BeforeSettle(a.pay, func(string) {
		dark.Blackhole() // A goes dark with the refund decided and not made
		close(cut)
	})
	ev := stripelocal.NewEventID()
	s := b.session(h.ID)
	var aErr error
	aDone := make(chan struct{})
	go func() { _, aErr = a.deliver(completed, ev, s); close(aDone) }()
	select {
	case <-cut:
	case <-aDone:
		t.Fatalf("the first delivery ended before deciding the refund: %v", aErr)
	}
	// Stripe delivers the event again (A's answer never came).
	var rc payment.Receipt
	for {
		var err error
		rc, err = b.deliver(completed, ev, s)
		if errors.Is(err, jobs.ErrInProgress) {
			continue
		}
		if err != nil {
			t.Fatalf("redelivery: %v", err)
		}
		break
	}
	<-aDone
	if aErr == nil {
		t.Fatalf("the run that went dark answered as done")
	}
	if rc.Outcome != payment.OutcomeRefunded {
		t.Fatalf("redelivery: %+v, want refunded", rc)
	}
	r := b.record(h.ID)
	if r.Status != payment.StatusRefunded || r.RefundReason != payment.ReasonSeatsLost || r.RefundID == "" {
		t.Fatalf("record %+v", r)
	}
	if d := b.doc("stripeEvents/" + ev); d["state"] != "done" {
		t.Fatalf("stripeEvents/%s: %v", ev, d)
	}
	calls := append(a.stripe.list(), b.stripe.list()...)
	if k := distinctKeys(calls, isRefund); k != 1 {
		t.Fatalf("refund calls with %d keys: want one refund", k)
	}
	if n := b.doc("holds/" + h.ID)["status"]; n == booking.StatusOK {
		t.Fatalf("the refunded hold was confirmed")
	}
}

// A delivery whose applying commit lands while its answer is lost (the
// network dropped it) still answers what it did: the event was applied by
// this delivery, so the answer and firelock.payments say paid (or
// refunded), not an empty outcome.
func TestADeliveryWhoseCommitLandedUnheardAnswersWhatItDid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want string
	}{{"paid", payment.OutcomePaid}, {"refunded", payment.OutcomeRefunded}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			project := firelocktest.ProjectID(t)
			dark := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
			fsA, _ := firelocktest.NewClientVia(t, dark.Addr, project)
			b := newEnvOn(t, firelocktest.NewClientFor(t, project), true)
			a := newEnvOn(t, fsA, false)

			var h booking.Hold
			if c.want == payment.OutcomePaid {
				h = b.hold("u1", 120*time.Second, "B7")
				b.checkout("u1", h.ID)
			} else { // paid late for a seat taken since: refunded
				h = b.holdOf("quick", "u1", 5*time.Second, "E4")
				b.checkout("u1", h.ID)
				time.Sleep(time.Until(h.HeldUntil) + time.Second)
				b.holdOf("quick", "u2", 120*time.Second, "E4")
			}
			var once sync.Once
			payment.BeforeDone(a.pay, func() {
				once.Do(func() {
					// The commit goes out and lands; its answer never comes back.
					if err := dark.DropAnswers(300 * time.Millisecond); err != nil {
						t.Error(err)
					}
					time.AfterFunc(1500*time.Millisecond, dark.Heal)
				})
			})
			rc, err := a.deliver(completed, "", b.session(h.ID))
			if err != nil {
				t.Fatalf("the delivery whose commit landed: %v", err)
			}
			if rc.Outcome != c.want {
				t.Fatalf("the delivery whose commit landed answered %+v, want %q", rc, c.want)
			}
			if got := a.payments(); got[c.want] != 1 || len(got) != 1 {
				t.Fatalf("firelock.payments %v, want %s 1", got, c.want)
			}
			if r := b.record(h.ID); r.Status != map[string]string{payment.OutcomePaid: payment.StatusPaid, payment.OutcomeRefunded: payment.StatusRefunded}[c.want] {
				t.Fatalf("record %+v", r)
			}
		})
	}
}
