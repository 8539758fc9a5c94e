package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/firestore"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/report"
	"github.com/firelock/firelock/sale"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (a *app) saleCmd() *cobra.Command {
	c := group("sale", "Configures, pauses, resumes, closes, watches and reports a sale",
		a.saleConfigureCmd(),
		a.saleActionCmd(sale.ActionPause, "Pauses admissions",
			"Pauses admissions: nobody new is let in; places are kept, joins go on, live passes keep working.\n\n"+
				"--reason is required, as the console asks for one: the log keeps it for whoever\n"+
				"resumes. Without it, or with a blank one, the pause is a usage error (exit 2).",
			`$ firelock sale pause onsale --reason "checking the payment provider"
paused the sale of onsale: it is paused (the admitter publishes it within 2 s)
$ firelock sale pause onsale --reason "still checking"
nothing to change in the sale of onsale: it is paused (the admitter publishes it within 2 s)
$ firelock sale pause onsale
firelock sale pause: say why with --reason: the sale's log keeps it for whoever resumes
usage: firelock sale pause SCREENING [flags] (-h for more)`),
		a.saleActionCmd(sale.ActionResume, "Resumes admissions of a paused sale",
			"Resumes admissions of a paused sale.",
			`$ firelock sale resume onsale --reason "payments are back"
resumed the sale of onsale: it is open (the admitter publishes it within 2 s)`),
		a.saleActionCmd(sale.ActionClose, "Closes the sale for good",
			"Closes the sale for good: no more joins, holds or bookings; live holds may still be confirmed\n"+
				"while they last. Only revoke is accepted afterwards.",
			`$ firelock sale close onsale --reason "the projector broke"
closed the sale of onsale: it is closed
$ firelock sale resume onsale
firelock sale resume: the sale is closed: an operator closed it; only revoke is accepted now`),
		a.saleRevokeCmd(),
		a.saleStatusCmd(),
		a.saleListCmd(),
		a.saleWatchCmd(),
		a.saleReportCmd(),
	)
	c.Long = "Runs a sale (CONTRACT §8) through the same code as the console and OperateSale\n" +
		"(sale.Service.Operate): every accepted action that changes something is logged in\n" +
		"saleLog/{screening}/entries with who did it (cli:USER@HOST, and --as EMAIL) and why.\n" +
		"Actions are idempotent: one that changes nothing says so and logs nothing."
	return c
}

