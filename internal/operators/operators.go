// Package operators grants and revokes the custom claim that makes a
// Firebase Auth user an operator of sales (CONTRACT §8: operator: true):
// package claims for that one claim. The command line (firelock operators
// grant|revoke EMAIL) and the local run use it; the functions read the
// claim from the caller's ID token.
package operators

import (
	"context"
	"errors"
	"strings"

	"github.com/firelock/firelock/internal/claims"
)

// Claim is the custom claim of operators.
const Claim = claims.Operator

// Users is what granting needs of Firebase Auth; *auth.Client has it.
type Users = claims.Users

// Grant makes the user with email an operator, keeping their other custom
// claims, and returns their uid (claims.Grant).
func Grant(ctx context.Context, users Users, email string) (string, error) {
	uid, err := claims.Grant(ctx, users, email, Claim)
	return uid, named(err)
}

// Revoke clears the claim, other custom claims staying (claims.Revoke).
func Revoke(ctx context.Context, users Users, email string) (string, error) {
	uid, err := claims.Revoke(ctx, users, email, Claim)
	return uid, named(err)
}

// named says the errors as this package's (the command line trims the
// prefix "operators: ").
func named(err error) error {
	if err == nil {
		return nil
	}
	return errors.New("operators: " + strings.TrimPrefix(err.Error(), "claims: "))
}
