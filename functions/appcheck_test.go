package functions_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
	"github.com/firelock/firelock/sale"
	"github.com/golang-jwt/jwt/v4"
)

// App Check on the sale's functions (CONTRACT §12), with real tokens: the
// Admin SDK fetches App Check's public keys from appcheck.JWKSUrl, here a
// key set served by the test with its own RSA key, and the tokens are
// signed with that key as App Check signs them. No emulator exists for
// App Check.

const testApp = "1:123456789:web:firelock"

type appCheckKeys struct {
	key *rsa.PrivateKey
	kid string
}

// serveAppCheckKeys serves a key set of one fresh RSA key at
// appcheck.JWKSUrl for the test.
func serveAppCheckKeys(t *testing.T) *appCheckKeys {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := &appCheckKeys{key: key, kid: "test-key-1"}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	was := appcheck.JWKSUrl
	appcheck.JWKSUrl = srv.URL
	t.Cleanup(func() { appcheck.JWKSUrl = was })
	return k
}

// claims are a valid token's for the test project and app, changed by set.
func validClaims(set func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": "https://firebaseappcheck.googleapis.com/123456789",
		"sub": testApp,
		"aud": []string{"projects/123456789", "projects/" + emulators.AuthProject},
		"iat": now.Add(-time.Minute).Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
	if set != nil {
		set(c)
	}
	return c
}

func (k *appCheckKeys) sign(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type appCheckCase struct {
	name   string
	token  string // "" with missing: no header
	result string // valid, missing or invalid
}

func appCheckCases(t *testing.T, k *appCheckKeys) []appCheckCase {
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, validClaims(nil))
	forged.Header["kid"] = k.kid // the real key's id, another key's signature
	badSig, _ := forged.SignedString(other)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims(nil))
	none.Header["kid"] = k.kid
	algNone, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	return []appCheckCase{
		{"valid", k.sign(t, validClaims(nil)), telemetry.Valid},
		{"expired", k.sign(t, validClaims(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Minute).Unix()
		})), telemetry.Invalid},
		{"not yet valid", k.sign(t, validClaims(func(c jwt.MapClaims) {
			c["iat"], c["nbf"] = time.Now().Add(time.Hour).Unix(), time.Now().Add(time.Hour).Unix()
		})), telemetry.Invalid},
		{"another project's audience", k.sign(t, validClaims(func(c jwt.MapClaims) { c["aud"] = []string{"projects/987654321", "projects/someone-else"} })), telemetry.Invalid},
		{"wrong issuer", k.sign(t, validClaims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example/123456789" })), telemetry.Invalid},
		{"bad signature", badSig, telemetry.Invalid},
		{"alg none", algNone, telemetry.Invalid},
		{"another app", k.sign(t, validClaims(func(c jwt.MapClaims) { c["sub"] = "1:123456789:web:a-script" })), telemetry.Invalid},
		{"garbage", "not-a-token", telemetry.Invalid},
		{"missing", "", telemetry.Missing},
	}
}

// withAppCheck puts the env's API under App Check in mode, counting on a
// fresh reader.
func withAppCheck(t *testing.T, e *env, mode string) *telemetrytest.Reader {
	t.Helper()
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	m := telemetrytest.New(t)
	e.api.AppCheck = functions.NewAppCheck(app, mode, []string{testApp}, m.Provider, nil)
	return m
}

func withToken(token string) func(*http.Request) {
	return func(r *http.Request) {
		if token != "" {
			r.Header.Set(functions.AppCheckHeader, token)
		}
	}
}

