package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A lookup that read a user's state before the user was revoked or deleted
// and answers late must not undo what a later lookup found: once a call by
// a revoked or deleted user has been refused, the next one is too. Here
// Auth answers the first lookup of each user late (having read the user's
// state on time), and a second lookup, made after the revocation or the
// deletion while the first is out, answers at once.
// Not parallel: it points the Auth emulator's variable at the proxy while
// it makes its functions.
func TestALateLookupDoesNotUndoALaterOne(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	arrived, release := make(chan string, 4), make(chan struct{})
	e := newEnvBehindAuth(t, func(forward http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isLookup(r) {
				forward.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			var req struct{ LocalID []string }
			json.Unmarshal(body, &req)
			mu.Lock()
			first := len(req.LocalID) == 1 && !seen[req.LocalID[0]]
			for _, id := range req.LocalID {
				seen[id] = true
			}
			mu.Unlock()
			if !first {
				forward.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			forward.ServeHTTP(rec, r) // the user's state now
			arrived <- req.LocalID[0]
			<-release // answered late
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	})
	admin := authAdmin(t)
	ctx := context.Background()
	call := func(tok string) response {
		return e.call("CancelBooking", tok, map[string]any{"bookingId": "none"})
	}

	revokedTok, revoked := freshUser(t)
	deletedTok, deleted := freshUser(t)
	time.Sleep(1100 * time.Millisecond) // revocation counts whole seconds after the token's issue time
	for _, c := range []struct {
		name, tok, uid, want string
		change               func() error
	}{
		{"revoked", revokedTok, revoked, "revoked", func() error { return admin.RevokeRefreshTokens(ctx, revoked) }},
		{"deleted", deletedTok, deleted, "no longer exists", func() error { return admin.DeleteUser(ctx, deleted) }},
	} {
		release = make(chan struct{})
		early := make(chan response, 1)
		go func() { early <- call(c.tok) }()
		if got := <-arrived; got != c.uid {
			t.Fatalf("held the lookup of %s, want %s", got, c.uid)
		}
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		if r := call(c.tok); r.Status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(r.Body), c.want) {
			t.Fatalf("%s user's call after the change: %d %v, want 401 (%s)", c.name, r.Status, r.Body, c.want)
		}
		close(release)
		<-early // it came before the change: whatever it got
		if r := call(c.tok); r.Status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(r.Body), c.want) {
			t.Errorf("%s user's call once the late lookup answered: %d %v, want 401 (%s)", c.name, r.Status, r.Body, c.want)
		}
	}
}
