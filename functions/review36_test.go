package functions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Defects found in review of running a sale (issue #36, items 6-8), each
// as an operator meets it over HTTP: a refused call answers the contract's
// error and writes nothing.

// operateRaw sends OperateSale a body as is.
func (e *env) operateRaw(tok, body string) response {
	e.t.Helper()
	return e.call("OperateSale", tok, body)
}

// A reason's length is counted in characters: 300 "é" (600 bytes) are
// accepted, 501 characters are refused (item 6).
func TestAReasonIsCountedInCharacters(t *testing.T) {
	e := newEnv(t)
	op := operatorToken(t, "odile")
	e.onSale("reasons", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	if r := e.operate(op, map[string]any{"screeningId": "reasons", "action": "pause", "reason": strings.Repeat("é", 300)}); r.Status != 200 {
		t.Fatalf("a reason of 300 é: %d %v, want 200", r.Status, r.Body)
	}
	r := e.operate(op, map[string]any{"screeningId": "reasons", "action": "resume", "reason": strings.Repeat("é", 501)})
	if r.Status != 400 || r.code() != "invalid_argument" || !strings.Contains(fmt.Sprint(r.Body), "500 characters") {
		t.Fatalf("a reason of 501 é: %d %v, want 400 invalid_argument", r.Status, r.Body)
	}
	if log := e.logEntries("reasons"); len(log) != 1 || log[0]["reason"] != strings.Repeat("é", 300) {
		t.Fatalf("log %v, want the pause alone with its reason", log)
	}
}

// A field given twice inside sale is refused, as one given twice at the top
// level is: the last value would win over the one a log or a proxy looked
// at (item 7). A number too large for any field is invalid_sale naming the
// field, not a generic error (item 8). Neither writes.
func TestOperateSaleRefusesDuplicateAndHugeSaleFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := operatorToken(t, "otto")
	e.onSale("dups", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	before, err := e.fs.Doc("screenings/dups").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, code, says string }{
		{`{"screeningId": "dups", "action": "configure", "sale": {"maxActive": 5, "maxActive": 100000}}`, "invalid_sale", `sale.maxActive appears more than once`},
		{`{"screeningId": "dups", "action": "configure", "sale": {"maxActive": 1e400}}`, "invalid_sale", `sale.maxActive must be a whole number from 1 to 100000, not the number 1e400`},
		{`{"screeningId": "dups", "action": "configure", "sale": {"admitPerMinute": -1e999}}`, "invalid_sale", `sale.admitPerMinute must be a whole number from 1 to 10000, not the number -1e999`},
		{`{"screeningId": "dups", "action": "configure", "sale": [1]}`, "invalid_argument", `sale must be an object`},
	} {
		r := e.operateRaw(op, c.body)
		msg, _ := r.Body["error"].(map[string]any)
		if r.Status != 400 || r.code() != c.code || !strings.Contains(fmt.Sprint(msg["message"]), c.says) {
			t.Errorf("%s: %d %v, want 400 %s saying %q", c.body, r.Status, r.Body, c.code, c.says)
		}
	}
	after, err := e.fs.Doc("screenings/dups").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdateTime.Equal(before.UpdateTime) || len(e.logEntries("dups")) != 0 {
		t.Fatalf("a refused configure wrote: %v, log %v", after.Data()["sale"], e.logEntries("dups"))
	}
}