func (a *app) saleConfigureCmd() *cobra.Command {
	var opensAt, reason, output, verified string
	ints := []struct {
		name, field, help string
		v                 *string
	}{
		{"admit-per-minute", "admitPerMinute", "admitPerMinute: admitted a minute at most (1..10000)", new(string)},
		{"max-active", "maxActive", "maxActive: passes live at once at most (1..100000)", new(string)},
		{"pass-seconds", "passSeconds", "passSeconds: how long a pass lasts (30..3600; 0 resets to the default, 600)", new(string)},
		{"max-seats-per-user", "maxSeatsPerUser", "maxSeatsPerUser: seats one user may hold and book (1..10; 0 resets to the default, 6)", new(string)},
	}
	var set map[string]any
	cmd := &cobra.Command{
		Use:   "configure SCREENING",
		Short: "Creates or changes a screening's sale",
		Long: `Creates the screening's sale, or changes it: the flags given replace those fields, the
others keep their values. A new sale needs --opens-at, --admit-per-minute and
--max-active. From its opening on, every field but --opens-at may change.

--opens-at takes RFC 3339 (2026-12-01T18:00:00Z), or +DURATION from now by this
machine's clock, to the second (+2m, +1h30m); it must be before the screening's
startsAt. A value that is not a whole number (ten, 1.5), an unreadable --opens-at, or
no field at all is a usage error (exit 2). A whole number out of range, however many
digits it has, is refused by the sale (exit 1) with the field, the value and its JSON
type, and nothing changes. A configure that changes nothing prints "nothing to change
in the sale of ..." and logs nothing. -o json prints the OperateSale answer.`,
		Example: `$ firelock sale configure onsale --admit-per-minute 30 --max-active 5 --reason "more staff"
configured the sale of onsale: it is open (the admitter publishes it within 2 s)
$ firelock sale configure onsale --max-active 0
firelock sale configure: sale.maxActive must be a whole number from 1 to 100000, not the number 0
$ firelock sale configure premiere --opens-at +2h --admit-per-minute 600 --max-active 200 --as olive@example.com
configured the sale of premiere: it is scheduled (the admitter publishes it within 2 s)`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(func([]string) error {
		set = map[string]any{}
		if opensAt != "" {
			t, err := parseWhen(opensAt, time.Now())
			if err != nil {
				return usagef("--opens-at %q: want RFC 3339 (2026-12-01T18:00:00Z) or +DURATION (+2m)", opensAt)
			}
			set["opensAt"] = t.UTC().Format(time.RFC3339Nano)
		}
		for _, f := range ints {
			if *f.v == "" {
				continue
			}
			n, err := parseWhole(*f.v)
			if err != nil {
				return usagef("--%s %q: want a whole number", f.name, *f.v)
			}
			if n == 0 && (f.field == "passSeconds" || f.field == "maxSeatsPerUser") {
				set[f.field] = nil // back to the default
				continue
			}
			set[f.field] = n
		}
		switch verified {
		case "":
		case "true", "false":
			set["requireVerifiedEmail"] = verified == "true"
		default:
			return usagef("--require-verified-email %q: want true or false", verified)
		}
		if len(set) == 0 {
			return usagef("say what to set: --opens-at, --admit-per-minute, --max-active, --pass-seconds, --max-seats-per-user or --require-verified-email")
		}
		return nil
	}, func(ctx context.Context, args []string) error {
		return a.operate(ctx, sale.Operation{ScreeningID: args[0], Action: sale.ActionConfigure, Sale: set, Reason: reason}, output)
	})
	fl := cmd.Flags()
	fl.StringVar(&opensAt, "opens-at", "", "opensAt: when the sale opens, RFC 3339 or +DURATION from now; only until it opens")
	for _, f := range ints {
		fl.StringVar(f.v, f.name, "", f.help)
	}
	fl.StringVar(&verified, "require-verified-email", "", "requireVerifiedEmail: true lets in only users whose email is verified (CONTRACT §12); false anyone")
	fl.StringVar(&reason, "reason", "", "why, for the sale's log (up to 500 characters)")
	outputFlag(cmd, &output)
	return cmd
}

// saleActionCmd is pause, resume or close.
func (a *app) saleActionCmd(action, short, long, example string) *cobra.Command {
	var reason, output string
	cmd := &cobra.Command{
		Use:     action + " SCREENING",
		Short:   short,
		Long:    long + "\n\nThe operators' state shows at once in sale status; the public sales/{id}.state\nwithin 2 s. -o json prints the OperateSale answer.",
		Example: example,
		Args:    positional(1, 1),
	}
	// A pause needs a reason, as the console's does: buyers wait on it,
	// and whoever resumes reads why in the log.
	var check func([]string) error
	reasonHelp := "why, for the sale's log (up to 500 characters)"
	if action == sale.ActionPause {
		check = func([]string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("say why with --reason: the sale's log keeps it for whoever resumes")
			}
			return nil
		}
		reasonHelp = "why, for the sale's log (up to 500 characters); required"
	}
	cmd.RunE = a.action(check, func(ctx context.Context, args []string) error {
		return a.operate(ctx, sale.Operation{ScreeningID: args[0], Action: action, Reason: reason}, output)
	})
	cmd.Flags().StringVar(&reason, "reason", "", reasonHelp)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) saleRevokeCmd() *cobra.Command {
	var reason, output string
	cmd := &cobra.Command{
		Use:   "revoke SCREENING USER",
		Short: "Ends one user's pass now",
		Long: `Ends USER's pass now: their place turns expired, their live holds are released, and
the next person is let in. USER is a Firebase Auth uid, or an email (anything with an
@), which is looked up in Firebase Auth. A user without a place in the sale, or an
unknown email, exits 1. -o json prints the OperateSale answer.`,
		Example: `$ firelock sale revoke onsale bot@example.com --reason "scripted joins"
revoked jth85XcFpCWsjBIqKOIAFpPsXMO0 in the sale of onsale: it is open (the admitter publishes it within 2 s)`,
		Args: positional(2, 2),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, args []string) error {
		uid := args[1]
		if strings.Contains(uid, "@") {
			ac, err := a.auth(ctx)
			if err != nil {
				return err
			}
			u, err := ac.GetUserByEmail(ctx, uid)
			if auth.IsUserNotFound(err) {
				return fmt.Errorf("no Firebase Auth user has the email %q", uid)
			}
			if err != nil {
				return err
			}
			uid = u.UID
		}
		return a.operate(ctx, sale.Operation{ScreeningID: args[0], Action: sale.ActionRevoke, UID: uid, Reason: reason}, output)
	})
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the sale's log (up to 500 characters)")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) saleStatusCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status SCREENING",
		Short: "Shows a sale: configuration, operators' state, public numbers",
		Long: `Shows the sale's state, its configuration, the operators' state (saleControl: paused
or closed by an operator, else -) and its public numbers, sales/{id} as the admitter last
published them (none before its first run). The state is the published one, unless an
operator acted after that publish (or before the first): then it is the one the
screening shows, which the admitter publishes within 2 s. A screening without a sale exits 1 and says how to configure one.
With -o json, one field a line.`,
		Example: `$ firelock sale status onsale
screening        onsale (Nosferatu (demo sale))
state            open
operators        -
opensAt          2026-11-24T19:06:46Z
admitPerMinute   30
maxActive        1
passSeconds      180
maxSeatsPerUser  2
waiting          0
admitted         0
active           0
seats left       40
updated          2026-11-24T19:12:15Z`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, args []string) error {
		st, err := readStatus(ctx, a.db, args[0])
		if err != nil {
			return err
		}
		if output == "json" {
			return printJSON(a.stdout, st)
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "screening\t%s (%s)\n", st.ScreeningID, st.Title)
		fmt.Fprintf(w, "state\t%s\n", orDash(st.State))
		control := "-"
		switch {
		case st.Control["closed"] == true:
			control = "closed by an operator"
		case st.Control["paused"] == true:
			control = "paused by an operator"
		}
		fmt.Fprintf(w, "operators\t%s\n", control)
		for _, k := range []string{"opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser", "requireVerifiedEmail"} {
			if v, ok := st.Sale[k]; ok {
				fmt.Fprintf(w, "%s\t%v\n", k, v)
			}
		}
		if st.Public != nil {
			p := st.Public
			fmt.Fprintf(w, "waiting\t%d\nadmitted\t%d\nactive\t%d\nseats left\t%d\nupdated\t%s\n",
				p.Waiting, p.Admitted, p.Active, p.SeatsLeft, p.UpdatedAt.UTC().Format(time.RFC3339))
		}
		return w.Flush()
	})
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) saleListCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Lists every screening with a sale, and its numbers",
		Long: `Lists every screening that has a sale, by its opening: its state (as sale status shows
it), when it opens, and its public numbers as the admitter last published them (– before
its first run): people waiting, passes active, seats left. -o json prints what sale status
prints, for each.`,
		Example: `$ firelock sale list
SCREENING  TITLE                  STATE      OPENS AT              WAITING  ACTIVE  SEATS LEFT
onsale     Nosferatu (demo sale)  open       2026-11-24T19:06:46Z  0        0       40
premiere   Metropolis             scheduled  2026-12-01T18:00:00Z  –        –       –`,
		Args: positional(0, 0),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, _ []string) error {
		screenings, err := a.db.Collection(booking.Screenings).OrderBy("sale.opensAt", firestore.Asc).Documents(ctx).GetAll()
		if err != nil {
			return err
		}
		refs := make([]*firestore.DocumentRef, len(screenings))
		for i, sc := range screenings {
			refs[i] = a.db.Collection(sale.Sales).Doc(sc.Ref.ID)
		}
		var publics []*firestore.DocumentSnapshot
		if len(refs) > 0 {
			if publics, err = a.db.GetAll(ctx, refs); err != nil {
				return err
			}
		}
		list := []*saleStatus{}
		for i, sc := range screenings {
			st, err := statusOf(sc, publics[i])
			if err != nil {
				return err
			}
			if st != nil {
				list = append(list, st)
			}
		}
		if output == "json" {
			return printJSON(a.stdout, list)
		}
		if len(list) == 0 {
			fmt.Fprintln(a.stdout, "no sales")
			return nil
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "SCREENING\tTITLE\tSTATE\tOPENS AT\tWAITING\tACTIVE\tSEATS LEFT")
		for _, st := range list {
			waiting, active, left := "–", "–", "–"
			if p := st.Public; p != nil {
				waiting, active, left = strconv.FormatInt(p.Waiting, 10), strconv.FormatInt(p.Active, 10), strconv.FormatInt(p.SeatsLeft, 10)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", st.ScreeningID, orDash(st.Title), orDash(st.State), st.Sale["opensAt"], waiting, active, left)
		}
		return w.Flush()
	})
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) saleWatchCmd() *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "watch SCREENING",
		Short: "Shows a sale's numbers live",
		Long: `Prints the sale's public numbers each time the admitter publishes sales/{id}: a line
each, or, in a terminal, one line redrawn in place. It runs until Ctrl-C, or for --for,
and then exits 0; --timeout bounds the wait for the first line only.

The time is updatedAt, the admitter's publish, in this machine's zone. The state is the
one the screening's own documents show when an operator acted after that publish (or
before the first), so a pause shows at once; the numbers are the last published.`,
		Example: `$ firelock sale watch onsale --for 6s     # another terminal resumed the sale meanwhile
19:14:08  paused     waiting      0  admitted      2  active     0  seats left    37
19:14:12  open       waiting      0  admitted      2  active     0  seats left    37
19:14:15  open       waiting      0  admitted      2  active     0  seats left    37`,
		Args: positional(1, 1),
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if d < 0 {
			return usagef("--for %v: want a duration >= 0", d)
		}
		return a.watch(cmd.Context(), args[0], d)
	}
	cmd.Flags().DurationVar(&d, "for", 0, "stop after this long, such as 3s or 5m (0: until Ctrl-C)")
	return cmd
}

