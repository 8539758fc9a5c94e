package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/operators"
	"github.com/firelock/firelock/sale"
)

// operatorToken signs user up (once), makes them an operator with the
// Admin SDK as `firelock operators grant` does, and returns a fresh ID
// token, which carries the claim.
func operatorToken(t *testing.T, user string) string {
	t.Helper()
	signIn(t, user)
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operators.Grant(ctx, ac, user+"@example.com"); err != nil {
		t.Fatal(err)
	}
	tok, _, err := emulators.SignIn(user+"@example.com", "secret-"+user)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (e *env) operate(tok string, body map[string]any) response {
	e.t.Helper()
	return e.call("OperateSale", tok, body)
}

// logEntries lists the sale's log, oldest first.
func (e *env) logEntries(screening string) []map[string]any {
	e.t.Helper()
	snaps, err := e.fs.Collection(sale.Log).Doc(screening).Collection("entries").OrderBy("at", firestore.Asc).Documents(context.Background()).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for _, s := range snaps {
		out = append(out, s.Data())
	}
	return out
}

// Nobody but an operator runs a sale, and a refused call writes nothing
// (CONTRACT §8).
func TestOperateSaleIsForOperatorsOnly(t *testing.T) {
	e := newEnv(t)
	before, err := e.fs.Doc("screenings/s1").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"screeningId": "s1", "action": "configure", "sale": map[string]any{"opensAt": time.Now().Add(time.Hour).Format(time.RFC3339), "admitPerMinute": 10, "maxActive": 5}}
	if r := e.operate("", body); r.Status != 401 || r.code() != "unauthenticated" {
		t.Errorf("no token: %d %v", r.Status, r.Body)
	}
	if r := e.operate(token(t, "mallory"), body); r.Status != 403 || r.code() != "not_operator" {
		t.Errorf("a signed-in user: %d %v", r.Status, r.Body)
	}
	after, err := e.fs.Doc("screenings/s1").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdateTime.Equal(before.UpdateTime) || len(e.logEntries("s1")) != 0 {
		t.Fatalf("a refused OperateSale wrote: %v, log %v", after.Data()["sale"], e.logEntries("s1"))
	}
	if r := e.operate(operatorToken(t, "olive"), body); r.Status != 200 || r.Body["state"] != "scheduled" {
		t.Fatalf("an operator: %d %v", r.Status, r.Body)
	}
}

