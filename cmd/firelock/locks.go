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
)

// lockCollections are the collections whose documents are leases
// (CONTRACT §1): the library's locks, the seats' leases, the job runs, the
// clients' mutexes.
var lockCollections = []string{"locks", "seatLocks", "jobRuns", "mutex_critical_data"}

type lockFlags struct {
	collection, prefix string
	force              bool
	token              int64
	owner              string
}

var lockVerbs = map[string]verb{
	"list": {
		args: "[--collection C] [--prefix P] [-o json]",
		help: "Lists leases: of every lease collection (" + strings.Join(lockCollections, ", ") + "), or of C, whose keys start with P.\n\n" +
			"example: firelock locks list --prefix admit-",
		min: 0, max: 0,
		flags: func(c *cmd) func([]string) error {
			coll := c.fs.String("collection", "", "the collection to list (default: every lease collection)")
			prefix := c.fs.String("prefix", "", "keys that start with this")
			return func([]string) error {
				c.collection, c.prefix = *coll, *prefix
				if strings.Contains(c.collection, "/") && strings.Count(c.collection, "/")%2 == 1 {
					return usagef("--collection %q names a document, not a collection", c.collection)
				}
				return nil
			}
		},
		run: func(ctx context.Context, c *cmd, _ []string) error {
			colls := lockCollections
			if c.collection != "" {
				colls = []string{c.collection}
			}
			var all []lock.Info
			for _, coll := range colls {
				ls, err := lock.List(ctx, c.db, coll, c.prefix, 0)
				if err != nil {
					return err
				}
				all = append(all, ls...)
			}
			if c.output == "json" {
				if all == nil {
					all = []lock.Info{}
				}
				return printJSON(c, all)
			}
			if len(all) == 0 {
				fmt.Fprintln(c.stdout, "no leases")
				return nil
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "PATH\tOWNER\tLIVE\tENDS\tTOKEN")
			for _, in := range all {
				fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", in.Path, in.Owner, in.Live, in.Ends.UTC().Format(time.RFC3339), tokenText(in.Token))
			}
			return w.Flush()
		},
	},
	"show": {
		args: "PATH [-o json]",
		help: "Shows one lease: its holder, grant, renewal, end and fencing token.\n\nexample: firelock locks show locks/admit-onsale",
		min:  1, max: 1,
		flags: func(c *cmd) func([]string) error { return checkPath },
		run: func(ctx context.Context, c *cmd, pos []string) error {
			in, err := lock.Inspect(ctx, c.db, pos[0])
			if err != nil {
				return err
			}
			if c.output == "json" {
				return printJSON(c, in)
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "path\t%s\nowner\t%s\nlive\t%v (read %s)\nacquired\t%s\nrenewed\t%s\nends\t%s\nlease\t%d s\ntoken\t%s\n",
				in.Path, in.Owner, in.Live, in.ReadTime.UTC().Format(time.RFC3339Nano), in.AcquiredAt.UTC().Format(time.RFC3339Nano),
				in.RenewedAt.UTC().Format(time.RFC3339Nano), in.Ends.UTC().Format(time.RFC3339Nano), in.LeaseSeconds, tokenText(in.Token))
			if err := w.Flush(); err != nil {
				return err
			}
			how := "--owner " + in.Owner
			if in.Token != 0 {
				how = "--token " + strconv.FormatInt(in.Token, 10)
			}
			fmt.Fprintf(c.stdout, "\nto end it: firelock locks release %s --force --reason \"...\" %s\n", in.Path, how)
			return nil
		},
	},
	"release": {
		args: "PATH --force --reason R (--token T | --owner O)",
		help: "Ends a lease now, whoever holds it, in one commit with its lockLog entry: the holder's guarded writes\n" +
			"fail from then on, and the next holder's token is higher. --token (or, for a lease without one,\n" +
			"--owner) is the grant that `locks show` displayed: a lease that changed hands since is left alone.\n\n" +
			"example: firelock locks release locks/admit-onsale --force --reason \"the admitter hangs\" --token 1795...",
		min: 1, max: 1,
		flags: func(c *cmd) func([]string) error {
			force := c.fs.Bool("force", false, "yes, end somebody else's lease")
			reason := c.fs.String("reason", "", "why, for the lock log (required)")
			token := c.fs.Int64("token", 0, "the fencing token that locks show displayed")
			owner := c.fs.String("owner", "", "the owner that locks show displayed (for a lease without a token)")
			return func(pos []string) error {
				c.force, c.reason, c.token, c.owner = *force, *reason, *token, *owner
				switch {
				case !c.force:
					return usagef("a release ends somebody else's lease: say --force")
				case strings.TrimSpace(c.reason) == "":
					return usagef("say why with --reason: the lock log keeps it")
				case c.token == 0 && c.owner == "":
					return usagef("say which grant to end with --token (or --owner), as `firelock locks show %s` displays it", pos[0])
				case c.token < 0:
					return usagef("--token %d: want the positive token `locks show` displays", c.token)
				}
				return checkPath(pos)
			}
		},
		run: func(ctx context.Context, c *cmd, pos []string) error {
			in, err := lock.Inspect(ctx, c.db, pos[0])
			if err != nil {
				return err
			}
			if (c.token != 0 && in.Token != c.token) || (c.owner != "" && in.Owner != c.owner) {
				return fmt.Errorf("%s changed hands: it is held by %s with token %s now, not the grant you named; show it again", in.Path, in.Owner, tokenText(in.Token))
			}
			uid, email := c.operator()
			by := uid
			if email != "" {
				by = email + " (" + uid + ")"
			}
			if err := lock.ForceRelease(ctx, c.db, in, by, c.reason); err != nil {
				if errors.Is(err, lock.ErrChanged) {
					return fmt.Errorf("%s changed hands while it was being released: nothing done; show it again", in.Path)
				}
				return err
			}
			fmt.Fprintf(c.stdout, "released %s (held by %s since %s); logged in %s\n", in.Path, in.Owner, in.AcquiredAt.UTC().Format(time.RFC3339), lock.LockLog)
			return nil
		},
	},
}

// checkPath: a lease path is collection/key (or deeper, evenly).
func checkPath(pos []string) error {
	p := pos[0]
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
