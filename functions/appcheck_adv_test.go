package functions_test

// Adversarial tests of App Check (CONTRACT §12): each is red if a bypass,
// a write by a refused call, or a stall exists.

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/golang-jwt/jwt/v4"
)

// allDocs counts every document of the database, by collection path
// (subcollections of missing parents included).
func allDocs(t *testing.T, fs *firestore.Client) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	var walk func(cols []*firestore.CollectionRef)
	walk = func(cols []*firestore.CollectionRef) {
		for _, c := range cols {
			refs, err := c.DocumentRefs(ctx).GetAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				if _, err := r.Get(ctx); err == nil {
					out[c.Path]++
				}
				subs, err := r.Collections(ctx).GetAll()
				if err != nil {
					t.Fatal(err)
				}
				walk(subs)
			}
		}
	}
	roots, err := fs.Collections(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	walk(roots)
	return out
}

func sameDocs(t *testing.T, what string, before, after map[string]int) {
	t.Helper()
	for k, n := range after {
		if before[k] != n {
			t.Errorf("%s: %s has %d documents, had %d", what, k, n, before[k])
		}
	}
}

func enforceOn(t *testing.T, e *env, mode string, apps []string) {
	t.Helper()
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	e.api.AppCheck = functions.NewAppCheck(app, mode, apps, nil, nil)
}

// Attack 1: every method and path that reaches a guarded function's
// handler (deployed, the function answers every path at "/"), without a
// token under enforce: nothing but a 204 preflight succeeds, and nothing is
// written. The unguarded functions cannot create a place, hold or seat.
func TestAdvAppCheckEveryRouteAndFunctionWithoutAToken(t *testing.T) {
	serveAppCheckKeys(t)
	e := newEnv(t)
	e.onSale("adv", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 50})
	enforceOn(t, e, functions.AppCheckEnforce, nil)
	before := allDocs(t, e.fs)
	if before[e.fs.Collection("screenings").Path] == 0 {
		t.Fatalf("allDocs sees no screenings: %v", before)
	}
	idTok := token(t, "adv-route")
	handlers := map[string]http.HandlerFunc{"JoinQueue": e.api.JoinQueue, "HoldSeats": e.api.HoldSeats, "BookSeats": e.api.BookSeats, "CheckoutHold": e.api.CheckoutHold}
	bodies := map[string]string{
		"JoinQueue":    `{"screeningId":"adv"}`,
		"HoldSeats":    `{"screeningId":"s1","seats":["A1"],"requestId":"adv-h"}`,
		"BookSeats":    `{"screeningId":"s1","seats":["A2"],"requestId":"adv-b"}`,
		"CheckoutHold": `{"holdId":"h","returnUrl":"http://127.0.0.1/"}`,
	}
	for fn, h := range handlers {
		srv := httptest.NewServer(h) // every path, as FUNCTION_TARGET serves it
		for _, method := range []string{"POST", "GET", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
			for _, path := range []string{"/", "/" + fn, "/" + strings.ToLower(fn) + "/", "//" + fn + "/x?y=1"} {
				req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(bodies[fn]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+idTok)
				req.Header.Set("Origin", "http://localhost:5173")
				req.Header.Set("Access-Control-Request-Method", "POST")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok := resp.StatusCode == http.StatusUnauthorized || (method == "OPTIONS" && resp.StatusCode == http.StatusNoContent)
				if !ok {
					t.Errorf("%s %s %s without App Check: %d", fn, method, path, resp.StatusCode)
				}
			}
		}
		srv.Close()
	}
	// The unguarded functions, without a token: no place, hold, seat or booking.
	for fn, body := range map[string]any{
		"ExtendHold":    map[string]any{"holdId": "h", "holdSeconds": 60},
		"ConfirmHold":   map[string]any{"holdId": "h"},
		"ReleaseHold":   map[string]any{"holdId": "h"},
		"CancelBooking": map[string]any{"bookingId": "b"},
		"OperateSale":   map[string]any{"screeningId": "adv", "action": "open"},
		"StripeWebhook": map[string]any{"type": "checkout.session.completed"},
	} {
		r := e.call(fn, idTok, body)
		if r.Status < 400 {
			t.Errorf("%s (unguarded) without App Check: %d %v", fn, r.Status, r.Body)
		}
	}
	sameDocs(t, "calls without App Check", before, allDocs(t, e.fs))
}

