package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/firelock/firelock/cmd/firelock-local/appchecklocal"
	"github.com/firelock/firelock/functions"
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
	AppCheckJWKSPath = appchecklocal.JWKSPath
	// AppCheckTokenPath answers a fresh token: JSON {"token",
	// "expireTimeMillis"} (the JS SDK's CustomProvider's shape), or the
	// bare token with ?format=text, for curl.
	AppCheckTokenPath = "/token"
	// AppCheckTokenTTL, LocalProjectNumber and LocalAppID are the
	// stand-in's (package appchecklocal).
	AppCheckTokenTTL   = appchecklocal.TokenTTL
	LocalProjectNumber = appchecklocal.ProjectNumber
	LocalAppID         = appchecklocal.AppID
	// AppCheckTokenURLEnv names the run's token endpoint in the env file and
	// for a command the run starts.
	AppCheckTokenURLEnv = "FIRELOCK_APPCHECK_TOKEN_URL"
)

// appCheckMode is the run's App Check mode: the -appcheck flag, else
// FIRELOCK_APPCHECK from the environment (as a deployed function reads
// it), else off.
func appCheckMode(flagValue string) (string, error) {
	v, from := flagValue, "-appcheck"
	if v == "" {
		v, from = os.Getenv(functions.AppCheckEnv), functions.AppCheckEnv
	}
	mode, err := functions.ParseAppCheckMode(v)
	if err != nil {
		return "", fmt.Errorf("%s %w", from, err)
	}
	return mode, nil
}

// appCheckRun is the run's stand-in for App Check: nil with -appcheck off.
type appCheckRun struct {
	*appchecklocal.Issuer
	mode     string
	origins  []string // browser origins that may fetch tokens (CORS)
	srv      *appchecklocal.Server
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
	appID := LocalAppID
	for _, id := range strings.Split(os.Getenv(functions.AppCheckAppsEnv), ",") {
		if id = strings.TrimSpace(id); id != "" {
			appID = id
			break
		}
	}
	issuer, err := appchecklocal.New(project, appID)
	if err != nil {
		return nil, err
	}
	a := &appCheckRun{Issuer: issuer, mode: mode, origins: origins}
	mux := http.NewServeMux()
	mux.HandleFunc(AppCheckTokenPath, a.serveToken)
	if a.srv, err = issuer.Serve("firelock-local", mux); err != nil {
		return nil, err
	}
	a.JWKSURL, a.TokenURL = a.srv.JWKSURL, a.srv.URL+AppCheckTokenPath
	return a, nil
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
	token, exp, err := a.Sign(time.Now())
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