// In enforce, every token that is not a valid one of the project's app is
// refused with 401 app_check_failed, and nothing is written; the valid one
// joins. Each is counted under its result.
func TestAppCheckEnforceRefusesBadTokensAndWritesNothing(t *testing.T) {
	k := serveAppCheckKeys(t)
	e := newEnv(t)
	ctx := context.Background()
	e.onSale("guarded", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	m := withAppCheck(t, e, functions.AppCheckEnforce)
	cases := appCheckCases(t, k)
	for i, c := range cases {
		user := "enforced" + string(rune('a'+i))
		r := e.call("JoinQueue", token(t, user), map[string]any{"screeningId": "guarded"}, withToken(c.token))
		switch {
		case c.result == telemetry.Valid && r.Status != http.StatusCreated:
			t.Errorf("%s: %d %v, want 201", c.name, r.Status, r.Body)
		case c.result != telemetry.Valid && (r.Status != http.StatusUnauthorized || r.code() != "app_check_failed"):
			t.Errorf("%s: %d %v, want 401 app_check_failed", c.name, r.Status, r.Body)
		}
	}
	places, err := e.fs.Collection(sale.Queue).Where("screeningId", "==", "guarded").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(places) != 1 || places[0].Data()["uid"] != userID(t, "enforceda") {
		t.Fatalf("%d places after the refused joins, want the valid token's alone", len(places))
	}
	// The other guarded functions refuse a missing token too, before
	// anything is read; ConfirmHold is not guarded.
	for _, fn := range []string{"HoldSeats", "BookSeats", "CheckoutHold"} {
		body := map[string]any{"screeningId": "s1", "seats": []string{"A1"}, "requestId": "r-" + fn}
		if fn == "CheckoutHold" {
			body = map[string]any{"holdId": "h", "returnUrl": "http://127.0.0.1/"}
		}
		if r := e.call(fn, token(t, "enforceda"), body); r.Status != http.StatusUnauthorized || r.code() != "app_check_failed" {
			t.Errorf("%s without a token: %d %v, want 401 app_check_failed", fn, r.Status, r.Body)
		}
	}
	if st := e.holdState(); len(st.seats) != 0 || len(st.holds) != 0 || len(st.bookings) != 0 {
		t.Fatalf("refused calls wrote seats %v holds %v bookings %v", st.seats, st.holds, st.bookings)
	}
	valid := m.Value(t, telemetry.AppCheckVerifications, telemetry.Result.String(telemetry.Valid))
	missing := m.Value(t, telemetry.AppCheckVerifications, telemetry.Result.String(telemetry.Missing))
	invalid := m.Value(t, telemetry.AppCheckVerifications, telemetry.Result.String(telemetry.Invalid))
	if valid != 1 || missing != 4 || invalid != float64(len(cases)-2) {
		t.Fatalf("valid, missing, invalid = %v, %v, %v; want 1, 4, %d; %s", valid, missing, invalid, len(cases)-2, m.Dump(t, telemetry.AppCheckVerifications))
	}
}

// In monitor, every call goes on whatever its token, and each is counted
// under its result (and logged).
func TestAppCheckMonitorCountsEveryResultAndRefusesNothing(t *testing.T) {
	k := serveAppCheckKeys(t)
	e := newEnv(t)
	e.onSale("watched", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	m := withAppCheck(t, e, functions.AppCheckMonitor)
	cases := appCheckCases(t, k)
	for i, c := range cases {
		r := e.call("JoinQueue", token(t, "monitored"+string(rune('a'+i))), map[string]any{"screeningId": "watched"}, withToken(c.token))
		if r.Status != http.StatusCreated {
			t.Errorf("%s: %d %v, want 201 (monitor refuses nothing)", c.name, r.Status, r.Body)
			continue
		}
		// The place says what App Check made of its join (the report's
		// and the console's joins by result).
		place, err := e.fs.Doc("queue/" + fmt.Sprint(r.Body["queueId"])).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := place.Data()["appCheck"]; got != c.result {
			t.Errorf("%s: the place records appCheck %v, want %q", c.name, got, c.result)
		}
	}
	for _, want := range []struct {
		result string
		n      int
	}{{telemetry.Valid, 1}, {telemetry.Missing, 1}, {telemetry.Invalid, len(cases) - 2}} {
		if got := m.Value(t, telemetry.AppCheckVerifications, telemetry.Result.String(want.result)); got != float64(want.n) {
			t.Errorf("%s: counted %v, want %d; %s", want.result, got, want.n, m.Dump(t, telemetry.AppCheckVerifications))
		}
	}
}

// FIRELOCK_APPCHECK is read at start: off when unset, and a value that is
// none of the three fails the start rather than switching checks off.
func TestAppCheckModeFromTheEnvironment(t *testing.T) {
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ env, mode string }{{"", functions.AppCheckOff}, {"monitor", functions.AppCheckMonitor}, {" Enforce ", functions.AppCheckEnforce}} {
		t.Setenv(functions.AppCheckEnv, c.env)
		ac, err := functions.AppCheckFromEnv(app, nil, nil)
		if err != nil || ac.Mode != c.mode {
			t.Errorf("%s=%q: %+v %v, want %s", functions.AppCheckEnv, c.env, ac, err, c.mode)
		}
	}
	t.Setenv(functions.AppCheckAppsEnv, " 1:1:web:a, ,1:1:ios:b ")
	if ac, err := functions.AppCheckFromEnv(app, nil, nil); err != nil || len(ac.Apps) != 2 || ac.Apps[0] != "1:1:web:a" || ac.Apps[1] != "1:1:ios:b" {
		t.Errorf("%s: %+v %v, want the two app IDs", functions.AppCheckAppsEnv, ac, err)
	}
	// Another key set than App Check's is for local runs: without the
	// emulators it fails the start, and App Check's own URL stays.
	was := appcheck.JWKSUrl
	t.Setenv(functions.AppCheckJWKSEnv, "https://keys.example/jwks")
	t.Setenv("FIRESTORE_EMULATOR_HOST", "")
	t.Setenv("FIREBASE_AUTH_EMULATOR_HOST", "")
	if _, err := functions.AppCheckFromEnv(app, nil, nil); err == nil || appcheck.JWKSUrl != was {
		t.Fatalf("%s without the emulators: %v (key set %s), want an error and App Check's own keys", functions.AppCheckJWKSEnv, err, appcheck.JWKSUrl)
	}
	t.Setenv(functions.AppCheckJWKSEnv, "")
	t.Setenv(functions.AppCheckEnv, "enforced")
	if _, err := functions.AppCheckFromEnv(app, nil, nil); err == nil {
		t.Fatal("a misspelt mode was accepted")
	}
}

// When App Check's keys cannot be fetched no token can be judged: enforce
// answers 503 unavailable with Retry-After (not 401: the app did nothing
// wrong) and writes nothing; monitor lets the call go on and counts it
// invalid.
func TestAppCheckWithoutItsKeysIsUnavailableNotRefused(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	was := appcheck.JWKSUrl
	appcheck.JWKSUrl = dead.URL
	t.Cleanup(func() { appcheck.JWKSUrl = was })
	e := newEnv(t)
	ctx := context.Background()
	e.onSale("nokeys", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 5})
	withAppCheck(t, e, functions.AppCheckEnforce)
	r := e.call("JoinQueue", token(t, "keyless"), map[string]any{"screeningId": "nokeys"}, withToken("some.token.here"))
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("enforce without keys: %d %v %v, want 503 unavailable with Retry-After", r.Status, r.Body, r.Header)
	}
	if places, _ := e.fs.Collection(sale.Queue).Where("screeningId", "==", "nokeys").Documents(ctx).GetAll(); len(places) != 0 {
		t.Fatalf("a call App Check could not judge left %d places", len(places))
	}
	m := withAppCheck(t, e, functions.AppCheckMonitor)
	if r := e.call("JoinQueue", token(t, "keyless"), map[string]any{"screeningId": "nokeys"}, withToken("some.token.here")); r.Status != http.StatusCreated {
		t.Fatalf("monitor without keys: %d %v, want 201", r.Status, r.Body)
	}
	if n := m.Value(t, telemetry.AppCheckVerifications, telemetry.Result.String(telemetry.Invalid)); n != 1 {
		t.Fatalf("monitor without keys counted %v invalid, want 1", n)
	}
}