func (a *app) saleReportCmd() *cobra.Command {
	var htmlOut, csvDir, output string
	cmd := &cobra.Command{
		Use:   "report SCREENING",
		Short: "Reports a sale: sold, conversion, time in line, fairness, metering",
		Long: `Reads every place, hold, booking, seat and payment of the screening and its minute
figures, and prints the summary: seats sold; joined and admitted, still waiting and
revoked while waiting; admitted who booked (conversion); how the passes ended (by a
booking, ran out, revoked by an operator, live) and those that expired unused; time in
line (p50 and p90 by the nearest rank, so each is a wait someone had, and the max); a
priced sale's money (revenue, refunds, takings after refunds); fairness and metering. A
screening without a sale exits 1 and says so, as sale status does.

--html writes (its directory must exist) one self-contained page: the numbers, four
inline SVG charts over the minutes (waiting, admissions per minute, active passes,
seats left), fairness, metering and the minutes' table; no script, nothing fetched.
--csv writes minutes.csv (one row a minute), admissions.csv (every place: queueId,
uid, status, joinedAt, order, admittedAt, passUntil, doneAt) and bookings.csv
(bookingId, uid, status, seats, holdId, createdAt); the directory is made if missing.
-o json prints everything, the minutes included (a figure that cannot be computed,
such as the conversion with nobody admitted, is null).`,
		Example: `$ firelock sale report onsale --html onsale.html --csv onsale-csv
wrote onsale.html
wrote minutes.csv, admissions.csv and bookings.csv in onsale-csv
sale of                     onsale (Nosferatu (demo sale)), state open
sold                        2 of 40 seats
joined / admitted           3 / 2
still waiting               0
revoked while waiting       1
admitted who booked         1 (50.0%)
passes                      2: 1 ended by a booking, 1 ran out, 0 revoked, 0 live
passes expired unused       1
time in line p50 / p90      1.1 s / 9.8 s (max 9.8 s)
revenue                     37.50 EUR (2 payments)
refunds                     12.50 EUR (1 payment)
takings, after refunds      25.00 EUR (2 checkouts; 0 paid late and booked, 1 paid late and refunded)
early before later joiners  true
early joiners' rho          – over 0
later joiners out of order  0 of 1 pairs
most admitted in 60 s       2 (rate 30)
most passes at once         1 (maxActive 1)
minutes recorded            8`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, args []string) error {
		return a.report(ctx, args[0], htmlOut, csvDir, output)
	})
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the report as a self-contained HTML page to this file")
	cmd.Flags().StringVar(&csvDir, "csv", "", "write the raw tables as CSV into this directory")
	outputFlag(cmd, &output)
	return cmd
}

