package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/firelock/firelock/internal/claims"
	"github.com/spf13/cobra"
	"google.golang.org/api/iterator"
)

// role is a custom claim that the command line grants and revokes:
// operator (CONTRACT §8) and scanner (§13).
type role struct {
	group   string // the command: operators, scanners
	claim   string // the custom claim set to true
	does    string // what the claim lets a user do, after "Makes a user "
	example string // an email for the examples
}

var (
	operatorRole = role{"operators", claims.Operator, "an operator of sales", "olive@example.com"}
	scannerRole  = role{"scanners", claims.Scanner, "a scanner at the door (CheckIn and the scanner app's own writes, CONTRACT §13)", "sam@example.com"}
)

func (a *app) operatorsCmd() *cobra.Command { return a.roleCmd(operatorRole) }

func (a *app) scannersCmd() *cobra.Command { return a.roleCmd(scannerRole) }

func (a *app) roleCmd(r role) *cobra.Command {
	c := group(r.group, "Grants, revokes and lists the "+r.claim+" claim", a.roleChangeCmd(r, true), a.roleChangeCmd(r, false), a.roleListCmd(r))
	c.Long = "Sets or clears the custom claim " + r.claim + ": true of a Firebase Auth user, keeping their\n" +
		"other custom claims. It takes effect with the user's next ID token (a new sign-in; the\n" +
		"console and the scanner app ask for a fresh one when someone signs in). An unknown email exits 1."
	return c
}

func (a *app) roleChangeCmd(r role, grant bool) *cobra.Command {
	name, what, short := "revoke", "revoked", "Takes the "+r.claim+" claim back from a user"
	long := "Takes the custom claim " + r.claim + " back from the Firebase Auth user with EMAIL (other custom\nclaims stay)."
	if grant {
		name, what, short = "grant", "granted", "Makes a user "+strings.SplitN(r.does, " (", 2)[0]
		long = "Makes the Firebase Auth user with EMAIL " + r.does + ": the custom claim\n" + r.claim + ": true (other custom claims stay)."
	}
	cmd := &cobra.Command{
		Use:   name + " EMAIL",
		Short: short,
		Long:  long + " It takes effect with the user's next ID token (sign in again).\nAn unknown email exits 1.",
		Example: "$ firelock " + r.group + " " + name + " " + r.example + " --project my-project\n" +
			what + " the " + r.claim + " claim of " + r.example + " (uid 5kq...); it takes effect with their next ID token",
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
			uid, err = claims.Grant(ctx, ac, args[0], r.claim)
		} else {
			uid, err = claims.Revoke(ctx, ac, args[0], r.claim)
		}
		if err != nil {
			return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "claims: "))
		}
		fmt.Fprintf(a.stdout, "%s the %s claim of %s (uid %s); it takes effect with their next ID token\n", what, r.claim, args[0], uid)
		return nil
	})
	return cmd
}

// roleHolder is a user with a role's claim, as `list` shows them.
type roleHolder struct {
	Email string `json:"email"`
	UID   string `json:"uid"`
}

func (a *app) roleListCmd(r role) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Lists the users with the " + r.claim + " claim",
		Long: "Lists the Firebase Auth users whose custom claim " + r.claim + " is true, by email. It reads\n" +
			"every user of the project (Firebase Auth cannot query by claim): a project of a million\n" +
			"users takes a while.",
		Example: "$ firelock " + r.group + " list --project my-project\nEMAIL" + strings.Repeat(" ", max(2, len(r.example)+2-5)) + "UID\n" +
			r.example + "  5kq...",
		Args:        positional(0, 0),
		Annotations: map[string]string{annAuthOnly: "true"},
	}
	cmd.RunE = a.action(func([]string) error { return nil }, func(ctx context.Context, _ []string) error {
		ac, err := a.auth(ctx)
		if err != nil {
			return err
		}
		holders := []roleHolder{}
		it := ac.Users(ctx, "")
		for {
			u, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				return fmt.Errorf("list the users: %w", err)
			}
			if u.CustomClaims[r.claim] == true {
				holders = append(holders, roleHolder{Email: u.Email, UID: u.UID})
			}
		}
		slices.SortFunc(holders, func(x, y roleHolder) int { return strings.Compare(x.Email, y.Email) })
		if output == "json" {
			return printJSON(a.stdout, holders)
		}
		if len(holders) == 0 {
			fmt.Fprintf(a.stdout, "no %s\n", r.group)
			return nil
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "EMAIL\tUID")
		for _, h := range holders {
			fmt.Fprintf(w, "%s\t%s\n", h.Email, h.UID)
		}
		return w.Flush()
	})
	outputFlag(cmd, &output)
	return cmd
}
