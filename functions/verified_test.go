package functions_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/sale"
)

// A sale with requireVerifiedEmail (CONTRACT §12) lets in only users whose
// ID token says email_verified: another gets 403 email_not_verified and no
// place; once the address is verified, a fresh token joins. Operators set
// the field with configure; it must be a boolean.
func TestASaleForVerifiedEmailsRefusesOthers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := operatorToken(t, "vera")
	e.onSale("verified", time.Now().Add(2*time.Hour), nil)
	configure := func(fields map[string]any) response {
		return e.operate(op, map[string]any{"screeningId": "verified", "action": "configure", "sale": fields})
	}
	if r := configure(map[string]any{"opensAt": time.Now().Add(time.Hour).Format(time.RFC3339), "admitPerMinute": 10, "maxActive": 5, "requireVerifiedEmail": "yes"}); r.Status != 400 || r.code() != "invalid_sale" {
		t.Fatalf("requireVerifiedEmail \"yes\": %d %v, want 400 invalid_sale", r.Status, r.Body)
	}
	if r := configure(map[string]any{"opensAt": time.Now().Add(time.Hour).Format(time.RFC3339), "admitPerMinute": 10, "maxActive": 5, "requireVerifiedEmail": true}); r.Status != 200 {
		t.Fatalf("configure: %d %v", r.Status, r.Body)
	}
	if r := e.joinQueue("unverified", "verified"); r.Status != http.StatusForbidden || r.code() != "email_not_verified" {
		t.Fatalf("an unverified join: %d %v, want 403 email_not_verified", r.Status, r.Body)
	}
	if places, _ := e.fs.Collection(sale.Queue).Where("screeningId", "==", "verified").Documents(ctx).GetAll(); len(places) != 0 {
		t.Fatalf("a refused join left %d places", len(places))
	}
	// The user verifies their address; their next token says so.
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.UpdateUser(ctx, userID(t, "unverified"), (&auth.UserToUpdate{}).EmailVerified(true)); err != nil {
		t.Fatal(err)
	}
	fresh, _, err := emulators.SignIn("unverified@example.com", "secret-unverified")
	if err != nil {
		t.Fatal(err)
	}
	if r := e.call("JoinQueue", fresh, map[string]any{"screeningId": "verified"}); r.Status != http.StatusCreated {
		t.Fatalf("a verified join: %d %v, want 201", r.Status, r.Body)
	}
	// Turning it off again lets anyone in.
	if r := configure(map[string]any{"requireVerifiedEmail": false}); r.Status != 200 {
		t.Fatalf("configure off: %d %v", r.Status, r.Body)
	}
	if r := e.joinQueue("unverified2", "verified"); r.Status != http.StatusCreated {
		t.Fatalf("a join once the sale no longer requires it: %d %v", r.Status, r.Body)
	}
}