// operate runs an action through sale.Operate, as OperateSale does, and
// prints the sale as it is then.
func (a *app) operate(ctx context.Context, op sale.Operation, output string) error {
	op.By.UID, op.By.Email = a.operator()
	svc := sale.New(a.db)
	bk := booking.New(a.db, booking.WithGate(svc))
	defer bk.Close()
	out, err := svc.Operate(ctx, op, bk)
	if err != nil {
		return explain(err)
	}
	if output == "json" {
		return printJSON(a.stdout, out)
	}
	what := map[string]string{sale.ActionConfigure: "configured", sale.ActionPause: "paused", sale.ActionResume: "resumed",
		sale.ActionClose: "closed", sale.ActionRevoke: "revoked " + op.UID + " in"}[op.Action]
	if !out.Changed {
		what = "nothing to change in"
	}
	fmt.Fprintf(a.stdout, "%s the sale of %s: it is %s", what, out.ScreeningID, out.State)
	if out.State != sale.StateClosed {
		fmt.Fprint(a.stdout, " (the admitter publishes it within 2 s)")
	}
	fmt.Fprintln(a.stdout)
	return nil
}

// explain turns the domain's errors into what an operator reads.
func explain(err error) error {
	switch {
	case errors.Is(err, sale.ErrInvalidSale):
		return errors.New(strings.TrimPrefix(err.Error(), "sale: invalid sale: "))
	case errors.Is(err, booking.ErrScreeningNotFound):
		return errors.New("no such screening")
	case errors.Is(err, booking.ErrInvalidArgument):
		return errors.New(strings.TrimPrefix(err.Error(), "booking: invalid argument: "))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "sale: "))
}

