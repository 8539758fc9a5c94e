package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/firelock/firelock/functions"
	"github.com/golang-jwt/jwt/v4"
)

// App Check in the local run (CONTRACT §12). No emulator exists for App
// Check, so with -appcheck enforce or monitor the run plays its part: a
// fresh RSA key per run, its key set (JWKS) served on loopback, where the
// functions' verifier (the Admin SDK) fetches it (FIRELOCK_APPCHECK_JWKS_URL),
// and a token endpoint that signs App Check tokens as App Check does after
// an attestation. The web app's CustomProvider fetches its tokens there;
// what reCAPTCHA Enterprise attests in production, a local page cannot.
const (
	// AppCheckJWKSPath serves the run's key set.
	AppCheckJWKSPath = "/jwks"
	// AppCheckTokenPath answers a fresh token: JSON {"token",
	// "expireTimeMillis"} (the JS SDK's CustomProvider's shape), or the
	// bare token with ?format=text, for curl.
	AppCheckTokenPath = "/token"
	// AppCheckTokenTTL is short, so that the app's token refresh runs in
	// a local session too (App Check's own default is an hour).
	AppCheckTokenTTL = 10 * time.Minute
	// LocalProjectNumber stands for the project number that App Check
	// puts in its tokens' issuer and audience; the emulators' project has
	// none.
	LocalProjectNumber = "123456789012"
	// LocalAppID is the app ID of the local run's tokens (the token's
	// subject), unless FIRELOCK_APPCHECK_APPS names one.
	LocalAppID = "1:" + LocalProjectNumber + ":web:firelock-local"
	// AppCheckTokenURLEnv names the run's token endpoint in the env file and
	// for a command the run starts.
	AppCheckTokenURLEnv = "FIRELOCK_APPCHECK_TOKEN_URL"
)

// appCheckMode is the run's App Check mode: the -appcheck flag, else
// FIRELOCK_APPCHECK from the environment (as a deployed function reads
// it), else off.
func appCheckMode(flagValue string) (string, error) {
	mode, from := flagValue, "-appcheck"
	if mode == "" {
		mode, from = os.Getenv(functions.AppCheckEnv), functions.AppCheckEnv
	}
	mode = strings.ToLower(strings.TrimSpace(mode))
	if mode == "" {
		return functions.AppCheckOff, nil
	}
	if !slices.Contains([]string{functions.AppCheckEnforce, functions.AppCheckMonitor, functions.AppCheckOff}, mode) {
		return "", fmt.Errorf("%s %q: want enforce, monitor or off", from, mode)
	}
	return mode, nil
}

// appCheckRun is the run's stand-in for App Check: nil with -appcheck off.
type appCheckRun struct {
	mode     string
	project  string
	appID    string
	key      *rsa.PrivateKey
	kid      string
	origins  []string // browser origins that may fetch tokens (CORS)
	ln       net.Listener
	srv      *http.Server
	jwks     []byte
	JWKSURL  string
	TokenURL string
}

// startAppCheck makes the run's key and serves its key set and token
// endpoint on loopback; nil with mode off. The tokens are for project and,
// as the functions check it, for the first of FIRELOCK_APPCHECK_APPS (else
// LocalAppID). origins may fetch tokens from a page.
func startAppCheck(mode, project string, origins []string) (*appCheckRun, error) {
	if mode == functions.AppCheckOff {
		return nil, nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	a := &appCheckRun{mode: mode, project: project, appID: LocalAppID, key: key, origins: origins}
	for _, id := range strings.Split(os.Getenv(functions.AppCheckAppsEnv), ",") {
		if id = strings.TrimSpace(id); id != "" {
			a.appID = id
			break
		}
	}
	kidBytes := make([]byte, 6)
	if _, err := rand.Read(kidBytes); err != nil {
		return nil, err
	}
	a.kid = "firelock-local-" + base64.RawURLEncoding.EncodeToString(kidBytes)
	b64 := base64.RawURLEncoding.EncodeToString
	a.jwks, _ = json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": a.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if a.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("App Check stand-in: %w", err)
	}
	base := "http://" + a.ln.Addr().String()
	a.JWKSURL, a.TokenURL = base+AppCheckJWKSPath, base+AppCheckTokenPath
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AppCheckJWKSPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(a.jwks)
	})
	mux.HandleFunc(AppCheckTokenPath, a.serveToken)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "firelock-local: App Check stand-in:", err)
		}
	}()
	return a, nil
}

// sign makes an App Check token as App Check signs one: RS256 with the
// key's id, the project's number in the issuer, the project's number and
// id in the audience, the app's ID as the subject.
func (a *appCheckRun) sign(now time.Time) (string, time.Time, error) {
	exp := now.Add(AppCheckTokenTTL)
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://firebaseappcheck.googleapis.com/" + LocalProjectNumber,
		"sub": a.appID,
		"aud": []string{"projects/" + LocalProjectNumber, "projects/" + a.project},
		"iat": now.Unix(),
		"exp": exp.Unix(),
	})
	tok.Header["kid"] = a.kid
	s, err := tok.SignedString(a.key)
	return s, exp, err
}

// serveToken answers a fresh token to anyone on loopback (GET or POST): it
// stands in for the attestation, which locally there is none of. A page of
// the run's web app may fetch it (CORS).
func (a *appCheckRun) serveToken(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && slices.Contains(a.origins, o) {
		w.Header().Set("Access-Control-Allow-Origin", o)
		w.Header().Set("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodPost:
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	token, exp, err := a.sign(time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, token)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": token, "expireTimeMillis": exp.UnixMilli()})
}

func (a *appCheckRun) stop() {
	if a != nil && a.srv != nil {
		a.srv.Close()
	}
}

// env is what the functions read (FIRELOCK_APPCHECK, and the key set's
// URL), what the env file exports and what a command the run starts gets:
// nothing with App Check off, so that an exported mode never outlives the
// run that chose it.
func (a *appCheckRun) env() [][2]string {
	if a == nil {
		return nil
	}
	return [][2]string{{functions.AppCheckEnv, a.mode}, {functions.AppCheckJWKSEnv, a.JWKSURL}, {AppCheckTokenURLEnv, a.TokenURL}}
}

// webEnv is the web app's part: its CustomProvider's endpoint.
func (a *appCheckRun) webEnv() []string {
	if a == nil {
		return nil
	}
	return []string{"VITE_APPCHECK_TOKEN_URL=" + a.TokenURL}
}

// banner is the App Check part of the run's banner.
func (a *appCheckRun) banner() string {
	if a == nil {
		return "  App Check           off   (-appcheck enforce|monitor: tokens signed by this run)\n"
	}
	return fmt.Sprintf("  App Check           %s   (%s; key set %s, made for this run)\n"+
		"  App Check tokens    %s   (%s; the app's CustomProvider; valid %d min)\n"+
		"                      JoinQueue, HoldSeats, BookSeats, CheckoutHold by curl: add\n"+
		"                      -H \"%s: $(curl -sS \"$%s?format=text\")\"\n",
		a.mode, functions.AppCheckEnv, a.JWKSURL, a.TokenURL, AppCheckTokenURLEnv, int(AppCheckTokenTTL.Minutes()), functions.AppCheckHeader, AppCheckTokenURLEnv)
}
