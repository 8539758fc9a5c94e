package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/firelock/firelock/internal/operators"
	"github.com/spf13/cobra"
)

func (a *app) operatorsCmd() *cobra.Command {
	c := group("operators", "Grants and revokes the operator claim", a.operatorCmd(true), a.operatorCmd(false))
	c.Long = "Sets or clears the custom claim operator: true of a Firebase Auth user, keeping their\n" +
		"other custom claims. It takes effect with the user's next ID token (a new sign-in; the\n" +
		"console asks for a fresh one when someone signs in). An unknown email exits 1."
	return c
}

func (a *app) operatorCmd(grant bool) *cobra.Command {
	name, what, short := "revoke", "revoked", "Takes the operator claim back from a user"
	long := "Takes the custom claim operator back from the Firebase Auth user with EMAIL (other custom\nclaims stay)."
	if grant {
		name, what, short = "grant", "granted", "Makes a user an operator of sales"
		long = "Makes the Firebase Auth user with EMAIL an operator of sales: the custom claim\noperator: true (other custom claims stay)."
	}
	cmd := &cobra.Command{
		Use:   name + " EMAIL",
		Short: short,
		Long:  long + " It takes effect with the user's next ID token (sign in again).\nAn unknown email exits 1.",
		Example: "$ firelock operators " + name + " olive@example.com --project my-project\n" +
			what + " the operator claim of olive@example.com (uid 5kq...); it takes effect with their next ID token",
		Args:        positional(1, 1),
		Annotations: map[string]string{annAuthOnly: "true"},
	}
	cmd.RunE = a.action(func(args []string) error {
		if !strings.Contains(args[0], "@") {
			return usagef("%q is not an email", args[0])
		}
		return nil
	}, func(ctx context.Context, args []string) error {
		ac, err := a.auth(ctx)
		if err != nil {
			return err
		}
		var uid string
		if grant {
			uid, err = operators.Grant(ctx, ac, args[0])
		} else {
			uid, err = operators.Revoke(ctx, ac, args[0])
		}
		if err != nil {
			return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "operators: "))
		}
		fmt.Fprintf(a.stdout, "%s the operator claim of %s (uid %s); it takes effect with their next ID token\n", what, args[0], uid)
		return nil
	})
	return cmd
}
