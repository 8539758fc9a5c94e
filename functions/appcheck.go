package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// App Check on the sale's functions (CONTRACT §12): JoinQueue, HoldSeats,
// BookSeats and CheckoutHold read the token the app sends in
// AppCheckHeader and verify it with the Admin SDK.
const (
	// AppCheckEnv decides what a missing or invalid token does:
	// AppCheckEnforce, AppCheckMonitor or AppCheckOff (the default).
	AppCheckEnv = "FIRELOCK_APPCHECK"
	// AppCheckAppsEnv optionally lists the app IDs whose tokens count
	// (comma-separated, e.g. 1:123:web:abc): a valid token of another app
	// of the project is refused. Empty: any app of the project.
	AppCheckAppsEnv = "FIRELOCK_APPCHECK_APPS"
	// AppCheckJWKSEnv points the Admin SDK at another key set than App
	// Check's (appcheck.JWKSUrl): the local run's, when it signs tokens
	// itself. Refused without the emulators: never in production.
	AppCheckJWKSEnv = "FIRELOCK_APPCHECK_JWKS_URL"
	AppCheckHeader  = "X-Firebase-AppCheck"

	AppCheckEnforce = "enforce" // 401 app_check_failed, nothing written
	AppCheckMonitor = "monitor" // the call goes on; the result is logged and counted
	AppCheckOff     = "off"     // the header is not read
)

// AppCheck verifies App Check tokens for the API. The zero value, and nil,
// are off.
type AppCheck struct {
	// Mode is AppCheckEnforce, AppCheckMonitor or AppCheckOff.
	Mode string
	// Apps, when set, are the only app IDs whose tokens count.
	Apps []string
	// Verify checks a token; nil: the Admin SDK's appcheck client of the
	// API's project, made on first use (it fetches App Check's keys).
	Verify func(token string) (*appcheck.DecodedAppCheckToken, error)
	// FetchTimeout bounds the fetch of App Check's keys; 0: 10 s.
	FetchTimeout time.Duration

	newClient func(ctx context.Context) (*appcheck.Client, error)
	once      sync.Once
	mu        sync.Mutex
	client    *appcheck.Client
	fetching  chan struct{} // closed when the key fetch in flight ends; nil: none
	fetchErr  error         // the last fetch's error
	counter   metric.Int64Counter
	log       *slog.Logger
}

// errAppCheckUnavailable: App Check's keys could not be fetched, so no
// token can be judged (enforce answers 503, not 401).
var errAppCheckUnavailable = errors.New("functions: App Check's public keys cannot be fetched")

// AppCheckFromEnv reads FIRELOCK_APPCHECK (off when unset) and
// FIRELOCK_APPCHECK_APPS; the verifier is the Admin SDK's App Check client
// of app. An unknown mode is an error: a typo must not switch checks off.
func AppCheckFromEnv(app *firebase.App, mp metric.MeterProvider, log *slog.Logger) (*AppCheck, error) {
	mode, err := ParseAppCheckMode(os.Getenv(AppCheckEnv))
	if err != nil {
		return nil, fmt.Errorf("functions: %s=%w", AppCheckEnv, err)
	}
	var apps []string
	for _, id := range strings.Split(os.Getenv(AppCheckAppsEnv), ",") {
		if id = strings.TrimSpace(id); id != "" {
			apps = append(apps, id)
		}
	}
	if u := os.Getenv(AppCheckJWKSEnv); u != "" {
		// Another key set replaces App Check's own: whoever holds its key
		// would mint tokens. Only a local run (its emulators) may.
		if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" && os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") == "" {
			return nil, fmt.Errorf("functions: %s is set without the emulators (FIRESTORE_EMULATOR_HOST, FIREBASE_AUTH_EMULATOR_HOST): it replaces App Check's own keys, and is for local runs only", AppCheckJWKSEnv)
		}
		appcheck.JWKSUrl = u
	}
	return NewAppCheck(app, mode, apps, mp, log), nil
}

// ParseAppCheckMode reads a mode as FIRELOCK_APPCHECK and the commands'
// -appcheck flags take it: enforce, monitor or off, in any case, with
// spaces around; empty is off.
func ParseAppCheckMode(v string) (string, error) {
	mode := strings.ToLower(strings.TrimSpace(v))
	if mode == "" {
		return AppCheckOff, nil
	}
	if !slices.Contains([]string{AppCheckEnforce, AppCheckMonitor, AppCheckOff}, mode) {
		return "", fmt.Errorf("%q: want enforce, monitor or off", v)
	}
	return mode, nil
}

