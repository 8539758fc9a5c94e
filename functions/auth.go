package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"firebase.google.com/go/v4/auth"
)

// Users is what the functions need of Firebase Auth; *auth.Client has it.
type Users interface {
	VerifyIDToken(ctx context.Context, idToken string) (*auth.Token, error)
	GetUsers(ctx context.Context, identifiers []auth.UserIdentifier) (*auth.GetUsersResult, error)
}

// DefaultUserCacheTTL is how long a user's revocation state is reused.
// VerifyIDToken checks a token's signature and expiry only (offline, with
// cached keys); whether the user was disabled or its tokens revoked takes
// an Auth API call (accounts:lookup, tens of milliseconds in production)
// per user per TTL instead of one per request. A revocation or a disabled
// account is therefore refused at most this long after it happened.
const DefaultUserCacheTTL = 30 * time.Second

// errAuthUnavailable: Firebase Auth could not be reached to check a token;
// the caller's token may be fine (503 with Retry-After).
var errAuthUnavailable = errors.New("functions: the token service cannot be reached")

const (
	// maxLookup is the most users one accounts:lookup asks for (the
	// Admin SDK's GetUsers takes up to 100).
	maxLookup = 100
	// lookupsInFlight: while this many lookups are in flight, the users
	// that miss the cache gather into the next one.
	lookupsInFlight = 2
	// lookupTimeout bounds one lookup, which serves every request waiting
	// on it, whatever happens to the request that started it.
	lookupTimeout = 10 * time.Second
)

// userStates caches, per uid, what the revocation check reads. The users
// that miss it look up together, up to 100 in one accounts:lookup. A
// sale's crowd calls for the first time within seconds: 150,000 early
// joiners in a 30-s span are 5,000 first calls a second, and a hundred
// people admitted at once call HoldSeats within the same second; one
// lookup each would be as many Auth API calls, against Auth's quota.
type userStates struct {
	mu    sync.Mutex
	m     map[string]userState
	next  *lookup       // the lookup gathering users, not yet sent
	slots chan struct{} // one per lookup in flight
}

type userState struct {
	disabled         bool
	validAfterMillis int64
	// missing: the lookup did not find the user. It is kept only so that
	// an older lookup answering later cannot bring the user back; it is
	// never served from the cache.
	missing bool
	// fetched is when the lookup that read this state was sent: the state
	// is at least that old.
	fetched time.Time
}

// lookup is one accounts:lookup for up to maxLookup users.
type lookup struct {
	uids []string
	// waiters: the requests waiting on it (under userStates.mu). One that
	// no one waits for any more by the time a slot is free is not sent: in
	// an outage, the lookups of the callers that gave up would otherwise
	// queue behind the two in flight, and hold every caller after it up.
	waiters int
	done    chan struct{}
	found   map[string]userState // set when done; a uid not in it does not exist
	err     error
}

// errNoWaiters: a lookup was dropped, no one waiting for it any more.
var errNoWaiters = errors.New("functions: no one waits for the lookup")

// errNoSuchUser: the lookup did not find the token's user.
var errNoSuchUser = errors.New("functions: no such user")

func (c *userStates) get(ctx context.Context, users Users, uid string, ttl time.Duration) (userState, error) {
	c.mu.Lock()
	if st, ok := c.m[uid]; ok && !st.missing && time.Since(st.fetched) < ttl {
		c.mu.Unlock()
		return st, nil
	}
	l := c.next
	if l == nil || len(l.uids) == maxLookup {
		l = &lookup{done: make(chan struct{})}
		c.next = l
		if c.slots == nil {
			c.slots = make(chan struct{}, lookupsInFlight)
		}
		go c.send(users, l)
	}
	if !slices.Contains(l.uids, uid) {
		l.uids = append(l.uids, uid)
	}
	l.waiters++
	c.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		c.mu.Lock()
		l.waiters--
		c.mu.Unlock()
		return userState{}, ctx.Err()
	}
	if l.err != nil {
		return userState{}, l.err
	}
	st, ok := l.found[uid]
	if !ok {
		return userState{}, errNoSuchUser
	}
	return st, nil
}

// send sends l once a slot is free, with the users gathered by then, and
// keeps what it found.
func (c *userStates) send(users Users, l *lookup) {
	c.slots <- struct{}{}
	defer func() { <-c.slots }()
	c.mu.Lock()
	if c.next == l {
		c.next = nil
	}
	if l.waiters == 0 {
		c.mu.Unlock()
		l.err = errNoWaiters
		close(l.done)
		return
	}
	ids := make([]auth.UserIdentifier, len(l.uids))
	for i, uid := range l.uids {
		ids[i] = auth.UIDIdentifier{UID: uid}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	sent := time.Now()
	res, err := users.GetUsers(ctx, ids)
	found := map[string]userState{}
	if err == nil {
		for _, u := range res.Users {
			found[u.UID] = userState{disabled: u.Disabled, validAfterMillis: u.TokensValidAfterMillis, fetched: sent}
		}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]userState{}
	}
	if len(c.m)+len(l.uids) > 10000 { // bound the memory of a long-lived instance
		clear(c.m)
	}
	if err == nil {
		// Two lookups in flight may answer out of order. One sent before
		// a user was revoked, disabled or deleted must not replace what
		// one sent after found (the user would be let in again for a TTL
		// after having been refused).
		for _, uid := range l.uids {
			st, ok := found[uid]
			if !ok {
				st = userState{missing: true, fetched: sent}
			}
			if old, ok := c.m[uid]; !ok || !old.fetched.After(sent) {
				c.m[uid] = st
			}
		}
	}
	c.mu.Unlock()
	l.found, l.err = found, err
	close(l.done)
}

// caller is who sent a request, as its verified ID token says.
type caller struct {
	UID   string
	Email string
	// Operator: the token carries the custom claim operator: true
	// (CONTRACT §8; `firelock operators grant EMAIL` sets it).
	Operator bool
	// Scanner: the token carries the custom claim scanner: true (CONTRACT
	// §13): the caller checks tickets in at the door.
	Scanner bool
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
	c.Scanner, _ = t.Claims["scanner"].(bool)
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
	case auth.IsIDTokenExpired(err) || errors.Is(err, errTokenExpired):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token has expired; get a fresh one")
	case auth.IsIDTokenRevoked(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the ID token was revoked; sign in again")
	case auth.IsUserDisabled(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account is disabled")
	case auth.IsUserNotFound(err):
		return nil, errorf(http.StatusUnauthorized, "unauthenticated", "the account no longer exists")
	case auth.IsIDTokenInvalid(err) || errors.Is(err, errTokenInvalid):
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
	case errors.Is(err, errNoSuchUser):
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