// saleStatus is what `sale status` shows.
type saleStatus struct {
	ScreeningID string         `json:"screeningId"`
	Title       string         `json:"title"`
	State       string         `json:"state"`
	Sale        map[string]any `json:"sale"`
	Control     map[string]any `json:"saleControl,omitempty"`
	Public      *publicView    `json:"public,omitempty"`
}

type publicView struct {
	State     string    `json:"state" firestore:"state"`
	Waiting   int64     `json:"waiting" firestore:"waiting"`
	Admitted  int64     `json:"admitted" firestore:"admitted"`
	Active    int64     `json:"active" firestore:"active"`
	SeatsLeft int64     `json:"seatsLeft" firestore:"seatsLeft"`
	UpdatedAt time.Time `json:"updatedAt" firestore:"updatedAt"`
}

func readStatus(ctx context.Context, db *firestore.Client, id string) (*saleStatus, error) {
	snaps, err := db.GetAll(ctx, []*firestore.DocumentRef{db.Collection(booking.Screenings).Doc(id), db.Collection(sale.Sales).Doc(id)})
	if err != nil {
		return nil, err
	}
	if !snaps[0].Exists() {
		return nil, errors.New("no such screening")
	}
	st, err := statusOf(snaps[0], snaps[1])
	if st == nil && err == nil {
		err = noSale(id)
	}
	return st, err
}

