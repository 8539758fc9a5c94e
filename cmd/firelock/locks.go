package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/firelock/firelock/lock"
	"github.com/spf13/cobra"
)

// lockCollections are the collections whose documents are leases
// (CONTRACT §1): the library's locks, the seats' leases, the job runs, the
// clients' mutexes.
var lockCollections = []string{"locks", "seatLocks", "jobRuns", "mutex_critical_data"}

func (a *app) locksCmd() *cobra.Command {
	c := group("locks", "Lists, shows and ends leases", a.locksListCmd(), a.locksShowCmd(), a.locksReleaseCmd())
	c.Long = "Finds, inspects and ends stuck leases (CONTRACT §1), as etcdctl lease\n" +
		"list|timetolive|revoke does for etcd. A forced release is logged in lockLog."
	return c
}

func (a *app) locksListCmd() *cobra.Command {
	var coll, prefix, output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Lists leases",
		Long: `Lists leases: of ` + strings.Join(lockCollections, ", ") + `, or of --collection only,
whose keys start with --prefix, in key order (at most 1,000 a collection). LIVE is
judged by Firestore's read time; TOKEN is – for a lease without a fence (a client's
mutex).`,
		Example: `$ firelock locks list --prefix admit-
PATH                OWNER                  LIVE  ENDS                  TOKEN
locks/admit-onsale  SEFlsB_q0qwGsaWSD8hDx  true  2026-11-24T19:05:57Z  1795547100516951
$ firelock locks list --collection mutex_critical_data
no leases`,
		Args: positional(0, 0),
	}
	cmd.RunE = a.action(func([]string) error {
		if strings.Contains(coll, "/") && strings.Count(coll, "/")%2 == 1 {
			return usagef("--collection %q names a document, not a collection", coll)
		}
		return nil
	}, func(ctx context.Context, _ []string) error {
		colls := lockCollections
		if coll != "" {
			colls = []string{coll}
		}
		all := []lock.Info{}
		for _, coll := range colls {
			ls, err := lock.List(ctx, a.db, coll, prefix, 0)
			if err != nil {
				return err
			}
			all = append(all, ls...)
		}
		if output == "json" {
			return printJSON(a.stdout, all)
		}
		if len(all) == 0 {
			fmt.Fprintln(a.stdout, "no leases")
			return nil
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "PATH\tOWNER\tLIVE\tENDS\tTOKEN")
		for _, in := range all {
			fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", in.Path, in.Owner, in.Live, in.Ends.UTC().Format(time.RFC3339), tokenText(in.Token))
		}
		return w.Flush()
	})
	cmd.Flags().StringVar(&coll, "collection", "", "the collection to list (default: every lease collection)")
	cmd.Flags().StringVar(&prefix, "prefix", "", "keys that start with this")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) locksShowCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show PATH",
		Short: "Shows one lease and the command that ends it",
		Long: `Shows one lease (PATH is COLLECTION/KEY, e.g. locks/admit-onsale): owner, live or not,
acquired, renewed, its end, its length and its fencing token, and the command that ends
this grant. No lease at PATH exits 1. -o json adds the holds (the library's
acquisitions sharing a reentrant lease), the document's updateTime and the readTime.`,
		Example: `$ firelock locks show locks/admit-onsale
path      locks/admit-onsale
owner     SEFlsB_q0qwGsaWSD8hDx
live      true (read 2026-11-24T19:05:27.794047Z)
acquired  2026-11-24T19:05:00.511Z
renewed   2026-11-24T19:05:27.182Z
ends      2026-11-24T19:05:57.182Z
lease     30 s
token     1795547100516951

to end it: firelock locks release locks/admit-onsale --force --reason "..." --token 1795547100516951`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(checkPath, func(ctx context.Context, args []string) error {
		in, err := lock.Inspect(ctx, a.db, args[0])
		if err != nil {
			return err
		}
		if output == "json" {
			return printJSON(a.stdout, in)
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "path\t%s\nowner\t%s\nlive\t%v (read %s)\nacquired\t%s\nrenewed\t%s\nends\t%s\nlease\t%d s\ntoken\t%s\n",
			in.Path, in.Owner, in.Live, in.ReadTime.UTC().Format(time.RFC3339Nano), in.AcquiredAt.UTC().Format(time.RFC3339Nano),
			in.RenewedAt.UTC().Format(time.RFC3339Nano), in.Ends.UTC().Format(time.RFC3339Nano), in.LeaseSeconds, tokenText(in.Token))
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "\nto end it: firelock locks release %s --force --reason \"...\" %s\n", in.Path, grantFlags(in))
		return nil
	})
	outputFlag(cmd, &output)
	return cmd
}

