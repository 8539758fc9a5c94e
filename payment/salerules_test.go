package payment_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// saleEnv is an env whose screening "onsale" (rows A to E of 10 seats,
// 9.00 EUR a seat, paying holds kept 3 s) has a sale open since a minute,
// of at most 2 seats a user, with booking under the sale's gate.
type saleEnv struct {
	*env
	sales *sale.Service
}

func newSaleEnv(t *testing.T) saleEnv {
	t.Helper()
	e := newEnv(t)
	if _, err := e.fs.Doc("screenings/onsale").Set(context.Background(), map[string]any{
		"title": "Faust", "startsAt": time.Now().Add(24 * time.Hour), "rows": []string{"A", "B", "C", "D", "E"}, "seatsPerRow": 10,
		"price": map[string]any{"amount": 900, "currency": "eur", "payHoldSeconds": 3},
		"sale":  map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 60, "maxActive": 100, "maxSeatsPerUser": 2},
	}); err != nil {
		t.Fatal(err)
	}
	sales := sale.New(e.fs)
	e.withGate(sales)
	return saleEnv{e, sales}
}

// admit gives uid a live pass for the sale, as the admitter would.
func (e saleEnv) admit(uid string) {
	e.t.Helper()
	now := time.Now()
	if _, err := e.sales.Pass("onsale", uid).Set(context.Background(), map[string]any{
		"uid": uid, "screeningId": "onsale", "status": sale.StatusAdmitted, "joinedAt": now, "admittedAt": now,
		"passUntil": now.Add(10 * time.Minute), "shard": 0,
	}); err != nil {
		e.t.Fatal(err)
	}
}

// operate runs an operator's action on the sale; holds releases a revoked
// user's holds.
func (e saleEnv) operate(action, uid string) {
	e.t.Helper()
	op := sale.Operation{ScreeningID: "onsale", Action: action, UID: uid, Reason: "test", By: sale.Operator{UID: "olive", Email: "olive@example.com"}}
	if _, err := e.sales.Operate(context.Background(), op, e.pay); err != nil {
		e.t.Fatalf("%s %s: %v", action, uid, err)
	}
}

// cutOffRevoker releases nothing: the revoke's commit stands, and the
// network goes down before its releases.
type cutOffRevoker struct{}

func (cutOffRevoker) RevokeHold(context.Context, string, string) (booking.Hold, error) {
	return booking.Hold{}, errors.New("the network went down")
}

// lapsedPaying is uid's paying hold of seats, ended by its time (not yet
// swept).
func (e saleEnv) lapsedPaying(uid string, seats ...string) booking.Hold {
	e.t.Helper()
	h := e.holdOf("onsale", uid, 5*time.Second, seats...)
	c := e.checkout(uid, h.ID)
	time.Sleep(time.Until(c.HeldUntil) + 1500*time.Millisecond)
	return h
}

