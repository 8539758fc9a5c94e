package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/payment"
)

// priced adds screening p1 (rows A to C of 10 seats, 12.50 EUR a seat) and
// lets the app at localhost:5173 call the functions.
func (e *env) priced() {
	e.t.Helper()
	if _, err := e.fs.Doc("screenings/p1").Set(context.Background(), map[string]any{
		"title": "Metropolis", "startsAt": time.Now().Add(24 * time.Hour), "rows": []string{"A", "B", "C"}, "seatsPerRow": 10,
		"price": map[string]any{"amount": 1250, "currency": "eur"},
	}); err != nil {
		e.t.Fatal(err)
	}
	e.api.CORS = functions.NewCORS("http://localhost:5173")
}

func fromApp(r *http.Request) { r.Header.Set("Origin", "http://localhost:5173") }

func TestCheckoutHoldOverHTTP(t *testing.T) {
	e := newEnv(t)
	e.priced()
	held := e.call("HoldSeats", token(t, "pat"), map[string]any{"screeningId": "p1", "seats": []string{"B3", "B4"}, "requestId": "r1"})
	if held.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", held.Status, held.Body)
	}
	holdID := str(held, "holdId")

	// A priced screening is never booked or confirmed for free.
	if r := e.call("BookSeats", token(t, "pat"), map[string]any{"screeningId": "p1", "seats": []string{"C1"}, "requestId": "b1"}); r.Status != http.StatusPaymentRequired || r.code() != "payment_required" {
		t.Fatalf("BookSeats on a priced screening: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ConfirmHold", "pat", holdID); r.Status != http.StatusPaymentRequired || r.code() != "payment_required" {
		t.Fatalf("ConfirmHold on a priced screening: %d %v", r.Status, r.Body)
	}

	// Refusals, in the §3 error shape, before anything is paid for.
	refusals := []struct {
		name, user string
		body       map[string]any
		status     int
		code       string
	}{
		{"no holdId", "pat", map[string]any{}, 400, "invalid_argument"},
		{"another user's hold", "quinn", map[string]any{"holdId": holdID}, 403, "permission_denied"},
		{"no such hold", "pat", map[string]any{"holdId": "nope"}, 404, "hold_not_found"},
		{"a returnUrl on a foreign origin", "pat", map[string]any{"holdId": holdID, "returnUrl": "https://evil.example/steal"}, 400, "invalid_argument"},
		{"a returnUrl that is not a URL", "pat", map[string]any{"holdId": holdID, "returnUrl": "javascript:alert(1)"}, 400, "invalid_argument"},
	}
	for _, c := range refusals {
		if r := e.call("CheckoutHold", token(t, c.user), c.body, fromApp); r.Status != c.status || r.code() != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	// Without a returnUrl, only a browser on an allowed origin may leave it
	// out (CONTRACT §10a): Stripe then sends the buyer back there.
	foreign := func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }
	if r := e.call("CheckoutHold", token(t, "pat"), map[string]any{"holdId": holdID}); r.Status != 400 || r.code() != "invalid_argument" {
		t.Errorf("no returnUrl and no Origin: %d %v, want 400 invalid_argument", r.Status, r.Body)
	}
	if r := e.call("CheckoutHold", token(t, "pat"), map[string]any{"holdId": holdID}, foreign); r.Status != 400 || r.code() != "invalid_argument" {
		t.Errorf("no returnUrl from a foreign Origin: %d %v, want 400 invalid_argument", r.Status, r.Body)
	}
	if d, _ := e.fs.Doc("payments/" + holdID).Get(context.Background()); d.Exists() {
		t.Fatalf("a refused checkout wrote %v", d.Data())
	}

	first := e.call("CheckoutHold", token(t, "pat"), map[string]any{"holdId": holdID}, fromApp)
	if first.Status != http.StatusCreated || str(first, "holdId") != holdID || str(first, "checkoutUrl") == "" || str(first, "currency") != "eur" || first.Body["amount"] != float64(2500) {
		t.Fatalf("CheckoutHold: %d %v", first.Status, first.Body)
	}
	if _, err := time.Parse(time.RFC3339, str(first, "heldUntil")); err != nil {
		t.Fatalf("heldUntil %q: %v", str(first, "heldUntil"), err)
	}
	again := e.call("CheckoutHold", token(t, "pat"), map[string]any{"holdId": holdID}, fromApp)
	if again.Status != http.StatusOK || str(again, "checkoutUrl") != str(first, "checkoutUrl") {
		t.Fatalf("a retry: %d %v", again.Status, again.Body)
	}

	// A free screening's hold is confirmed, not paid for.
	free := e.hold("pat", "r2", 0, "A1")
	if r := e.call("CheckoutHold", token(t, "pat"), map[string]any{"holdId": str(free, "holdId")}, fromApp); r.Status != http.StatusConflict || r.code() != "not_priced" {
		t.Fatalf("CheckoutHold of a free screening's hold: %d %v", r.Status, r.Body)
	}

	// The webhook confirms it: the booking is the user's.
	var rec payment.Record
	snap, _ := e.fs.Doc("payments/" + holdID).Get(context.Background())
	snap.DataTo(&rec)
	ev := stripelocal.Event("checkout.session.completed", "", stripelocal.Session{ID: rec.SessionID, HoldID: holdID, ScreeningID: "p1", UID: rec.UID, Amount: rec.Amount, Currency: rec.Currency})
	for i, want := range []string{payment.OutcomePaid, payment.OutcomeDuplicate} {
		code, body, err := stripelocal.Deliver(context.Background(), nil, e.srv.URL+"/StripeWebhook", stripeWebhookSecret, ev)
		var got map[string]any
		json.Unmarshal(body, &got)
		if err != nil || code != http.StatusOK || got["outcome"] != want {
			t.Fatalf("delivery %d: %d %s %v, want 200 %s", i, code, body, err, want)
		}
	}
	if hd, _ := e.fs.Doc("holds/" + holdID).Get(context.Background()); hd.Data()["status"] != "confirmed" {
		t.Fatalf("hold %v", hd.Data())
	}
}

