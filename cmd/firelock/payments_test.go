package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/payment"
)

// An operator finds a buyer's payment (issue #37): payments list a
// screening's, by buyer or state, with the total paid, refunded and kept;
// payments show one, with its session, booking or refund.
func TestPaymentsListAndShow(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	put := func(hold, uid, status string, amount int64, extra map[string]any) {
		d := map[string]any{"uid": uid, "screeningId": "priced", "holdId": hold, "seats": []string{"A1", "A2"}, "sessionId": "cs_" + hold,
			"amount": amount, "currency": "eur", "status": status, "createdAt": at, "updatedAt": at}
		for k, v := range extra {
			d[k] = v
		}
		if _, err := c.db.Collection(payment.Payments).Doc(hold).Set(ctx, d); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Minute)
	}
	put("h1", "ann", payment.StatusPaid, 3000, map[string]any{"bookingId": "b1", "paymentIntentId": "pi_1", "paidAt": at})
	put("h2", "bob", payment.StatusRefunded, 2500, map[string]any{"refundId": "re_2", "refundReason": payment.ReasonSeatsLost, "paidAt": at, "refundedAt": at})
	put("h3", "ann", payment.StatusExpired, 2500, nil)
	put("x1", "ann", payment.StatusPaid, 900, map[string]any{"screeningId": "other"})

	out := c.must("payments", "list", "priced")
	for _, want := range []string{"h1", "b1", "30.00 EUR", "h2", "seats_lost", "h3", "expired", "total: 2 paid (55.00 EUR), 1 refunded (25.00 EUR): 30.00 EUR"} {
		if !strings.Contains(out, want) {
			t.Errorf("payments list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "x1") {
		t.Errorf("payments list shows another screening's payment:\n%s", out)
	}
	var rows []paymentRow
	if err := json.Unmarshal([]byte(c.must("payments", "list", "priced", "--uid", "ann", "-o", "json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].HoldID != "h1" || rows[1].HoldID != "h3" {
		t.Fatalf("ann's payments: %+v", rows)
	}
	if out := c.must("payments", "list", "priced", "--state", "refunded"); !strings.Contains(out, "h2") || strings.Contains(out, "h1") {
		t.Errorf("refunded payments:\n%s", out)
	}
	show := c.must("payments", "show", "h2")
	for _, want := range []string{"bob", "A1 A2", "refunded", "25.00 EUR", "cs_h2", "re_2", "seats_lost"} {
		if !strings.Contains(show, want) {
			t.Errorf("payments show lacks %q:\n%s", want, show)
		}
	}
	if code, _, errOut := c.run("payments", "show", "nope"); code != exitRefused || !strings.Contains(errOut, `no payment for hold "nope"`) {
		t.Errorf("show of an unknown hold: exit %d %q", code, errOut)
	}
	if code, _, _ := c.run("payments", "list", "priced", "--state", "lost"); code != exitUsage {
		t.Errorf("--state lost: exit %d, want %d", code, exitUsage)
	}
}
