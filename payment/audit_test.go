package payment_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/payment"
)

// The money audit (issue #37): many holds, each with a random story of
// what its buyer and Stripe do, all at once; then what Firestore holds and
// what reached Stripe are checked: every paid session is exactly one
// confirmed booking or exactly one full refund, no booking of the priced
// screening is without a paid payment, nothing is refunded twice, and
// revenue is what was paid less what was refunded.

type story int

const (
	paysInTime       story = iota // pays before the hold ends
	walksAway                     // the session expires unpaid (Stripe's expired event)
	paysLateSeatFree              // pays after the hold lapsed; its seats still free
	paysLateSeatGone              // pays after the hold lapsed; a seat taken since
	releasesThenPays              // releases the hold, then the payment completes all the same
	paysThenCancels               // pays, then cancels the booking
	paysAndCancels                // presses Pay and Cancel: both events, in either order
	crashesMidway                 // pays in time; a first delivery is cut off mid-run
	stories
)

var storyNames = [...]string{"pays in time", "walks away", "pays late, seats free", "pays late, a seat gone", "releases, then pays", "pays, then cancels", "pays and cancels", "a delivery cut off midway"}

// paid: Stripe took the buyer's money in this story.
func (s story) paid() bool { return s != walksAway }

type holdStory struct {
	story story
	uid   string
	seats []string
	hold  booking.Hold
}

// audit runs n stories on e with seed, and returns the money problems found.
func audit(t *testing.T, e *env, seed uint64, n int) []string {
	t.Helper()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rows := []string{"A", "B", "C", "D", "E"}
	var all []*holdStory
	for i := range n {
		st := story(i % int(stories))
		if i >= int(stories) {
			st = story(rnd.IntN(int(stories)))
		}
		seat := rows[i/10%5] + strconv.Itoa(i%10+1)
		all = append(all, &holdStory{story: st, uid: "buyer" + strconv.Itoa(i), seats: []string{seat}})
	}
	// Holds of 5 s (the quick screening keeps a paying hold 3 s more at
	// most): the late stories wait them out.
	for _, h := range all {
		h.hold = e.holdOf("quick", h.uid, 5*time.Second, h.seats...)
		e.checkout(h.uid, h.hold.ID)
	}
	// deliver sends event ev (type t) copies times, the copies in
	// parallel, as Stripe's at-least-once delivery may; it retries what
	// answers an error (Stripe delivers again) until the event is done.
	deliver := func(t, ev string, s stripelocal.Session, copies int) {
		var wg sync.WaitGroup
		for range copies {
			wg.Go(func() {
				for attempt := 0; attempt < 40; attempt++ {
					if _, err := e.deliver(t, ev, s); err == nil {
						return
					}
					time.Sleep(250 * time.Millisecond)
				}
			})
		}
		wg.Wait()
	}
	var wg sync.WaitGroup
	for i, h := range all {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		s := e.session(h.hold.ID)
		// The first round of stories sends every event three times and
		// pays before cancelling, so that every kind of fault is met.
		firstRound := i < int(stories)
		copies := 3
		if !firstRound {
			copies = 1 + r.IntN(3)
		}
		send := func(t string) { deliver(t, stripelocal.NewEventID(), s, copies) }
		wg.Go(func() {
			time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
			lapse := func() { time.Sleep(time.Until(e.record(h.hold.ID).CreatedAt.Add(9 * time.Second))) }
			switch h.story {
			case paysInTime:
				send(completed)
			case walksAway:
				send(expired)
			case paysLateSeatFree:
				lapse()
				send(completed)
			case paysLateSeatGone:
				lapse()
				if _, _, err := e.bookings.Hold(ctx, "x", booking.Request{UID: h.uid + "-rival", ScreeningID: "quick", Seats: h.seats, RequestID: "rival"}, 60*time.Second); err != nil {
					t.Errorf("a rival could not hold %v after the hold lapsed: %v", h.seats, err)
				}
				send(completed)
			case releasesThenPays:
				if _, err := e.pay.ReleaseHold(ctx, h.uid, h.hold.ID); err != nil {
					t.Errorf("release: %v", err)
				}
				send(completed)
			case paysThenCancels:
				send(completed)
				if b := e.record(h.hold.ID).BookingID; b != "" {
					if _, err := e.pay.CancelBooking(ctx, h.uid, b); err != nil {
						t.Errorf("cancel: %v", err)
					}
				}
			case paysAndCancels:
				first, second := completed, expired
				if !firstRound && r.IntN(2) == 0 {
					first, second = second, first
				}
				send(first)
				send(second)
			case crashesMidway:
				// The first delivery is cut off at a random point (its context
				// ends), then Stripe delivers the same event again.
				id := stripelocal.NewEventID()
				cctx, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(60))*time.Millisecond)
				ev := stripelocal.Event(completed, id, s)
				e.pay.HandleWebhook(cctx, "cut", ev, stripelocal.Sign(ev, e.secret, time.Now()))
				cancel()
				deliver(completed, id, s, copies)
			}
		})
	}
	wg.Wait()
	// What is due at Stripe gets done (the sweep runs every minute).
	for range 3 {
		if err := e.pay.Sweep(ctx, time.Time{}); err == nil {
			break
		}
	}
	return moneyProblems(t, e, all)
}

