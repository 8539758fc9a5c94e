package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"firebase.google.com/go/v4/appcheck"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/sale"
	gonanoid "github.com/matoous/go-nanoid/v2"
)

// localAppCheck starts the run's App Check stand-in in mode and puts the
// environment a run gives its functions in place for the test.
func localAppCheck(t *testing.T, mode string) *appCheckRun {
	t.Helper()
	ac, err := startAppCheck(mode, emulators.AuthProject, []string{"http://127.0.0.1:5173"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ac.stop)
	t.Setenv(functions.AppCheckEnv, mode)
	for _, kv := range ac.env() {
		t.Setenv(kv[0], kv[1])
	}
	was := appcheck.JWKSUrl // functions.AppCheckFromEnv points the SDK at the run's key set
	t.Cleanup(func() { appcheck.JWKSUrl = was })
	return ac
}

// fetchToken gets a token from the run's endpoint as the app's
// CustomProvider does, from the web app's origin.
func fetchToken(t *testing.T, ac *appCheckRun) (token string, expires time.Time) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ac.TokenURL, nil)
	req.Header.Set("Origin", "http://127.0.0.1:5173")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:5173" {
		t.Fatalf("token endpoint: %d, CORS %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	var out struct {
		Token            string `json:"token"`
		ExpireTimeMillis int64  `json:"expireTimeMillis"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		t.Fatalf("token endpoint answered %+v, %v", out, err)
	}
	return out.Token, time.UnixMilli(out.ExpireTimeMillis)
}

// The functions' verifier (the Admin SDK, pointed at the run's key set by
// FIRELOCK_APPCHECK_JWKS_URL, as firelock-local sets it) accepts the
// tokens of the run's endpoint. In enforce, JoinQueue without a token, with
// garbage, or with a token another run signed is refused with 401
// app_check_failed and writes nothing; with the endpoint's token it gets a
// place.
func TestLocalAppCheckTokensPassTheFunctionsVerifierAndEnforceRefusesTheRest(t *testing.T) {
	ctx := context.Background()
	ac := localAppCheck(t, functions.AppCheckEnforce)
	other, err := startAppCheck(functions.AppCheckEnforce, emulators.AuthProject, nil) // another run's key
	if err != nil {
		t.Fatal(err)
	}
	defer other.stop()
	othersToken, _, err := other.Sign(time.Now())
	if err != nil {
		t.Fatal(err)
	}

	fs := firelocktest.NewClientFor(t, emulators.AuthProject)
	api, err := functions.NewAPI(ctx, fs, emulators.AuthProject)
	if err != nil {
		t.Fatal(err)
	}
	if api.AppCheck == nil || api.AppCheck.Mode != functions.AppCheckEnforce {
		t.Fatalf("the functions read App Check %+v, want enforce", api.AppCheck)
	}
	screening := "appcheck-" + strings.ToLower(gonanoid.MustGenerate("abcdefghijklmnopqrstuvwxyz0123456789", 8))
	if _, err := fs.Collection(booking.Screenings).Doc(screening).Set(ctx, map[string]any{
		"title": "App Check", "startsAt": time.Now().Add(24 * time.Hour), "rows": []string{"A"}, "seatsPerRow": 4,
		"sale": map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": 1},
	}); err != nil {
		t.Fatal(err)
	}
	idToken, uid, err := emulators.SignIn(screening+"@example.com", "appcheck-password")
	if err != nil {
		t.Fatal(err)
	}
	join := func(appCheckToken string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "/JoinQueue", strings.NewReader(`{"screeningId": "`+screening+`"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+idToken)
		if appCheckToken != "" {
			r.Header.Set(functions.AppCheckHeader, appCheckToken)
		}
		w := httptest.NewRecorder()
		api.JoinQueue(w, r)
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		b, _ := io.ReadAll(w.Body)
		json.Unmarshal(b, &body)
		return w.Code, body.Error.Code + " " + string(b)
	}
	places := func() int {
		docs, err := fs.Collection(sale.Queue).Where("screeningId", "==", screening).Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		return len(docs)
	}

	for name, tok := range map[string]string{"no token": "", "garbage": "not-a-token", "another run's token": othersToken} {
		if status, answer := join(tok); status != http.StatusUnauthorized || !strings.HasPrefix(answer, "app_check_failed ") {
			t.Errorf("%s: %d %s, want 401 app_check_failed", name, status, answer)
		}
	}
	if n := places(); n != 0 {
		t.Fatalf("refused joins left %d places", n)
	}

	token, expires := fetchToken(t, ac)
	if left := time.Until(expires); left < AppCheckTokenTTL-time.Minute || left > AppCheckTokenTTL {
		t.Errorf("the token expires in %v, want about %v", left, AppCheckTokenTTL)
	}
	if status, answer := join(token); status != http.StatusCreated {
		t.Fatalf("with the endpoint's token: %d %s, want 201", status, answer)
	}
	if n := places(); n != 1 {
		t.Fatalf("%d places for %s after the valid join, want 1", n, uid)
	}
	// curl's form: the bare token, which verifies too.
	resp, err := http.Get(ac.TokenURL + "?format=text")
	if err != nil {
		t.Fatal(err)
	}
	bare, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if status, answer := join(string(bare)); status != http.StatusOK {
		t.Fatalf("with the text token: %d %s, want 200 (the place the caller has)", status, answer)
	}
}

// The token endpoint lets the run's web app fetch tokens from a page, and
// no other origin.
func TestLocalAppCheckTokenEndpointAllowsOnlyTheWebAppsOrigin(t *testing.T) {
	ac := localAppCheck(t, functions.AppCheckMonitor)
	req, _ := http.NewRequest(http.MethodGet, ac.TokenURL, nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("another origin was allowed: %q", got)
	}
	fetchToken(t, ac) // the web app's origin is
}

// -appcheck wins over FIRELOCK_APPCHECK, which applies when the flag is
// not given, as in a deployed function; a misspelt mode is refused.
func TestAppCheckModeFromFlagThenEnvironment(t *testing.T) {
	for _, c := range []struct{ flag, env, want string }{
		{"", "", functions.AppCheckOff},
		{"", "monitor", functions.AppCheckMonitor},
		{"enforce", "monitor", functions.AppCheckEnforce},
		{"off", "enforce", functions.AppCheckOff},
		{" Enforce", "", functions.AppCheckEnforce},
	} {
		t.Setenv(functions.AppCheckEnv, c.env)
		if got, err := appCheckMode(c.flag); err != nil || got != c.want {
			t.Errorf("-appcheck %q with %s=%q: %q %v, want %q", c.flag, functions.AppCheckEnv, c.env, got, err, c.want)
		}
	}
	t.Setenv(functions.AppCheckEnv, "enforced")
	if _, err := appCheckMode(""); err == nil {
		t.Error("a misspelt FIRELOCK_APPCHECK was accepted")
	}
	if _, err := appCheckMode("on"); err == nil {
		t.Error("-appcheck on was accepted")
	}
}
