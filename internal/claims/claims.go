// Package claims grants and revokes the custom claims that give Firebase
// Auth users a role: operator: true runs sales (CONTRACT §8), scanner: true
// checks tickets in at the door (CONTRACT §13). The command line (firelock
// operators|scanners grant|revoke EMAIL) and the local run use it; the
// functions and firestore.rules read the claims from the caller's ID token.
package claims

import (
	"context"
	"fmt"
	"maps"

	"firebase.google.com/go/v4/auth"
)

// The roles' custom claims.
const (
	Operator = "operator"
	Scanner  = "scanner"
)

// Users is what granting needs of Firebase Auth; *auth.Client has it.
type Users interface {
	GetUserByEmail(ctx context.Context, email string) (*auth.UserRecord, error)
	SetCustomUserClaims(ctx context.Context, uid string, claims map[string]any) error
}

// Grant sets the custom claim name to true on the user with email, keeping
// their other claims, and returns their uid. The claim reaches the user's
// ID token when it is next refreshed (a new sign-in, or getIdToken(true)):
// until then the functions and the rules still see the old token.
func Grant(ctx context.Context, users Users, email, name string) (string, error) {
	return set(ctx, users, email, name, true)
}

// Revoke clears the claim name (other claims stay). As with Grant, a token
// issued before keeps it until it expires (an hour at most): revoke the
// user's refresh tokens too (auth.Client.RevokeRefreshTokens) to end that
// at once; the functions refuse revoked tokens.
func Revoke(ctx context.Context, users Users, email, name string) (string, error) {
	return set(ctx, users, email, name, false)
}

func set(ctx context.Context, users Users, email, name string, on bool) (string, error) {
	u, err := users.GetUserByEmail(ctx, email)
	if auth.IsUserNotFound(err) {
		return "", fmt.Errorf("claims: no Firebase Auth user has the email %q", email)
	}
	if err != nil {
		return "", fmt.Errorf("claims: look up %q: %w", email, err)
	}
	claims := maps.Clone(u.CustomClaims)
	if claims == nil {
		claims = map[string]any{}
	}
	if on {
		claims[name] = true
	} else {
		delete(claims, name)
	}
	if err := users.SetCustomUserClaims(ctx, u.UID, claims); err != nil {
		return "", fmt.Errorf("claims: set the claim %s of %q: %w", name, email, err)
	}
	return u.UID, nil
}