// moneyProblems checks what Firestore holds and what reached Stripe.
func moneyProblems(t *testing.T, e *env, all []*holdStory) []string {
	t.Helper()
	ctx := context.Background()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	bookings, err := e.fs.Collection(booking.Bookings).Where("screeningId", "==", "quick").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	byHold := map[string][]map[string]any{}
	var paid, refunded, kept int64
	for _, b := range bookings {
		d := b.Data()
		hold, _ := d["holdId"].(string)
		byHold[hold] = append(byHold[hold], d)
		p, _ := d["payment"].(map[string]any)
		if p == nil {
			bad("booking %s of the priced screening has no payment", b.Ref.ID)
			continue
		}
		if d["status"] == "confirmed" {
			amount, _ := p["amount"].(int64)
			kept += amount
		}
	}
	refundKeys := map[string]map[string]bool{} // payment intent -> refund keys
	for _, c := range e.stripe.list() {
		if isRefund(c) {
			// stripe-mock keeps no state: the key names the refund (Stripe
			// makes one refund per key).
			for _, h := range all {
				if c.Key == "firelock-refund-"+h.hold.ID {
					pi := stripelocal.Session{ID: e.record(h.hold.ID).SessionID}.PaymentIntent()
					if refundKeys[pi] == nil {
						refundKeys[pi] = map[string]bool{}
					}
					refundKeys[pi][c.Key] = true
				}
			}
		}
	}
	for pi, keys := range refundKeys {
		if len(keys) > 1 {
			bad("payment %s refunded %d times (keys %v)", pi, len(keys), keys)
		}
	}
	for _, h := range all {
		r := e.record(h.hold.ID)
		bs := byHold[h.hold.ID]
		confirmed := slices.IndexFunc(bs, func(b map[string]any) bool { return b["status"] == "confirmed" }) >= 0
		name := fmt.Sprintf("hold %s (%s)", h.hold.ID, storyNames[h.story])
		switch {
		case r.RefundDue || r.ExpireDue:
			bad("%s: the record still has something due at Stripe: %+v", name, r)
		case !h.story.paid():
			if r.Status != payment.StatusExpired || len(bs) > 0 {
				bad("%s: never paid, but its record is %s with %d bookings", name, r.Status, len(bs))
			}
			continue
		}
		paid += r.Amount
		refundCalls := len(refundKeys[stripelocal.Session{ID: r.SessionID}.PaymentIntent()])
		switch r.Status {
		case payment.StatusPaid:
			if !confirmed || len(bs) != 1 || r.BookingID == "" || r.RefundID != "" || refundCalls != 0 {
				bad("%s: paid, with %d bookings (confirmed %v), booking %q, refund %q, %d refunds at Stripe", name, len(bs), confirmed, r.BookingID, r.RefundID, refundCalls)
			}
		case payment.StatusRefunded:
			refunded += r.Amount
			if confirmed || r.RefundID == "" || refundCalls != 1 {
				bad("%s: refunded (%s), but a booking is confirmed (%v), or refund %q, %d refunds at Stripe", name, r.RefundReason, confirmed, r.RefundID, refundCalls)
			}
		default:
			bad("%s: Stripe took the money, and the record is %s", name, r.Status)
		}
	}
	if kept != paid-refunded {
		bad("revenue %d (the confirmed bookings' payments) is not paid %d less refunded %d", kept, paid, refunded)
	}
	return problems
}

// auditSeed is FIRELOCK_SEED if set (to replay a run), else a fresh one.
func auditSeed(t *testing.T) uint64 {
	if s, err := strconv.ParseUint(os.Getenv("FIRELOCK_SEED"), 10, 64); err == nil {
		return s
	}
	return rand.Uint64()
}

func TestTheMoneyAuditFindsSeatsAndMoneyInStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seed := auditSeed(t)
	t.Logf("seed %d (replay: FIRELOCK_SEED=%d go test -run '^TestTheMoneyAuditFindsSeatsAndMoneyInStep$' ./payment/)", seed, seed)
	problems := audit(t, e, seed, 40)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("firelock.payments %v; Stripe calls: %d creates, %d expires, %d refund requests", e.payments(), e.stripe.count(isCreate), e.stripe.count(isExpire), e.stripe.count(isRefund))
}

// Negative controls: each planted handler must turn the audit red.
func TestTheMoneyAuditCatchesPlantedHandlers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		plant func(*payment.Service)
	}{
		{"no per-event lease", payment.PlantNoEventLease},
		{"events applied in arrival order", payment.PlantArrivalOrder},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The stories' order of events is random and timed: a run can
			// meet no story the planted handler gets wrong (CI's run of
			// 11-29 15:14 did once, for arrival order). The audit must
			// catch it within three runs, each on seeds of its own.
			var seeds []uint64
			for range 3 {
				e := newEnv(t)
				c.plant(e.pay)
				seed := auditSeed(t)
				seeds = append(seeds, seed)
				if problems := audit(t, e, seed, 24); len(problems) > 0 {
					t.Logf("the audit caught %d problems (seed %d), e.g. %s", len(problems), seed, problems[0])
					return
				}
				t.Logf("seed %d: the audit found nothing wrong", seed)
			}
			t.Fatalf("the audit found nothing wrong with a handler with %s in three runs (seeds %v; replay one with FIRELOCK_SEED)", c.name, seeds)
		})
	}
}