func TestStripeWebhookOverHTTPRefusesWhatStripeDidNotSign(t *testing.T) {
	e := newEnv(t)
	post := func(method string, body []byte, sig string) (int, map[string]any) {
		req, _ := http.NewRequest(method, e.srv.URL+"/StripeWebhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sig != "" {
			req.Header.Set("Stripe-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%d body is not JSON: %q", resp.StatusCode, b)
		}
		return resp.StatusCode, out
	}
	code := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		c, _ := e["code"].(string)
		return c
	}
	ev := stripelocal.Event("checkout.session.completed", "", stripelocal.Session{ID: "cs_x", HoldID: "h1", ScreeningID: "p1", UID: "u", Amount: 100, Currency: "eur"})
	if s, out := post(http.MethodPost, ev, ""); s != 400 || code(out) != "invalid_signature" {
		t.Fatalf("no signature: %d %v", s, out)
	}
	if s, out := post(http.MethodPost, ev, stripelocal.Sign(ev, stripelocal.NewWebhookSecret(), time.Now())); s != 400 || code(out) != "invalid_signature" {
		t.Fatalf("another secret: %d %v", s, out)
	}
	if s, out := post(http.MethodGet, nil, ""); s != 405 || code(out) != "method_not_allowed" {
		t.Fatalf("GET: %d %v", s, out)
	}
	garbage := []byte("[1,2")
	if s, out := post(http.MethodPost, garbage, stripelocal.Sign(garbage, stripeWebhookSecret, time.Now())); s != 400 || code(out) != "invalid_argument" {
		t.Fatalf("a signed body that is not an event: %d %v", s, out)
	}
	other := stripelocal.Event("invoice.paid", "", stripelocal.Session{ID: "cs_x"})
	if s, out := post(http.MethodPost, other, stripelocal.Sign(other, stripeWebhookSecret, time.Now())); s != 200 || out["outcome"] != payment.OutcomeIgnored {
		t.Fatalf("an event type firelock ignores: %d %v", s, out)
	}
	if snaps, _ := e.fs.Collection(payment.Events).Documents(context.Background()).GetAll(); len(snaps) != 0 {
		t.Fatalf("refused deliveries wrote %d stripeEvents", len(snaps))
	}
}
