package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/firelock/firelock/internal/operators"
)

var operatorVerbs = map[string]verb{
	"grant":  operatorVerb(true),
	"revoke": operatorVerb(false),
}

func operatorVerb(grant bool) verb {
	name, what, help := "revoke", "revoked", "Takes the custom claim operator back from the Firebase Auth user with EMAIL."
	if grant {
		name, what, help = "grant", "granted", "Makes the Firebase Auth user with EMAIL an operator of sales: the custom claim operator: true\n"+
			"(other custom claims stay). It takes effect with the user's next ID token (sign in again)."
	}
	return verb{
		args: "EMAIL",
		help: help + "\n\nexample: firelock operators " + name + " olive@example.com",
		min:  1, max: 1,
		flags: func(c *cmd) func([]string) error {
			return func(pos []string) error {
				if !strings.Contains(pos[0], "@") {
					return usagef("%q is not an email", pos[0])
				}
				return nil
			}
		},
		run: func(ctx context.Context, c *cmd, pos []string) error {
			var uid string
			var err error
			if grant {
				uid, err = operators.Grant(ctx, c.auth, pos[0])
			} else {
				uid, err = operators.Revoke(ctx, c.auth, pos[0])
			}
			if err != nil {
				return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "operators: "))
			}
			fmt.Fprintf(c.stdout, "%s the operator claim of %s (uid %s); it takes effect with their next ID token\n", what, pos[0], uid)
			return nil
		},
	}
}