// noSale is what a command that reads a sale says of a screening without
// one (exit 1; OperateSale's 409 no_sale).
func noSale(id string) error {
	return fmt.Errorf("screening %s has no sale (configure one with: firelock sale configure %s --opens-at ... --admit-per-minute ... --max-active ...)", id, id)
}

// statusOf is a sale as its screening and its public document show it;
// nil for a screening without a sale.
func statusOf(screening, public *firestore.DocumentSnapshot) (*saleStatus, error) {
	raw, _ := screening.Data()["sale"].(map[string]any)
	if raw == nil {
		return nil, nil
	}
	st := &saleStatus{ScreeningID: screening.Ref.ID, Sale: map[string]any{}}
	st.Title, _ = screening.Data()["title"].(string)
	for k, v := range raw {
		if t, ok := v.(time.Time); ok {
			v = t.UTC().Format(time.RFC3339)
		}
		st.Sale[k] = v
	}
	st.Control, _ = screening.Data()[sale.FieldControl].(map[string]any)
	if public.Exists() {
		var p publicView
		if err := public.DataTo(&p); err != nil {
			return nil, fmt.Errorf("sales/%s: %w", screening.Ref.ID, err)
		}
		st.Public = &p
	}
	st.State, _ = shownState(screening, st.Public)
	return st, nil
}

// shownState is the sale's state to show, and as of when: the published
// one, unless the operators acted after that publish (or nothing is
// published yet); then the one the screening shows, which the admitter
// publishes within 2 s (a pause shows at once).
func shownState(screening *firestore.DocumentSnapshot, p *publicView) (string, time.Time) {
	ctl, _ := screening.Data()[sale.FieldControl].(map[string]any)
	ctlAt, _ := ctl["updatedAt"].(time.Time)
	state := sale.StateOf(screening, screening.ReadTime)
	if p == nil {
		if ctlAt.IsZero() {
			ctlAt = screening.ReadTime
		}
		return state, ctlAt
	}
	if ctlAt.After(p.UpdatedAt) && state != "" && !(p.State == sale.StateSoldOut && state == sale.StateOpen) {
		return state, ctlAt
	}
	return p.State, p.UpdatedAt
}

