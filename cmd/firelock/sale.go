package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/firestore"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/salereport"
	"github.com/firelock/firelock/sale"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var saleVerbs = map[string]verb{
	"configure": {
		args: "SCREENING [--opens-at T] [--admit-per-minute N] [--max-active N] [--pass-seconds N] [--max-seats-per-user N] [--reason R]",
		help: "Creates the screening's sale, or changes it: the fields given replace those stored, the rest stay.\n" +
			"A new sale needs --opens-at, --admit-per-minute and --max-active. From its opening on, every field\n" +
			"but --opens-at may change. --opens-at takes RFC 3339 (2026-12-01T18:00:00Z) or +DURATION from now (+2m).\n\n" +
			"example: firelock sale configure onsale --admit-per-minute 30 --max-active 5 --reason \"more staff\"",
		min: 1, max: 1,
		flags: func(c *cmd) func([]string) error {
			opensAt := c.fs.String("opens-at", "", "when the sale opens: RFC 3339, or +DURATION from now")
			ints := map[string]*string{}
			for _, f := range []struct{ name, field, help string }{
				{"admit-per-minute", "admitPerMinute", "admitted a minute at most (1..10000)"},
				{"max-active", "maxActive", "passes live at once at most (1..100000)"},
				{"pass-seconds", "passSeconds", "how long a pass lasts (30..3600; 0 resets to the default, 600)"},
				{"max-seats-per-user", "maxSeatsPerUser", "seats one user may hold and book (1..10; 0 resets to the default, 6)"},
			} {
				ints[f.field] = c.fs.String(f.name, "", f.help)
			}
			reason := c.fs.String("reason", "", "why, for the sale's log")
			return func(pos []string) error {
				c.sale = map[string]any{}
				c.reason = *reason
				if *opensAt != "" {
					t, err := parseWhen(*opensAt, time.Now())
					if err != nil {
						return usagef("--opens-at %q: want RFC 3339 (2026-12-01T18:00:00Z) or +DURATION (+2m)", *opensAt)
					}
					c.sale["opensAt"] = t.UTC().Format(time.RFC3339Nano)
				}
				for field, v := range ints {
					if *v == "" {
						continue
					}
					n, err := parseInt(*v)
					if err != nil {
						return usagef("--%s %q: want a whole number", flagOf(field), *v)
					}
					if n == 0 && (field == "passSeconds" || field == "maxSeatsPerUser") {
						c.sale[field] = nil // back to the default
						continue
					}
					c.sale[field] = n
				}
				if len(c.sale) == 0 {
					return usagef("say what to set: --opens-at, --admit-per-minute, --max-active, --pass-seconds or --max-seats-per-user")
				}
				return nil
			}
		},
		run: func(ctx context.Context, c *cmd, pos []string) error {
			return c.operate(ctx, sale.Operation{ScreeningID: pos[0], Action: sale.ActionConfigure, Sale: c.sale, Reason: c.reason})
		},
	},
	"pause":  actionVerb(sale.ActionPause, "Pauses admissions: nobody new is let in; places are kept, joins go on, live passes keep working."),
	"resume": actionVerb(sale.ActionResume, "Resumes admissions of a paused sale."),
	"close":  actionVerb(sale.ActionClose, "Closes the sale for good: no more joins, holds or bookings; live holds may still be confirmed."),
	"revoke": {
		args: "SCREENING USER [--reason R]",
		help: "Ends USER's pass now (USER: a Firebase Auth uid, or an email): their place turns expired and their\n" +
			"live holds are released, so the next person is let in.\n\nexample: firelock sale revoke onsale bot@example.com --reason \"scripted joins\"",
		min: 2, max: 2,
		flags: func(c *cmd) func([]string) error {
			reason := c.fs.String("reason", "", "why, for the sale's log")
			return func([]string) error { c.reason = *reason; return nil }
		},
		run: func(ctx context.Context, c *cmd, pos []string) error {
			uid := pos[1]
			if strings.Contains(uid, "@") {
				u, err := c.auth.GetUserByEmail(ctx, uid)
				if auth.IsUserNotFound(err) {
					return fmt.Errorf("no Firebase Auth user has the email %q", uid)
				}
				if err != nil {
					return err
				}
				uid = u.UID
			}
			return c.operate(ctx, sale.Operation{ScreeningID: pos[0], Action: sale.ActionRevoke, UID: uid, Reason: c.reason})
		},
	},
	"status": {
		args: "SCREENING [-o json]",
		help: "Shows the sale: its configuration, the operators' state, and its public numbers (sales/{id}).",
		min:  1, max: 1,
		run: func(ctx context.Context, c *cmd, pos []string) error {
			st, err := readStatus(ctx, c.db, pos[0])
			if err != nil {
				return err
			}
			if c.output == "json" {
				return printJSON(c, st)
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
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
			keys := []string{"opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser"}
			for _, k := range keys {
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
		},
	},
	"watch": {
		args: "SCREENING [--for DURATION]",
		help: "Shows the sale's public numbers live, redrawn as the admitter publishes them, until Ctrl-C\n(or for DURATION).\n\nexample: firelock sale watch onsale",
		min:  1, max: 1,
		flags: func(c *cmd) func([]string) error {
			d := c.fs.Duration("for", 0, "stop after this long (0: until Ctrl-C)")
			return func([]string) error {
				if *d < 0 {
					return usagef("--for %v: want a duration >= 0", *d)
				}
				c.watchFor = *d
				return nil
			}
		},
		run: watch,
	},
	"report": {
		args: "SCREENING [--html FILE] [--csv DIR] [-o json]",
		help: "Reports the sale: sold, conversion from admitted to booked, passes that expired unused, time in line,\n" +
			"fairness and metering, and its minutes. --html writes one self-contained page with the charts;\n" +
			"--csv writes minutes.csv, admissions.csv and bookings.csv.\n\nexample: firelock sale report onsale --html onsale-report.html",
		min: 1, max: 1,
		flags: func(c *cmd) func([]string) error {
			html := c.fs.String("html", "", "write the report as a self-contained HTML page to this file")
			csvDir := c.fs.String("csv", "", "write the raw tables as CSV into this directory")
			return func([]string) error { c.htmlOut, c.csvDir = *html, *csvDir; return nil }
		},
		run: report,
	},
}

// actionVerb is pause, resume or close.
func actionVerb(action, help string) verb {
	return verb{
		args: "SCREENING [--reason R]",
		help: help + "\n\nexample: firelock sale " + action + " onsale --reason \"checking the payment provider\"",
		min:  1, max: 1,
		flags: func(c *cmd) func([]string) error {
			reason := c.fs.String("reason", "", "why, for the sale's log")
			return func([]string) error { c.reason = *reason; return nil }
		},
		run: func(ctx context.Context, c *cmd, pos []string) error {
			return c.operate(ctx, sale.Operation{ScreeningID: pos[0], Action: action, Reason: c.reason})
		},
	}
}

// The verbs' parsed flags.
type saleFlags struct {
	sale            map[string]any
	reason          string
	watchFor        time.Duration
	htmlOut, csvDir string
}

// operate runs an action through sale.Operate, as OperateSale does, and
// prints the sale as it is then.
func (c *cmd) operate(ctx context.Context, op sale.Operation) error {
	op.By.UID, op.By.Email = c.operator()
	svc := sale.New(c.db)
	bk := booking.New(c.db, booking.WithGate(svc))
	defer bk.Close()
	out, err := svc.Operate(ctx, op, bk)
	if err != nil {
		return explain(err)
	}
	if c.output == "json" {
		return printJSON(c, out)
	}
	what := map[string]string{sale.ActionConfigure: "configured", sale.ActionPause: "paused", sale.ActionResume: "resumed",
		sale.ActionClose: "closed", sale.ActionRevoke: "revoked " + op.UID + " in"}[op.Action]
	if !out.Changed {
		what = "nothing to change in"
	}
	fmt.Fprintf(c.stdout, "%s the sale of %s: it is %s", what, out.ScreeningID, out.State)
	if out.State != sale.StateClosed {
		fmt.Fprint(c.stdout, " (the admitter publishes it within 2 s)")
	}
	fmt.Fprintln(c.stdout)
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
	st := &saleStatus{ScreeningID: id, Sale: map[string]any{}}
	st.Title, _ = snaps[0].Data()["title"].(string)
	raw, _ := snaps[0].Data()["sale"].(map[string]any)
	if raw == nil {
		return nil, fmt.Errorf("screening %s has no sale (configure one with: firelock sale configure %s --opens-at ... --admit-per-minute ... --max-active ...)", id, id)
	}
	for k, v := range raw {
		if t, ok := v.(time.Time); ok {
			v = t.UTC().Format(time.RFC3339)
		}
		st.Sale[k] = v
	}
	st.Control, _ = snaps[0].Data()[sale.FieldControl].(map[string]any)
	if snaps[1].Exists() {
		var p publicView
		if err := snaps[1].DataTo(&p); err == nil {
			st.Public, st.State = &p, p.State
		}
	}
	return st, nil
}

// watch redraws the sale's public numbers on each publish.
func watch(ctx context.Context, c *cmd, pos []string) error {
	id := pos[0]
	if c.watchFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.watchFor)
		defer cancel()
	}
	if _, err := readStatus(ctx, c.db, id); err != nil {
		return err
	}
	tty := isTerminal(c.stdout)
	it := c.db.Collection(sale.Sales).Doc(id).Snapshots(ctx)
	defer it.Stop()
	drawn := 0
	for {
		snap, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || status.Code(err) == codes.Canceled || status.Code(err) == codes.DeadlineExceeded {
				return nil // Ctrl-C, or --for passed
			}
			return err
		}
		line := fmt.Sprintf("%s  sale of %s: not published yet (the admitter publishes it within a few seconds of its next run)", time.Now().Format("15:04:05"), id)
		if snap.Exists() {
			var p publicView
			if err := snap.DataTo(&p); err != nil {
				return err
			}
			line = fmt.Sprintf("%s  %-9s  waiting %6d  admitted %6d  active %5d  seats left %5d", p.UpdatedAt.Local().Format("15:04:05"), p.State, p.Waiting, p.Admitted, p.Active, p.SeatsLeft)
		}
		if tty && drawn > 0 {
			fmt.Fprint(c.stdout, "\r\033[K") // redraw the one line in place
		} else if drawn > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprint(c.stdout, line)
		drawn++
		if !tty {
			fmt.Fprintln(c.stdout)
			drawn = 0
		}
	}
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
func report(ctx context.Context, c *cmd, pos []string) error {
	r, err := salereport.Build(ctx, c.db, pos[0], time.Now())
	if status.Code(err) == codes.NotFound {
		return errors.New("no such screening")
	}
	if err != nil {
		return err
	}
	if c.htmlOut != "" {
		f, err := os.Create(c.htmlOut)
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
		fmt.Fprintf(c.stderr, "wrote %s\n", c.htmlOut)
	}
	if c.csvDir != "" {
		if err := r.CSV(c.csvDir); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "wrote minutes.csv, admissions.csv and bookings.csv in %s\n", c.csvDir)
	}
	if c.output == "json" {
		return printJSON(c, r)
	}
	s := r.Summary
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "sale of\t%s (%s), state %s\n", r.ScreeningID, r.Title, orDash(r.State))
	fmt.Fprintf(w, "sold\t%d of %d seats\n", s.Sold, s.Seats)
	fmt.Fprintf(w, "joined / admitted\t%d / %d\n", s.Places, s.Admitted)
	fmt.Fprintf(w, "admitted who booked\t%d (%s)\n", s.Booked, pct(s.Conversion))
	fmt.Fprintf(w, "passes expired unused\t%d\n", s.ExpiredUnused)
	fmt.Fprintf(w, "time in line p50 / p90\t%.0f s / %.0f s\n", s.WaitP50, s.WaitP90)
	f := r.Fairness
	fmt.Fprintf(w, "early before later joiners\t%v\n", f.EarlyBeforeLate)
	fmt.Fprintf(w, "early joiners' rho\t%s over %d\n", rhoText(f.EarlySpearman), f.EarlyAdmitted)
	fmt.Fprintf(w, "later joiners out of order\t%d of %d pairs\n", f.LateInverted, f.LatePairs)
	m := r.Metering
	fmt.Fprintf(w, "most admitted in 60 s\t%d (rate %d)\n", m.MaxAdmittedPerMinute, r.Rate)
	fmt.Fprintf(w, "most passes at once\t%d (maxActive %d)\n", m.MaxLivePasses, r.MaxActive)
	fmt.Fprintf(w, "minutes recorded\t%d\n", len(r.Minutes))
	return w.Flush()
}

func pct(m salereport.Maybe) string {
	if float64(m) != float64(m) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(m))
}

func rhoText(m salereport.Maybe) string {
	if float64(m) != float64(m) {
		return "–"
	}
	return fmt.Sprintf("%+.3f", float64(m))
}

func printJSON(c *cmd, v any) error {
	enc := json.NewEncoder(c.stdout)
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

func parseInt(s string) (int, error) {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(s) {
		return 0, errors.New("not a whole number")
	}
	return n, nil
}

func flagOf(field string) string {
	return map[string]string{"admitPerMinute": "admit-per-minute", "maxActive": "max-active", "passSeconds": "pass-seconds", "maxSeatsPerUser": "max-seats-per-user"}[field]
}
