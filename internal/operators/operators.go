// Package operators grants and revokes the custom claim that makes a
// Firebase Auth user an operator of sales (CONTRACT §8: operator: true).
// The command line (firelock operators grant|revoke EMAIL) and the local
// run use it; the functions read the claim from the caller's ID token.
package operators

import (
	"context"
	"fmt"
	"maps"

	"firebase.google.com/go/v4/auth"
)

// Claim is the custom claim of operators.
const Claim = "operator"

// Users is what granting needs of Firebase Auth; *auth.Client has it.
type Users interface {
	GetUserByEmail(ctx context.Context, email string) (*auth.UserRecord, error)
	SetCustomUserClaims(ctx context.Context, uid string, claims map[string]any) error
}

// Grant makes the user with email an operator, keeping their other custom
// claims, and returns their uid. The claim reaches the user's ID token when
// it is next refreshed (a new sign-in, or getIdToken(true)): until then the
// functions still see the old token.
func Grant(ctx context.Context, users Users, email string) (string, error) {
	return set(ctx, users, email, true)
}

// Revoke clears the claim (other custom claims stay). As with Grant, a
// token issued before keeps it until it expires (an hour at most): revoke
// the user's refresh tokens too (auth.Client.RevokeRefreshTokens) to end
// that at once; the functions refuse revoked tokens.
func Revoke(ctx context.Context, users Users, email string) (string, error) {
	return set(ctx, users, email, false)
}

func set(ctx context.Context, users Users, email string, on bool) (string, error) {
	u, err := users.GetUserByEmail(ctx, email)
	if auth.IsUserNotFound(err) {
		return "", fmt.Errorf("operators: no Firebase Auth user has the email %q", email)
	}
	if err != nil {
		return "", fmt.Errorf("operators: look up %q: %w", email, err)
	}
	claims := maps.Clone(u.CustomClaims)
	if claims == nil {
		claims = map[string]any{}
	}
	if on {
		claims[Claim] = true
	} else {
		delete(claims, Claim)
	}
	if err := users.SetCustomUserClaims(ctx, u.UID, claims); err != nil {
		return "", fmt.Errorf("operators: set the claim of %q: %w", email, err)
	}
	return u.UID, nil
}
