package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"firebase.google.com/go/v4/auth"
)

// Users is what the functions need of Firebase Auth; *auth.Client has it.
type Users interface {
	VerifyIDToken(ctx context.Context, idToken string) (*auth.Token, error)
	GetUser(ctx context.Context, uid string) (*auth.UserRecord, error)
}

// DefaultUserCacheTTL is how long a user's revocation state is reused.
// VerifyIDToken checks a token's signature and expiry only (offline, with
// cached keys); whether the user was disabled or its tokens revoked takes
// one Auth API call (accounts:lookup, tens of milliseconds in production)
// per user per TTL instead of one per request. A revocation or a disabled
// account is therefore refused at most this long after it happened.
const DefaultUserCacheTTL = 30 * time.Second

// errAuthUnavailable: Firebase Auth could not be reached to check a token;
// the caller's token may be fine (503 with Retry-After).
var errAuthUnavailable = errors.New("functions: the token service cannot be reached")

// userStates caches, per uid, what the revocation check reads.
type userStates struct {
	mu sync.Mutex
	m  map[string]userState
}

type userState struct {
	disabled         bool
	validAfterMillis int64
	fetched          time.Time
}

func (c *userStates) get(ctx context.Context, users Users, uid string, ttl time.Duration) (userState, error) {
	c.mu.Lock()
	st, ok := c.m[uid]
	c.mu.Unlock()
	if ok && time.Since(st.fetched) < ttl {
		return st, nil
	}
	u, err := users.GetUser(ctx, uid)
	if err != nil {
		return userState{}, err
	}
	st = userState{disabled: u.Disabled, validAfterMillis: u.TokensValidAfterMillis, fetched: time.Now()}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]userState{}
	}
	if len(c.m) > 10000 { // bound the memory of a long-lived instance
		clear(c.m)
	}
	c.m[uid] = st
	c.mu.Unlock()
	return st, nil
}

// caller is who sent a request, as its verified ID token says.
type caller struct {
	UID   string
	Email string
	// Operator: the token carries the custom claim operator: true
	// (CONTRACT §8; `firelock operators grant EMAIL` sets it).
	Operator bool
	// EmailVerified: the token says email_verified (CONTRACT §12).
	EmailVerified bool
	// AppCheck is what App Check made of the call: valid, missing or
	// invalid ("" when it is off or the function is not guarded).
	AppCheck string
}

type callerKey struct{}

// callerOf is the caller that serve put in a request's context.
func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// authenticate returns the caller of the request's Firebase ID token
// ("Authorization: Bearer <token>", the scheme in any case). It refuses
// (401) a missing, malformed, expired or revoked token and the token of a
// disabled or deleted user; it answers 503 when Auth cannot be reached.
func (a *API) authenticate(r *http.Request) (caller, error) {
	t, err := a.verify(r)
	if err != nil {
		return caller{}, err
	}
	c := caller{UID: t.UID}
	c.Email, _ = t.Claims["email"].(string)
	c.Operator, _ = t.Claims["operator"].(bool)
	c.EmailVerified, _ = t.Claims["email_verified"].(bool)
	return c, nil
}

func (a *API) verify(r *http.Request) (*auth.Token, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "send Authorization: Bearer <Firebase ID token>")
	}
	t, err := a.Auth.VerifyIDToken(r.Context(), token)
	switch {
	case err == nil:
	case auth.IsIDTokenExpired(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token has expired; get a fresh one")
	case auth.IsIDTokenRevoked(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token was revoked; sign in again")
	case auth.IsUserDisabled(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account is disabled")
	case auth.IsUserNotFound(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account no longer exists")
	case auth.IsIDTokenInvalid(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token is not valid")
	default: // fetching the signing keys failed: not the caller's fault
		return nil, fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	ttl := a.UserCacheTTL
	if ttl == 0 {
		ttl = DefaultUserCacheTTL
	}
	st, err := a.users.get(r.Context(), a.Auth, t.UID, ttl)
	switch {
	case auth.IsUserNotFound(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account no longer exists")
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errAuthUnavailable, err)
	case st.disabled:
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account is disabled")
	case t.IssuedAt*1000 < st.validAfterMillis:
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token was revoked; sign in again")
	}
	return t, nil
}