// grantFlags name one grant of a lease: its fencing token, or, for a lease
// without one, its owner and when they acquired it (an owner may hold the
// lease again later: another grant).
func grantFlags(in lock.Info) string {
	if in.Token != 0 {
		return "--token " + strconv.FormatInt(in.Token, 10)
	}
	return "--owner " + in.Owner + " --acquired-at " + in.AcquiredAt.UTC().Format(time.RFC3339Nano)
}

func (a *app) locksReleaseCmd() *cobra.Command {
	var (
		force             bool
		reason, owner, at string
		token             int64
		acquiredAt        time.Time
	)
	cmd := &cobra.Command{
		Use:   "release PATH --force --reason R (--token T | --owner O --acquired-at T)",
		Short: "Ends a lease now, whoever holds it, and logs it",
		Long: `Ends the lease at PATH, whoever holds it, in one commit that also writes its lockLog
entry {path, owner, acquiredAt, by, at, reason}. The former holder's guarded writes
fail from then on, and the next grant has a higher token.

The grant to end is the one locks show displayed: its --token, or, for a lease without
a token (a client's mutex), its --owner and --acquired-at together (the same owner may
hold the lease again: another grant). If the lease is another grant now, nothing is done
and it exits 1; so is a lease written between the command's own read and its commit.`,
		Example: `$ firelock locks release locks/admit-onsale --force --reason "the admitter hangs" --token 1795547100516951 --as olive@example.com
released locks/admit-onsale (held by SEFlsB_q0qwGsaWSD8hDx since 2026-11-24T19:05:00Z); logged in lockLog
$ firelock locks release locks/admit-onsale --force --reason "again" --token 1795547100516951
firelock locks release: locks/admit-onsale changed hands: it is held by SEFlsB_q0qwGsaWSD8hDx (--token 1795547157955840) now, not the grant you named; show it again`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(func(args []string) error {
		switch {
		case !force:
			return usagef("a release ends somebody else's lease: say --force")
		case strings.TrimSpace(reason) == "":
			return usagef("say why with --reason: the lock log keeps it")
		case token == 0 && owner == "":
			return usagef("say which grant to end with --token (or --owner and --acquired-at), as `firelock locks show %s` displays it", args[0])
		case token < 0:
			return usagef("--token %d: want the positive token `locks show` displays", token)
		case owner != "" && at == "":
			return usagef("--owner needs --acquired-at, as `firelock locks show %s` displays it: the same owner may hold a newer grant", args[0])
		case at != "" && owner == "":
			return usagef("--acquired-at goes with --owner")
		}
		if at != "" {
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return usagef("--acquired-at %q: want RFC 3339, as `locks show` displays it", at)
			}
			acquiredAt = t
		}
		return checkPath(args)
	}, func(ctx context.Context, args []string) error {
		in, err := lock.Inspect(ctx, a.db, args[0])
		if err != nil {
			return err
		}
		if (token != 0 && in.Token != token) || (owner != "" && (in.Owner != owner || !in.AcquiredAt.Equal(acquiredAt))) {
			return fmt.Errorf("%s changed hands: it is held by %s (%s) now, not the grant you named; show it again", in.Path, in.Owner, grantFlags(in))
		}
		uid, email := a.operator()
		by := uid
		if email != "" {
			by = email + " (" + uid + ")"
		}
		// Conditioned on the version just read and compared: a grant made
		// since is left alone.
		if err := lock.ForceRelease(ctx, a.db, in, by, reason); err != nil {
			if errors.Is(err, lock.ErrChanged) {
				return fmt.Errorf("%s changed hands while it was being released: nothing done; show it again", in.Path)
			}
			return err
		}
		fmt.Fprintf(a.stdout, "released %s (held by %s since %s); logged in %s\n", in.Path, in.Owner, in.AcquiredAt.UTC().Format(time.RFC3339), lock.LockLog)
		return nil
	})
	fl := cmd.Flags()
	fl.BoolVar(&force, "force", false, "required: yes, end somebody else's lease")
	fl.StringVar(&reason, "reason", "", "required: why, for the lock log")
	fl.Int64Var(&token, "token", 0, "the grant to end: the fencing token that locks show displayed")
	fl.StringVar(&owner, "owner", "", "for a lease without a token: the owner that locks show displayed (with --acquired-at)")
	fl.StringVar(&at, "acquired-at", "", "for a lease without a token: when its owner acquired it, as locks show displayed (RFC 3339)")
	return cmd
}

// checkPath: a lease path is collection/key (or deeper, evenly).
func checkPath(args []string) error {
	p := args[0]
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Count(p, "/")%2 == 0 {
		return usagef("%q is not a lease's path: want COLLECTION/KEY, e.g. locks/admit-onsale", p)
	}
	return nil
}

func tokenText(t int64) string {
	if t == 0 {
		return "–"
	}
	return strconv.FormatInt(t, 10)
}