// Attack 2: token tricks, under enforce with FIRELOCK_APPCHECK_APPS set.
func TestAdvAppCheckTokenTricks(t *testing.T) {
	k := serveAppCheckKeys(t)
	e := newEnv(t)
	e.onSale("tricks", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 100, "maxActive": 50})
	enforceOn(t, e, functions.AppCheckEnforce, []string{testApp})
	valid := k.sign(t, validClaims(nil))

	pubDER, _ := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	signWith := func(m jwt.SigningMethod, key any, hdr map[string]any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		for h, v := range hdr {
			if v == nil {
				delete(tok.Header, h)
			} else {
				tok.Header[h] = v
			}
		}
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var hsPEM, hsN string
	hsPEM = signWith(jwt.SigningMethodHS256, pubPEM, map[string]any{"kid": k.kid}, validClaims(nil))
	hsN = signWith(jwt.SigningMethodHS256, k.key.N.Bytes(), map[string]any{"kid": k.kid}, validClaims(nil))
	hsAlgRS := func() string { // HS256 MAC under an alg header claiming RS256
		s := strings.Split(hsPEM, ".")
		h := `{"alg":"RS256","kid":"` + k.kid + `","typ":"JWT"}`
		return jwt.EncodeSegment([]byte(h)) + "." + s[1] + "." + s[2]
	}()
	cases := []struct {
		name   string
		hdrs   []string // X-Firebase-AppCheck values, in order
		status int
	}{
		{"valid", []string{valid}, 201},
		{"HS256 keyed with the public key PEM", []string{hsPEM}, 401},
		{"HS256 keyed with the modulus", []string{hsN}, 401},
		{"HS256 MAC under an RS256 header", []string{hsAlgRS}, 401},
		{"missing kid", []string{signWith(jwt.SigningMethodRS256, k.key, map[string]any{"kid": nil}, validClaims(nil))}, 401},
		{"unknown kid", []string{signWith(jwt.SigningMethodRS256, k.key, map[string]any{"kid": "nope"}, validClaims(nil))}, 401},
		{"missing typ", []string{signWith(jwt.SigningMethodRS256, k.key, map[string]any{"kid": k.kid, "typ": nil}, validClaims(nil))}, 401},
		{"aud names only the project number", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { c["aud"] = []string{"projects/123456789"} }))}, 401},
		{"aud a string", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { c["aud"] = "projects/" + emulators.AuthProject }))}, 401},
		{"no exp", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { delete(c, "exp") }))}, 401},
		{"no iat", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { delete(c, "iat") }))}, 401},
		{"empty sub", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { c["sub"] = "" }))}, 401},
		{"another app", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { c["sub"] = "1:123456789:web:a-script" }))}, 401},
		{"another app's id with a space", []string{k.sign(t, validClaims(func(c jwt.MapClaims) { c["sub"] = testApp + " " }))}, 401},
		{"spaces around a valid token", []string{"  " + valid + "\t"}, 201}, // net/http trims OWS: still the valid token
		{"valid then garbage", []string{valid, "garbage"}, 201},             // the first counts
		{"garbage then valid", []string{"garbage", valid}, 401},
		{"enormous garbage", []string{strings.Repeat("a", 900<<10)}, 401},
		{"enormous dotted garbage", []string{strings.Repeat("a", 300<<10) + "." + strings.Repeat("b", 300<<10) + "." + strings.Repeat("c", 200<<10)}, 401},
		{"too large for the server", []string{strings.Repeat("a", 2<<20)}, 431},
	}
	for i, c := range cases {
		user := fmt.Sprintf("trick%02d", i)
		req, _ := http.NewRequest("POST", e.srv.URL+"/JoinQueue", strings.NewReader(`{"screeningId":"tricks"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token(t, user))
		for _, h := range c.hdrs {
			req.Header.Add(functions.AppCheckHeader, h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.status)
		}
	}
	// A token with seconds left is still good: no minimum remaining life is
	// asked. It is signed just before its call; signed with the table above,
	// a loaded machine spent its second on the cases before it (a CI run
	// answered 401).
	short := k.sign(t, validClaims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(5 * time.Second).Unix() }))
	if r := e.call("JoinQueue", token(t, "trick-short"), map[string]any{"screeningId": "tricks"}, withToken(short)); r.Status != 201 {
		t.Errorf("a token expiring in seconds: %d %v, want 201", r.Status, r.Body)
	}
	// FIRELOCK_APPCHECK_APPS unset: another app of the project counts (as documented).
	enforceOn(t, e, functions.AppCheckEnforce, nil)
	other := k.sign(t, validClaims(func(c jwt.MapClaims) { c["sub"] = "1:123456789:web:a-script" }))
	if r := e.call("JoinQueue", token(t, "trick-anyapp"), map[string]any{"screeningId": "tricks"}, withToken(other)); r.Status != 201 {
		t.Errorf("another app with no app list: %d %v, want 201 (any app of the project)", r.Status, r.Body)
	}
}

// Attack 3: a retried JoinQueue keeps the appCheck of the call that made
// the place, whatever the retry's token says (so neither a script can
// launder its place with one good token later, nor a later bad token
// taint a good one).
func TestAdvAppCheckRetriedJoinKeepsTheFirstResult(t *testing.T) {
	k := serveAppCheckKeys(t)
	e := newEnv(t)
	e.onSale("retry", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 100, "maxActive": 50})
	enforceOn(t, e, functions.AppCheckMonitor, []string{testApp})
	valid := k.sign(t, validClaims(nil))
	for _, c := range []struct{ user, first, second, want string }{
		{"retry-a", "", valid, telemetry.Missing},
		{"retry-b", "garbage", valid, telemetry.Invalid},
		{"retry-c", valid, "", telemetry.Valid},
		{"retry-d", valid, "garbage", telemetry.Valid},
	} {
		r1 := e.call("JoinQueue", token(t, c.user), map[string]any{"screeningId": "retry"}, withToken(c.first))
		r2 := e.call("JoinQueue", token(t, c.user), map[string]any{"screeningId": "retry"}, withToken(c.second))
		if r1.Status != 201 || r2.Status != 200 {
			t.Fatalf("%s: %d then %d", c.user, r1.Status, r2.Status)
		}
		p, err := e.fs.Doc("queue/" + fmt.Sprint(r1.Body["queueId"])).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Data()["appCheck"]; got != c.want {
			t.Errorf("%s: appCheck %v after the retry, want %q", c.user, got, c.want)
		}
	}
}

// Attack 4: App Check's key set hangs (a black hole, not a refused
// connection). Concurrent calls must not queue behind one another's key
// fetch: each answers within one fetch's timeout (3 s here, 10 s deployed),
// monitor goes on, enforce answers 503 and writes nothing.
func TestAdvAppCheckHangingKeysDoNotSerializeCalls(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	was := appcheck.JWKSUrl
	appcheck.JWKSUrl = hang.URL
	t.Cleanup(func() { appcheck.JWKSUrl = was })
	e := newEnv(t)
	e.onSale("hang", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 100, "maxActive": 50})
	for _, mode := range []string{functions.AppCheckEnforce, functions.AppCheckMonitor} {
		enforceOn(t, e, mode, nil)
		const fetch = 3 * time.Second
		e.api.AppCheck.FetchTimeout = fetch
		before := allDocs(t, e.fs)
		const n = 3
		toks := make([]string, n)
		for i := range toks {
			toks[i] = token(t, fmt.Sprintf("hang-%s-%d", mode, i))
		}
		var wg sync.WaitGroup
		took, status := make([]time.Duration, n), make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				req, _ := http.NewRequest("POST", e.srv.URL+"/JoinQueue", bytes.NewReader([]byte(`{"screeningId":"hang"}`)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+toks[i])
				req.Header.Set(functions.AppCheckHeader, "some.token.here")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				took[i], status[i] = time.Since(start), resp.StatusCode
			}()
		}
		wg.Wait()
		for i := range n {
			want := 503
			if mode == functions.AppCheckMonitor {
				want = 201
			}
			if status[i] != want || took[i] >= 2*fetch-fetch/10 { // calls queued behind one another take two fetches and more
				t.Errorf("%s, call %d of %d at once with the key set hanging: %d after %v, want %d in less than two fetches (%v each)", mode, i, n, status[i], took[i].Round(100*time.Millisecond), want, fetch)
			}
		}
		if mode == functions.AppCheckEnforce {
			sameDocs(t, "enforce with the key set hanging", before, allDocs(t, e.fs))
		}
	}
}