// A late payment is refunded, not booked, when booking it would break a
// rule of the sale that holds at that moment (CONTRACT §10a): an operator
// closed the sale (sale_closed), or the user would go past
// maxSeatsPerUser (seat_limit). A hold that an operator's revoke released
// is refunded as revoked, and so is a payment that completes after the
// revoke's commit for a hold it has not released yet, and a late payment
// of a user whose pass was revoked after the hold lapsed. With no rule
// broken, a late payment whose seats are free is booked, as before (the
// control).
func TestALatePaymentThatWouldBreakASaleRuleIsRefunded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		story  func(e saleEnv) booking.Hold
		reason string // "": booked late
	}{
		{"the sale closed", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.lapsedPaying("u1", "C1")
			e.operate(sale.ActionClose, "")
			return h
		}, payment.ReasonSaleClosed},
		{"past the seat cap", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.lapsedPaying("u1", "C1")
			e.holdOf("onsale", "u1", 120*time.Second, "D1", "D2") // the lapsed hold no longer counts: 2 of 2
			return h
		}, payment.ReasonSeatLimit},
		{"released by a revoke", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.holdOf("onsale", "u1", 120*time.Second, "C1")
			e.checkout("u1", h.ID)
			e.operate(sale.ActionRevoke, "u1")
			if hd := e.doc("holds/" + h.ID); hd["status"] != booking.StatusReleased {
				e.t.Fatalf("the revoke left the hold %v", hd["status"])
			}
			return h
		}, payment.ReasonRevoked},
		{"paid after the revoke's commit, before its release", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.holdOf("onsale", "u1", 120*time.Second, "C1")
			e.checkout("u1", h.ID)
			op := sale.Operation{ScreeningID: "onsale", Action: sale.ActionRevoke, UID: "u1", By: sale.Operator{UID: "olive"}}
			if _, err := e.sales.Operate(context.Background(), op, cutOffRevoker{}); err == nil {
				e.t.Fatal("the revoke answered success without releasing the hold")
			}
			if hd := e.doc("holds/" + h.ID); hd["status"] != booking.StatusPaying {
				e.t.Fatalf("the hold is %v, want still paying", hd["status"])
			}
			return h
		}, payment.ReasonRevoked},
		{"lapsed, then revoked", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.lapsedPaying("u1", "C1")
			e.operate(sale.ActionRevoke, "u1")
			return h
		}, payment.ReasonRevoked},
		{"no rule broken", func(e saleEnv) booking.Hold {
			e.admit("u1")
			h := e.lapsedPaying("u1", "C1")
			e.holdOf("onsale", "u1", 120*time.Second, "D1") // 2 of 2 with the late booking
			return h
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newSaleEnv(t)
			h := c.story(e)
			rc := e.mustDeliver(completed, "", e.session(h.ID))
			r := e.record(h.ID)
			if c.reason == "" {
				if rc.Outcome != payment.OutcomeLateAccepted || !r.LateAccepted || r.BookingID == "" {
					t.Fatalf("a late payment breaking no rule: %+v, record %+v; want it booked", rc, r)
				}
				return
			}
			if rc.Outcome != payment.OutcomeRefunded || r.Status != payment.StatusRefunded || r.RefundReason != c.reason || r.RefundID == "" || r.BookingID != "" {
				t.Fatalf("delivered: %+v; record %+v; want refunded, %s", rc, r, c.reason)
			}
			if hd := e.doc("holds/" + h.ID); hd["status"] == booking.StatusOK {
				t.Fatalf("the refunded hold was booked: %v", hd)
			}
			if s := e.doc("screenings/onsale/seats/C1"); s["status"] == booking.StatusBooked {
				t.Fatalf("seat C1 was booked: %v", s)
			}
			if n := e.sold("onsale"); n != 0 {
				t.Fatalf("tickets sold %d, want 0", n)
			}
		})
	}
}

// A late payment and a new hold of the same user race at the seat cap: the
// payment's transaction reads the user's place, and the hold's commit is
// conditioned on it, so exactly one of them gets the last seat of the cap.
// Either the late payment is booked and the hold answers seat_limit, or
// the hold stands and the payment is refunded for seat_limit.
func TestALatePaymentAndANewHoldOfTheSameUserNeverPassTheCap(t *testing.T) {
	t.Parallel()
	e := newSaleEnv(t)
	const users = 6
	holds := make([]booking.Hold, users)
	var wg sync.WaitGroup
	for i := range users {
		uid, row := fmt.Sprintf("u%d", i), string(rune('A'+i%5))
		e.admit(uid)
		wg.Go(func() {
			holds[i] = e.lapsedPaying(uid, fmt.Sprintf("%s%d", row, 1+i/5))
			e.holdOf("onsale", uid, 120*time.Second, fmt.Sprintf("%s%d", row, 3+i/5)) // 1 of 2 live
		})
	}
	wg.Wait()
	booked, held := 0, 0
	for i, h := range holds {
		uid, row := fmt.Sprintf("u%d", i), string(rune('A'+i%5))
		var rc payment.Receipt
		var derr, herr error
		var wg sync.WaitGroup
		wg.Go(func() { rc, derr = e.deliver(completed, "", e.session(h.ID)) })
		wg.Go(func() {
			_, _, herr = e.bookings.Hold(context.Background(), "x", booking.Request{UID: uid, ScreeningID: "onsale", Seats: []string{fmt.Sprintf("%s%d", row, 5+i/5)}, RequestID: nextRequest()}, 120*time.Second)
		})
		wg.Wait()
		if derr != nil {
			t.Fatalf("%s's late payment: %v", uid, derr)
		}
		r := e.record(h.ID)
		switch {
		case rc.Outcome == payment.OutcomeLateAccepted && errors.Is(herr, booking.ErrSeatLimit):
			booked++
		case rc.Outcome == payment.OutcomeRefunded && r.RefundReason == payment.ReasonSeatLimit && herr == nil:
			held++
		default:
			t.Fatalf("%s: the late payment %s (%s), the new hold %v: want exactly one of them past the other's seat", uid, rc.Outcome, r.RefundReason, herr)
		}
	}
	t.Logf("late payments booked first %d, new holds first %d", booked, held)
}
