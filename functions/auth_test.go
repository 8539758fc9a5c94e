package functions_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Users whose first calls come at once share their revocation lookups
// (issue #39). At a sale's opening a hundred people admitted together call
// HoldSeats within a second, and a crowd joins at thousands a second; one
// accounts:lookup each is as many Auth API calls. Here Auth answers its lookups
// 300 ms late, counted on the wire by a proxy, while 40 users' first calls
// come at once; one of them was deleted, and only that call is refused.
// Not parallel: it points the Auth emulator's variable at the proxy while
// it makes its functions.
func TestFirstCallsAtOnceShareTheirUserLookups(t *testing.T) {
	var lookups atomic.Int32
	e := newEnvBehindAuth(t, func(forward http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isLookup(r) {
				lookups.Add(1)
				time.Sleep(300 * time.Millisecond)
			}
			forward.ServeHTTP(w, r)
		})
	})

	const n = 40
	toks, uids := make([]string, n), make([]string, n)
	for i := range n {
		toks[i], uids[i] = freshUser(t)
	}
	if err := authAdmin(t).DeleteUser(context.Background(), uids[0]); err != nil {
		t.Fatal(err)
	}
	answers := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			answers[i] = e.call("CancelBooking", toks[i], map[string]any{"bookingId": fmt.Sprintf("none-%d", i)})
		})
	}
	wg.Wait()
	if r := answers[0]; r.Status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(r.Body), "no longer exists") {
		t.Errorf("the deleted user's call: %d %v, want 401: the account no longer exists", r.Status, r.Body)
	}
	for i, r := range answers[1:] {
		if r.Status == http.StatusUnauthorized || r.Status == http.StatusServiceUnavailable {
			t.Errorf("user %d's call: %d %v, want it past authentication", i+1, r.Status, r.Body)
		}
	}
	// One lookup each: 40. The first ones go out at once; the rest gather
	// while those are out.
	if got := lookups.Load(); got < 1 || got > 5 {
		t.Fatalf("%d accounts:lookup calls for %d users' first calls at once, want a few", got, n)
	}
	t.Logf("%d accounts:lookup calls for %d users' first calls at once", lookups.Load(), n)
}

// newEnvBehindAuth is newEnv whose functions reach the Auth emulator
// through proxy (given the handler that forwards to the emulator). Not for
// parallel tests: it points the emulator's variable at the proxy while it
// makes the functions, whose Admin SDK reads it then.
func newEnvBehindAuth(t *testing.T, proxy func(forward http.Handler) http.Handler) *env {
	t.Helper()
	host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
	srv := httptest.NewServer(proxy(httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})))
	t.Cleanup(srv.Close)
	os.Setenv("FIREBASE_AUTH_EMULATOR_HOST", strings.TrimPrefix(srv.URL, "http://"))
	defer os.Setenv("FIREBASE_AUTH_EMULATOR_HOST", host)
	return newEnv(t)
}

// isLookup: r is an accounts:lookup (the revocation check's call).
func isLookup(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "accounts:lookup") }