// The actions of CONTRACT §8 on one sale, through the function: each
// answers the sale's state and fields, is logged with its before and after
// when it changed something, and is idempotent.
func TestOperateSaleActions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := operatorToken(t, "oscar")
	opensAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	configure := func(fields map[string]any) response {
		return e.operate(op, map[string]any{"screeningId": "s1", "action": "configure", "sale": fields, "reason": "on sale friday"})
	}
	if r := e.operate(op, map[string]any{"screeningId": "s1", "action": "pause"}); r.Status != 409 || r.code() != "no_sale" {
		t.Fatalf("pause without a sale: %d %v", r.Status, r.Body)
	}
	r := configure(map[string]any{"opensAt": opensAt.Format(time.RFC3339), "admitPerMinute": 60, "maxActive": 10})
	if r.Status != 200 || r.Body["state"] != "scheduled" || r.Body["screeningId"] != "s1" {
		t.Fatalf("create: %d %v", r.Status, r.Body)
	}
	if s, _ := r.Body["sale"].(map[string]any); s["admitPerMinute"] != float64(60) || s["opensAt"] != opensAt.Format(time.RFC3339) {
		t.Fatalf("create answered the sale %v", r.Body["sale"])
	}
	snap, _ := e.fs.Doc("screenings/s1").Get(ctx)
	stored := snap.Data()["sale"].(map[string]any)
	if at, ok := stored["opensAt"].(time.Time); !ok || !at.Equal(opensAt) || stored["maxActive"] != int64(10) {
		t.Fatalf("stored sale %v: opensAt must be a timestamp, numbers integers", stored)
	}
	// Bad fields: the message names the field, the value and its JSON type;
	// nothing changes and nothing is logged.
	for _, c := range []struct {
		fields map[string]any
		code   string
		says   string
	}{
		{map[string]any{"maxActive": "50"}, "invalid_sale", `sale.maxActive must be a whole number from 1 to 100000, not the string "50"`},
		{map[string]any{"admitPerMinute": 0.5}, "invalid_sale", `sale.admitPerMinute must be a whole number from 1 to 10000, not the number 0.5`},
		{map[string]any{"opensAt": "tomorrow"}, "invalid_sale", `sale.opensAt must be an RFC 3339 time`},
		{map[string]any{"opensAt": time.Now().Add(48 * time.Hour).Format(time.RFC3339)}, "invalid_sale", `must be before the screening's startsAt`},
		{map[string]any{"maxActive": nil}, "invalid_sale", `not null`},
		{map[string]any{"maxSeats": 4}, "invalid_sale", `unknown field "maxSeats"`},
	} {
		r := configure(c.fields)
		if msg, _ := r.Body["error"].(map[string]any)["message"].(string); r.Status != 400 || r.code() != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("configure %v: %d %v, want 400 %s saying %q", c.fields, r.Status, r.Body, c.code, c.says)
		}
	}
	for _, body := range []map[string]any{
		{"screeningId": "s1", "action": "explode"},
		{"screeningId": "s1", "action": "pause", "sale": map[string]any{"maxActive": 3}},
		{"screeningId": "s1", "action": "pause", "uid": "someone"},
		{"screeningId": "s1", "action": "revoke"},
		{"screeningId": "s1", "action": "configure"},
		{"screeningId": "s1", "action": "pause", "extra": 1},
	} {
		if r := e.operate(op, body); r.Status != 400 || r.code() != "invalid_argument" {
			t.Errorf("%v: %d %v, want 400 invalid_argument", body, r.Status, r.Body)
		}
	}
	if r := e.operate(op, map[string]any{"screeningId": "nope", "action": "pause"}); r.Status != 404 || r.code() != "screening_not_found" {
		t.Errorf("unknown screening: %d %v", r.Status, r.Body)
	}
	if n := len(e.logEntries("s1")); n != 1 {
		t.Fatalf("%d log entries after one accepted action and refused ones, want 1", n)
	}

	// Pause twice, resume: two entries; the second pause changes nothing.
	for _, c := range []struct{ action, state string }{{"pause", "paused"}, {"pause", "paused"}, {"resume", "scheduled"}} {
		if r := e.operate(op, map[string]any{"screeningId": "s1", "action": c.action, "reason": "checking"}); r.Status != 200 || r.Body["state"] != c.state {
			t.Fatalf("%s: %d %v, want 200 %s", c.action, r.Status, r.Body, c.state)
		}
	}
	log := e.logEntries("s1")
	if len(log) != 3 || log[1]["action"] != "pause" || log[2]["action"] != "resume" || log[1]["reason"] != "checking" {
		t.Fatalf("log after pause, pause, resume: %v", log)
	}
	if log[0]["email"] != "oscar@example.com" || log[0]["uid"] != userID(t, "oscar") || log[0]["before"] != nil {
		t.Fatalf("the first entry (a new sale) %v: want the operator's uid and email, no before", log[0])
	}
	if after, _ := log[1]["after"].(map[string]any); after["paused"] != true {
		t.Fatalf("the pause's after %v", log[1]["after"])
	}

	// Once open, opensAt is fixed; the rest may change.
	if _, err := e.fs.Doc("screenings/s1").Update(ctx, []firestore.Update{{FieldPath: firestore.FieldPath{"sale", "opensAt"}, Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if r := configure(map[string]any{"opensAt": opensAt.Format(time.RFC3339)}); r.Status != 409 || r.code() != "sale_started" {
		t.Errorf("moving opensAt after the opening: %d %v", r.Status, r.Body)
	}
	if r := configure(map[string]any{"admitPerMinute": 120, "maxSeatsPerUser": 2}); r.Status != 200 || r.Body["state"] != "open" {
		t.Errorf("a new rate after the opening: %d %v", r.Status, r.Body)
	}

	// Revoke: the user's pass ends, their live hold is released.
	place := e.admitted("s1", "ursula")
	if r := e.call("HoldSeats", token(t, "ursula"), map[string]any{"screeningId": "s1", "seats": []string{"C1", "C2"}, "requestId": "h"}); r.Status != 201 {
		t.Fatalf("hold: %d %v", r.Status, r.Body)
	}
	if r := e.operate(op, map[string]any{"screeningId": "s1", "action": "revoke", "uid": userID(t, "ursula"), "reason": "bot"}); r.Status != 200 {
		t.Fatalf("revoke: %d %v", r.Status, r.Body)
	}
	if p, _ := place.Get(ctx); p.Data()["status"] != sale.StatusExpired {
		t.Errorf("the revoked place: %v", p.Data())
	}
	if seats, _ := e.fs.Collection("screenings/s1/seats").Documents(ctx).GetAll(); len(seats) != 0 {
		t.Errorf("the revoked user's hold still holds %d seats", len(seats))
	}
	if r := e.call("HoldSeats", token(t, "ursula"), map[string]any{"screeningId": "s1", "seats": []string{"C3"}, "requestId": "h2"}); r.Status != 403 || r.code() != "not_admitted" {
		t.Errorf("a hold after the revoke: %d %v", r.Status, r.Body)
	}
	if r := e.operate(op, map[string]any{"screeningId": "s1", "action": "revoke", "uid": "no-such-user"}); r.Status != 400 || r.code() != "invalid_argument" {
		t.Errorf("revoking a user without a place: %d %v", r.Status, r.Body)
	}

	// Close: final. Joins, holds and bookings answer sale_closed; a live
	// hold may still be confirmed.
	e.admitted("s1", "victor")
	r = e.call("HoldSeats", token(t, "victor"), map[string]any{"screeningId": "s1", "seats": []string{"D1"}, "requestId": "v"})
	if r.Status != 201 {
		t.Fatalf("hold before the close: %d %v", r.Status, r.Body)
	}
	victorsHold := str(r, "holdId")
	for range 2 {
		if r := e.operate(op, map[string]any{"screeningId": "s1", "action": "close", "reason": "the projector broke"}); r.Status != 200 || r.Body["state"] != "closed" {
			t.Fatalf("close: %d %v", r.Status, r.Body)
		}
	}
	for _, c := range []struct {
		fn   string
		tok  string
		body map[string]any
	}{
		{"JoinQueue", token(t, "wendy"), map[string]any{"screeningId": "s1"}},
		{"HoldSeats", token(t, "victor"), map[string]any{"screeningId": "s1", "seats": []string{"D2"}, "requestId": "v2"}},
		{"BookSeats", token(t, "victor"), map[string]any{"screeningId": "s1", "seats": []string{"D3"}, "requestId": "v3"}},
		{"OperateSale", op, map[string]any{"screeningId": "s1", "action": "resume"}},
		{"OperateSale", op, map[string]any{"screeningId": "s1", "action": "configure", "sale": map[string]any{"maxActive": 3}}},
	} {
		if r := e.call(c.fn, c.tok, c.body); r.Status != 409 || r.code() != "sale_closed" {
			t.Errorf("%s %v after the close: %d %v, want 409 sale_closed", c.fn, c.body, r.Status, r.Body)
		}
	}
	if r := e.onHold("ConfirmHold", "victor", victorsHold); r.Status != 201 {
		t.Errorf("confirming a live hold after the close: %d %v", r.Status, r.Body)
	}
	var actions []string
	for _, l := range e.logEntries("s1") {
		actions = append(actions, l["action"].(string))
	}
	if got := strings.Join(actions, ","); got != "configure,pause,resume,configure,revoke,close" {
		t.Fatalf("logged actions %s", got)
	}
	if n, _ := e.fs.Collection(booking.Bookings).Where("screeningId", "==", "s1").Documents(ctx).GetAll(); len(n) != 1 {
		t.Fatalf("%d bookings after the close, want victor's confirmation only", len(n))
	}
}

// A client cannot make itself an operator: Firebase Auth refuses custom
// claims set with the user's own ID token (only the Admin SDK sets them),
// and OperateSale still answers not_operator with a fresh token.
func TestAClientCannotGrantItselfTheOperatorClaim(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "mallet")
	body, _ := json.Marshal(map[string]any{"idToken": tok, "customAttributes": `{"operator": true}`})
	resp, err := http.Post("http://"+os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")+"/identitytoolkit.googleapis.com/v1/accounts:update?key=fake-api-key", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("Firebase Auth let a user set their own custom claims")
	}
	fresh, _, err := emulators.SignIn("mallet@example.com", "secret-mallet")
	if err != nil {
		t.Fatal(err)
	}
	if r := e.operate(fresh, map[string]any{"screeningId": "s1", "action": "configure", "sale": map[string]any{"admitPerMinute": 1}}); r.Status != 403 || r.code() != "not_operator" {
		t.Fatalf("after trying to grant itself the claim: %d %v", r.Status, r.Body)
	}
}

// A place keeps its joiner's email (from the ID token, in lowercase), so
// that operators find a person by it; revoking a waiting place records
// when, and the log names the person by email as well as uid (issue #38).
func TestRevokeOfAJoinerFoundByEmailIsLoggedWithTheirEmail(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.onSale("byemail", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	op := operatorToken(t, "oona")
	if r := e.joinQueue("yannick", "byemail"); r.Status != 201 {
		t.Fatalf("join: %d %v", r.Status, r.Body)
	}
	found, err := e.fs.Collection(sale.Queue).Where("screeningId", "==", "byemail").Where("email", "==", "yannick@example.com").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Ref.ID != sale.QueueID("byemail", userID(t, "yannick")) || found[0].Data()["uid"] != userID(t, "yannick") {
		t.Fatalf("the place found by email: %d places %v", len(found), found)
	}
	if r := e.operate(op, map[string]any{"screeningId": "byemail", "action": "revoke", "uid": userID(t, "yannick"), "reason": "two accounts"}); r.Status != 200 {
		t.Fatalf("revoke: %d %v", r.Status, r.Body)
	}
	p, err := found[0].Ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := p.Data()[sale.FieldRevokedAt].(time.Time)
	if p.Data()["status"] != sale.StatusExpired || at.After(p.UpdateTime) || !at.After(p.Data()["joinedAt"].(time.Time)) {
		t.Errorf("the revoked place: %v (updated %v), want expired with revokedAt the revoke's time", p.Data(), p.UpdateTime)
	}
	log := e.logEntries("byemail")
	if len(log) != 1 || log[0]["action"] != "revoke" || log[0]["reason"] != "two accounts" {
		t.Fatalf("log %v", log)
	}
	for _, side := range []string{"before", "after"} {
		m, _ := log[0][side].(map[string]any)
		if m["user"] != userID(t, "yannick") || m["userEmail"] != "yannick@example.com" {
			t.Errorf("the revoke's %s names %v, want the uid and yannick@example.com", side, m)
		}
	}
	if before := log[0]["before"].(map[string]any); before["status"] != sale.StatusWaiting {
		t.Errorf("before %v: a waiting place", before)
	}
}
