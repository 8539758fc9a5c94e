package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"firebase.google.com/go/v4/auth"
)

// emulatorUsers is Users on the Auth emulator: it verifies ID tokens
// offline, as VerifyIDToken verifies production tokens. On the emulator
// the Admin SDK's VerifyIDToken also looks the user up on every call (the
// revocation check that production makes only in
// VerifyIDTokenAndCheckRevoked), so every request cost an accounts:lookup
// from the one Node.js process, which production does not pay. The
// functions make that check themselves, cached and shared per user
// (userStates), on the emulator as in production. The emulator's tokens carry no signature, so
// this checks what the SDK checks of them there: the audience, the issuer,
// the subject and the times.
type emulatorUsers struct {
	*auth.Client
	projectID string
}

// tokenClockSkew is the Admin SDK's allowance for clocks apart.
const tokenClockSkew = 300 * time.Second

var (
	errTokenExpired = errors.New("functions: the ID token has expired")
	errTokenInvalid = errors.New("functions: the ID token is not valid")
)

func (u emulatorUsers) VerifyIDToken(_ context.Context, idToken string) (*auth.Token, error) {
	return verifyEmulatorToken(idToken, u.projectID, time.Now())
}

// verifyEmulatorToken decodes an Auth emulator ID token and checks it as
// the Admin SDK checks one in emulator mode, without the lookup.
func verifyEmulatorToken(idToken, projectID string, now time.Time) (*auth.Token, error) {
	parts := strings.Split(idToken, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: %d segments, want 3", errTokenInvalid, len(parts))
	}
	body, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenInvalid, err)
	}
	var t auth.Token
	var claims map[string]any
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenInvalid, err)
	}
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenInvalid, err)
	}
	switch {
	case t.Audience != projectID:
		return nil, fmt.Errorf("%w: audience %q, want %q", errTokenInvalid, t.Audience, projectID)
	case t.Issuer != "https://securetoken.google.com/"+projectID:
		return nil, fmt.Errorf("%w: issuer %q", errTokenInvalid, t.Issuer)
	case t.Subject == "" || len(t.Subject) > 128:
		return nil, fmt.Errorf("%w: subject of %d characters", errTokenInvalid, len(t.Subject))
	case time.Unix(t.IssuedAt, 0).Add(-tokenClockSkew).After(now):
		return nil, fmt.Errorf("%w: issued in the future", errTokenInvalid)
	case time.Unix(t.Expires, 0).Add(tokenClockSkew).Before(now):
		return nil, errTokenExpired
	}
	t.UID = t.Subject
	for _, std := range []string{"iss", "aud", "exp", "iat", "sub", "uid"} {
		delete(claims, std)
	}
	t.Claims = claims
	return &t, nil
}