// NewAppCheck verifies tokens with app's App Check client (the Admin SDK;
// made on first use, as it fetches App Check's keys from
// appcheck.JWKSUrl), in mode, for apps (empty: any app of the project);
// it counts firelock.appcheck.verifications on mp (nil: the global
// provider) and logs refusals to log (nil: the API's logger).
func NewAppCheck(app *firebase.App, mode string, apps []string, mp metric.MeterProvider, log *slog.Logger) *AppCheck {
	c := &AppCheck{Mode: mode, Apps: apps, log: log}
	c.newClient = func(ctx context.Context) (*appcheck.Client, error) { return app.AppCheck(ctx) }
	c.instrument(mp)
	return c
}

func (c *AppCheck) instrument(mp metric.MeterProvider) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	c.counter = telemetry.Counter(telemetry.Meter(mp, "functions"), telemetry.AppCheckVerifications, "{request}",
		"App Check tokens of the sale's functions, by result: valid, missing, invalid (CONTRACT §12).")
}

// verify judges one token: nil (valid), or why not.
func (c *AppCheck) verify(ctx context.Context, token string) (err error) {
	verify := c.Verify
	if verify == nil {
		cl, err := c.appCheckClient(ctx)
		if cl == nil {
			return fmt.Errorf("%w: %v", errAppCheckUnavailable, err)
		}
		verify = cl.VerifyToken
	}
	defer func() {
		// The SDK asserts the claims' types after the signature holds: a
		// token App Check signed never trips it, but nothing here may
		// bring the function down.
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed claims: %v", p)
		}
	}()
	t, err := verify(token)
	if err != nil {
		return err
	}
	if len(c.Apps) > 0 && !slices.Contains(c.Apps, t.AppID) {
		return fmt.Errorf("a token of app %q, not one of %s", t.AppID, AppCheckAppsEnv)
	}
	return nil
}

// appCheckClient is the Admin SDK's client, made on first use. Calls that
// come while App Check's keys are being fetched share that one fetch (at
// most FetchTimeout, 10 s), each waiting no longer than its own request: with the key
// set hanging, concurrent calls must not queue up behind one another's
// fetch (N calls at once would take N times 10 s).
func (c *AppCheck) appCheckClient(ctx context.Context) (*appcheck.Client, error) {
	c.mu.Lock()
	if c.client != nil || c.newClient == nil {
		defer c.mu.Unlock()
		return c.client, nil
	}
	done := c.fetching
	if done == nil {
		done = make(chan struct{})
		c.fetching = done
		timeout := c.FetchTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), timeout)
			cl, err := c.newClient(cctx)
			cancel()
			c.mu.Lock()
			c.client, c.fetchErr, c.fetching = cl, err, nil
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client, c.fetchErr
}

// check runs App Check on a request of a guarded function: nil lets it go
// on. In enforce a missing or invalid token is 401 app_check_failed (503
// when App Check's keys cannot be fetched); in monitor it is logged and
// counted, and the call goes on.
func (c *AppCheck) check(r *http.Request, log *slog.Logger) (result string, _ error) {
	if c == nil || c.Mode == AppCheckOff || c.Mode == "" {
		return "", nil
	}
	c.once.Do(func() {
		if c.counter == nil { // a literal AppCheck: the global provider
			c.instrument(nil)
		}
	})
	token := r.Header.Get(AppCheckHeader)
	result, why := telemetry.Valid, error(nil)
	if token == "" {
		result, why = telemetry.Missing, errors.New("no "+AppCheckHeader+" header")
	} else if err := c.verify(r.Context(), token); err != nil {
		result, why = telemetry.Invalid, err
	}
	c.counter.Add(r.Context(), 1, metric.WithAttributes(telemetry.Result.String(result)))
	if why == nil {
		return result, nil
	}
	if c.log != nil {
		log = c.log
	}
	log.WarnContext(r.Context(), "app check", "mode", c.Mode, "result", result, "path", r.URL.Path, "error", why.Error())
	if c.Mode != AppCheckEnforce {
		return result, nil
	}
	if errors.Is(why, errAppCheckUnavailable) {
		return result, &apiError{status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "App Check cannot verify tokens right now; try again"}
	}
	return result, errorf(http.StatusUnauthorized, "app_check_failed", "this call needs a valid App Check token in %s (%s): the app proves it is the real app", AppCheckHeader, result)
}