// watch redraws the sale's numbers on each publish, and its state on each
// operators' action: listens to sales/{id} and to the screening.
func (a *app) watch(ctx context.Context, id string, forD time.Duration) error {
	if forD > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, forD)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// --timeout bounds the wait for the first line: late when it passed
	// before one was drawn.
	var mu sync.Mutex
	late, drawnOne := false, false
	isLate := func() bool { mu.Lock(); defer mu.Unlock(); return late }
	first := time.AfterFunc(a.timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !drawnOne {
			late = true
			cancel()
		}
	})
	defer first.Stop()
	expired := func(err error) error {
		if isLate() {
			return a.timedOut()
		}
		return a.failed(ctx, err)
	}
	if err := a.connect(ctx); err != nil {
		return expired(err)
	}
	defer a.close()
	if _, err := readStatus(ctx, a.db, id); err != nil {
		return expired(err)
	}

	type event struct {
		public bool
		snap   *firestore.DocumentSnapshot
		err    error
	}
	events := make(chan event)
	var wg sync.WaitGroup
	for _, public := range []bool{false, true} {
		ref := a.db.Collection(booking.Screenings).Doc(id)
		if public {
			ref = a.db.Collection(sale.Sales).Doc(id)
		}
		it := ref.Snapshots(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				snap, err := it.Next()
				select {
				case events <- event{public, snap, err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		defer it.Stop() // after the goroutines end: Stop must not race Next
	}
	defer wg.Wait()
	defer cancel()

	tty := isTerminal(a.stdout)
	var screening, public *firestore.DocumentSnapshot
	drawn := 0
	for {
		var ev event
		select {
		case ev = <-events:
		case <-ctx.Done():
			ev.err = ctx.Err()
		}
		if ev.err != nil {
			if isLate() {
				return a.timedOut()
			}
			if ctx.Err() != nil || status.Code(ev.err) == codes.Canceled || status.Code(ev.err) == codes.DeadlineExceeded {
				return nil // Ctrl-C, or --for passed
			}
			return refusal{ev.err}
		}
		if ev.public {
			public = ev.snap
		} else {
			screening = ev.snap
		}
		if screening == nil || public == nil {
			continue
		}
		mu.Lock()
		drawnOne = !late
		mu.Unlock()
		if !drawnOne {
			return a.timedOut()
		}
		line, err := watchLine(screening, public)
		if err != nil {
			return refusal{err}
		}
		if tty && drawn > 0 {
			fmt.Fprint(a.stdout, "\r\033[K") // redraw the one line in place
		}
		fmt.Fprint(a.stdout, line)
		drawn++
		if !tty {
			fmt.Fprintln(a.stdout)
		}
	}
}

// watchLine is one line of sale watch: the state shownState says, and
// the numbers last published.
func watchLine(screening, public *firestore.DocumentSnapshot) (string, error) {
	st, err := statusOf(screening, public)
	if err != nil {
		return "", err
	}
	if st == nil {
		return "", fmt.Errorf("screening %s has no sale any more", screening.Ref.ID)
	}
	state, at := shownState(screening, st.Public)
	p := st.Public
	if p == nil {
		return fmt.Sprintf("%s  %-9s  waiting %6s  admitted %6s  active %5s  seats left %5s  (numbers from the admitter's first run)",
			at.Local().Format("15:04:05"), state, "–", "–", "–", "–"), nil
	}
	return fmt.Sprintf("%s  %-9s  waiting %6d  admitted %6d  active %5d  seats left %5d",
		at.Local().Format("15:04:05"), state, p.Waiting, p.Admitted, p.Active, p.SeatsLeft), nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// report writes the sale's report: text (or JSON), a page, CSV.
func (a *app) report(ctx context.Context, id, htmlOut, csvDir, output string) error {
	r, err := report.Build(ctx, a.db, id, time.Now())
	switch {
	case status.Code(err) == codes.NotFound:
		return errors.New("no such screening")
	case errors.Is(err, sale.ErrNoSale):
		return noSale(id)
	}
	if err != nil {
		return err
	}
	if htmlOut != "" {
		f, err := os.Create(htmlOut)
		if err != nil {
			return err
		}
		werr := r.HTML(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
		fmt.Fprintf(a.stderr, "wrote %s\n", htmlOut)
	}
	if csvDir != "" {
		if err := r.CSV(csvDir); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "wrote minutes.csv, admissions.csv and bookings.csv in %s\n", csvDir)
	}
	if output == "json" {
		return printJSON(a.stdout, r)
	}
	s := r.Summary
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "sale of\t%s (%s), state %s\n", r.ScreeningID, r.Title, orDash(r.State))
	fmt.Fprintf(w, "sold\t%d of %d seats\n", s.Sold, s.Seats)
	fmt.Fprintf(w, "joined / admitted\t%d / %d\n", s.Places, s.Admitted)
	fmt.Fprintf(w, "still waiting\t%d\n", s.StillWaiting)
	fmt.Fprintf(w, "revoked while waiting\t%d\n", s.RevokedWaiting)
	fmt.Fprintf(w, "admitted who booked\t%d (%s)\n", s.Booked, pct(s.Conversion))
	fmt.Fprintf(w, "passes\t%d: %d ended by a booking, %d ran out, %d revoked, %d live\n",
		s.Admitted, s.PassesDone, s.PassesRanOut, s.PassesRevoked, s.PassesLive)
	fmt.Fprintf(w, "passes expired unused\t%d\n", s.ExpiredUnused)
	fmt.Fprintf(w, "time in line p50 / p90\t%.1f s / %.1f s (max %.1f s)\n", s.WaitP50, s.WaitP90, s.WaitMax)
	if m := s.Money; m != nil {
		fmt.Fprintf(w, "revenue\t%s (%s)\n", payment.Format(m.Revenue, m.Currency), plural(m.Paid, "payment", "payments"))
		fmt.Fprintf(w, "refunds\t%s (%s)\n", payment.Format(m.Refunds, m.Currency), plural(m.Refunded, "payment", "payments"))
		fmt.Fprintf(w, "takings, after refunds\t%s (%s; %d paid late and booked, %d paid late and refunded)\n",
			payment.Format(m.Net, m.Currency), plural(m.Checkouts, "checkout", "checkouts"), m.LateAccepted, m.LateRefunded)
	} else {
		fmt.Fprintf(w, "revenue\t– (no checkouts)\n")
	}
	f := r.Fairness
	fmt.Fprintf(w, "early before later joiners\t%v\n", f.EarlyBeforeLate)
	fmt.Fprintf(w, "early joiners' rho\t%s over %d\n", rhoText(f.EarlySpearman), f.EarlyAdmitted)
	fmt.Fprintf(w, "later joiners out of order\t%d of %d pairs\n", f.LateInverted, f.LatePairs)
	m := r.Metering
	fmt.Fprintf(w, "most admitted in 60 s\t%d (rate %d)\n", m.MaxAdmittedPerMinute, r.Rate)
	fmt.Fprintf(w, "most passes at once\t%d (maxActive %d)\n", m.MaxLivePasses, r.MaxActive)
	fmt.Fprintf(w, "minutes recorded\t%d\n", len(r.Minutes))
	if a := r.Attendance; a != nil {
		fmt.Fprintf(w, "in at the door\t%d of %d tickets (%d not yet in, %d out now)\n", a.In, a.Expected, a.NotYet, a.Out)
		for _, g := range a.Gates {
			fmt.Fprintf(w, "gate %s\t%d scans: %d admitted, %d exited, %d conflicts\n", g.Gate, g.Scans, g.Admitted, g.Exited, g.Conflicts)
		}
	}
	return w.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func pct(m report.Maybe) string {
	if float64(m) != float64(m) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(m))
}

func rhoText(m report.Maybe) string {
	if float64(m) != float64(m) {
		return "–"
	}
	return fmt.Sprintf("%+.3f", float64(m))
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// parseWhen reads RFC 3339, or +DURATION from now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return time.Time{}, errors.New("bad duration")
		}
		return now.Add(dur).Truncate(time.Second), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// wholeRE is a whole number as the command line takes it.
var wholeRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

// parseWhole reads a whole number: an int, or, when it has too many digits
// for one, a float64, for the sale to refuse as out of range (exit 1, as
// any whole number out of range) rather than a malformed value.
func parseWhole(s string) (any, error) {
	if !wholeRE.MatchString(s) {
		return nil, errors.New("not a whole number")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return int(n), nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	if ferr != nil && !errors.Is(ferr, strconv.ErrRange) {
		return nil, ferr
	}
	return f, nil
}
