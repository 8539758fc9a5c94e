package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/ticket"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// arrivalMinutes is how far back `door status` counts arrivals per minute.
const arrivalMinutes = 10

func (a *app) doorCmd() *cobra.Command {
	c := group("door", "Shows a screening's door", a.doorStatusCmd())
	c.Long = "What the door of a screening (CONTRACT §13) has let in so far. The door itself is\n" +
		"configured with OperateSale's configure-door action, or in the console."
	return c
}

func (a *app) ticketsCmd() *cobra.Command {
	c := group("tickets", "Shows a ticket, by its id or its code", a.ticketsShowCmd())
	c.Long = "Reads a ticket (CONTRACT §13) as an operator at a gate would ask about it."
	return c
}

// doorStatus is what `door status` shows.
type doorStatus struct {
	ScreeningID string       `json:"screeningId"`
	Door        *doorView    `json:"door"` // null: the screening has no door
	Expected    int64        `json:"expected"`
	In          int64        `json:"in"`
	Out         int64        `json:"out"`
	NotYet      int64        `json:"notYet"` // valid tickets never scanned in: no-shows so far
	Gates       []gateView   `json:"gates"`
	Arrivals    []minuteView `json:"arrivals"` // admissions per minute, the last arrivalMinutes
}

type doorView struct {
	OpensAt time.Time `json:"opensAt"`
	Gates   []string  `json:"gates"`
	Reentry bool      `json:"reentry"`
}

type gateView struct {
	Gate      string `json:"gate"`
	Scans     int64  `json:"scans"`
	Admitted  int64  `json:"admitted"`
	Exited    int64  `json:"exited"`
	Conflicts int64  `json:"conflicts"`
}

type minuteView struct {
	Minute   time.Time `json:"minute"`
	Admitted int       `json:"admitted"`
}

func (a *app) doorStatusCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status SCREENING",
		Short: "Shows who is in, who is expected, and each gate's scans",
		Long: `Shows a screening's door: tickets expected (valid ones), in and out now, not yet
in (the no-shows so far), each gate's scans (admitted, exited, and conflicts: offline
admissions of a ticket already in), and admissions per minute over the last ` + fmt.Sprint(arrivalMinutes) + `
minutes. Counting costs aggregation queries (3, and 4 per gate) and one read per scan
of the last ` + fmt.Sprint(arrivalMinutes) + ` minutes. A screening that does not exist exits 1.`,
		Example: `$ firelock door status demo
door      gates A, B; open since 2026-11-28T18:00:00Z; no reentry
expected  200
in        143
out       0
not yet   57
GATE  SCANS  ADMITTED  EXITED  CONFLICTS
A     80     75        0       1
B     70     68        0       0
arrivals per minute (UTC): 18:52 12, 18:53 9, ...`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, args []string) error {
		st, err := door.New(a.db, nil).Status(ctx, args[0])
		if errors.Is(err, booking.ErrScreeningNotFound) {
			return fmt.Errorf("no screening %q", args[0])
		}
		if err != nil {
			return err
		}
		out := doorStatus{ScreeningID: st.ScreeningID, Expected: st.Expected, In: st.In, Out: st.Out,
			NotYet: max(0, st.Expected-st.In-st.Out), Gates: []gateView{}, Arrivals: []minuteView{}}
		if st.Door != nil {
			out.Door = &doorView{OpensAt: st.Door.OpensAt, Gates: st.Door.Gates, Reentry: st.Door.Reentry}
			if out.Arrivals, err = a.arrivals(ctx, args[0]); err != nil {
				return err
			}
		}
		for _, g := range st.Gates {
			out.Gates = append(out.Gates, gateView(g))
		}
		if output == "json" {
			return printJSON(a.stdout, out)
		}
		return printDoorStatus(a.stdout, out)
	})
	outputFlag(cmd, &output)
	return cmd
}

// arrivals counts the admissions of the last arrivalMinutes by minute, from
// the scans recorded since (a range on at alone: no composite index).
func (a *app) arrivals(ctx context.Context, screeningID string) ([]minuteView, error) {
	now := time.Now().UTC().Truncate(time.Minute)
	since := now.Add(-(arrivalMinutes - 1) * time.Minute)
	snaps, err := a.db.Collection(booking.Screenings).Doc(screeningID).Collection(door.Scans).
		Where("at", ">=", since).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	byMinute := map[time.Time]int{}
	for _, s := range snaps {
		var r door.ScanRecord
		if err := s.DataTo(&r); err != nil || r.Result != door.ResultAdmitted {
			continue
		}
		byMinute[r.At.UTC().Truncate(time.Minute)]++
	}
	out := make([]minuteView, 0, arrivalMinutes)
	for m := since; !m.After(now); m = m.Add(time.Minute) {
		out = append(out, minuteView{Minute: m, Admitted: byMinute[m]})
	}
	return out, nil
}

func printDoorStatus(w io.Writer, st doorStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if st.Door == nil {
		fmt.Fprintln(tw, "door\tnone (configure-door sets one)")
	} else {
		reentry := "no reentry"
		if st.Door.Reentry {
			reentry = "reentry"
		}
		fmt.Fprintf(tw, "door\tgates %s; open since %s; %s\n", strings.Join(st.Door.Gates, ", "), st.Door.OpensAt.UTC().Format(time.RFC3339), reentry)
	}
	fmt.Fprintf(tw, "expected\t%d\nin\t%d\nout\t%d\nnot yet\t%d\n", st.Expected, st.In, st.Out, st.NotYet)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Gates) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GATE\tSCANS\tADMITTED\tEXITED\tCONFLICTS")
		for _, g := range st.Gates {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", g.Gate, g.Scans, g.Admitted, g.Exited, g.Conflicts)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(st.Arrivals) > 0 {
		var parts []string
		for _, m := range st.Arrivals {
			parts = append(parts, fmt.Sprintf("%s %d", m.Minute.Format("15:04"), m.Admitted))
		}
		fmt.Fprintf(w, "arrivals per minute (UTC): %s\n", strings.Join(parts, ", "))
	}
	return nil
}

// ticketView is what `tickets show` shows.
type ticketView struct {
	TicketID    string       `json:"ticketId"`
	ScreeningID string       `json:"screeningId"`
	SeatID      string       `json:"seatId"`
	Status      string       `json:"status"`
	Version     int          `json:"version"`
	Code        *codeView    `json:"code,omitempty"`    // when asked by code
	CheckIn     *checkInView `json:"checkIn,omitempty"` // null: never scanned in
	Verdict     string       `json:"verdict"`           // what a gate would make of it now
}

type codeView struct {
	KeyID     string `json:"keyId"`
	Version   int    `json:"version"`
	Signature string `json:"signature"` // "valid"
	Current   bool   `json:"current"`   // the ticket's version: not replaced by a transfer
}

type checkInView struct {
	State   string    `json:"state"`
	Gate    string    `json:"gate"`
	At      time.Time `json:"at"`
	Offline bool      `json:"offline"`
}

func (a *app) ticketsShowCmd() *cobra.Command {
	var output, keysFrom string
	cmd := &cobra.Command{
		Use:   "show ID|CODE",
		Short: "Shows a ticket and its check-in; a code is verified first",
		Long: `Shows a ticket: its screening, seat, status and version, and its check-in (in or out,
where and when). Given a code (FLT1....), it is decoded and its Ed25519 signature
verified against the ticket keys first, as a gate does offline: --keys names the JWK
Set (a file, or the URL of the deployed /TicketKeys); without it, the key of the
local run (FIRELOCK_TICKET_KEY, from ./.firelock-local.env). A code that does not
verify, an old version (the ticket was transferred) or an unknown ticket exits 1.
A ticket id issued before 2026-11-30 may begin with '-', which would read as a flag:
put -- before it (firelock tickets show -- -sNqo8...).`,
		Example: `$ firelock tickets show FLT1.eyJ0Ijoi...
ticket     V1StGXR8_Z5jdHi6B-myT
screening  demo
seat       E9
status     valid
version    1
code       signature valid (key k1), version 1: current
check-in   in at gate A, 2026-11-28T18:52:10Z
verdict    already_in`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(func(args []string) error {
		if strings.HasPrefix(args[0], ticket.Prefix+".") {
			return nil
		}
		if args[0] == "" || strings.Contains(args[0], "/") || len(args[0]) > 64 {
			return usagef("%q is neither a ticket id nor a code (%s....)", args[0], ticket.Prefix)
		}
		return nil
	}, func(ctx context.Context, args []string) error {
		id := args[0]
		var cv *codeView
		if strings.HasPrefix(id, ticket.Prefix+".") {
			keys, err := loadTicketKeys(ctx, keysFrom)
			if err != nil {
				return err
			}
			p, err := keys.Verify(id)
			if err != nil {
				return fmt.Errorf("the code is not valid: %s", strings.TrimPrefix(err.Error(), "ticket: "))
			}
			id, cv = p.TicketID, &codeView{KeyID: p.KeyID, Version: p.Version, Signature: "valid"}
		}
		snap, err := a.db.Collection(ticket.Collection).Doc(id).Get(ctx)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("no ticket %q", id)
		}
		if err != nil {
			return err
		}
		t, err := ticket.DecodeTicket(snap)
		if err != nil {
			return err
		}
		v := ticketView{TicketID: t.ID, ScreeningID: t.ScreeningID, SeatID: t.SeatID, Status: t.Status, Version: t.Version, Code: cv}
		if cv != nil {
			cv.Current = cv.Version == t.Version
		}
		ci, ok, err := door.New(a.db, nil).CheckInOf(ctx, t.ID)
		if err != nil {
			return err
		}
		if ok {
			v.CheckIn = &checkInView{State: ci.State, Gate: ci.Gate, At: ci.At, Offline: ci.Offline}
		}
		v.Verdict = verdictOf(v)
		if output == "json" {
			if err := printJSON(a.stdout, v); err != nil {
				return err
			}
		} else if err := printTicket(a.stdout, v); err != nil {
			return err
		}
		if cv != nil && !cv.Current {
			return fmt.Errorf("the code is of version %d; the ticket is at version %d (transferred): a gate refuses it", cv.Version, t.Version)
		}
		return nil
	})
	cmd.Flags().StringVar(&keysFrom, "keys", "", "the ticket keys' JWK Set: a file, or an https:// URL such as the deployed /TicketKeys (default: FIRELOCK_TICKET_KEY)")
	outputFlag(cmd, &output)
	return cmd
}

// verdictOf is what a gate would answer for the ticket now, as far as the
// ticket and its check-in say (the door's hours and gates aside).
func verdictOf(v ticketView) string {
	switch {
	case v.Status != ticket.StatusValid:
		return v.Status
	case v.Code != nil && !v.Code.Current:
		return "old_version"
	case v.CheckIn != nil && v.CheckIn.State == door.StateIn:
		return "already_in"
	}
	return "admit"
}

func printTicket(w io.Writer, v ticketView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ticket\t%s\nscreening\t%s\nseat\t%s\nstatus\t%s\nversion\t%d\n", v.TicketID, v.ScreeningID, v.SeatID, v.Status, v.Version)
	if c := v.Code; c != nil {
		current := "current"
		if !c.Current {
			current = "replaced (the ticket was transferred)"
		}
		fmt.Fprintf(tw, "code\tsignature %s (key %s), version %d: %s\n", c.Signature, c.KeyID, c.Version, current)
	}
	if c := v.CheckIn; c != nil {
		offline := ""
		if c.Offline {
			offline = " (offline)"
		}
		fmt.Fprintf(tw, "check-in\t%s at gate %s, %s%s\n", c.State, c.Gate, c.At.UTC().Format(time.RFC3339), offline)
	} else {
		fmt.Fprintln(tw, "check-in\tnever scanned in")
	}
	fmt.Fprintf(tw, "verdict\t%s\n", v.Verdict)
	return tw.Flush()
}

// loadTicketKeys reads the JWK Set named by from (a file or an http(s) URL),
// or the local run's key.
func loadTicketKeys(ctx context.Context, from string) (*ticket.Keys, error) {
	var raw []byte
	switch {
	case strings.HasPrefix(from, "https://") || strings.HasPrefix(from, "http://"):
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, from, nil)
		if err != nil {
			return nil, usagef("--keys %q: %v", from, err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("the ticket keys at %s: %w", from, err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the ticket keys at %s: %s", from, res.Status)
		}
		if raw, err = io.ReadAll(io.LimitReader(res.Body, 1<<20)); err != nil {
			return nil, err
		}
	case from != "":
		var err error
		if raw, err = os.ReadFile(from); err != nil {
			return nil, usagef("--keys: %v", err)
		}
	default:
		v := os.Getenv(ticket.KeyEnv)
		if v == "" {
			return nil, usagef("no ticket keys to verify the code with: pass --keys (a JWK Set file, or the URL of /TicketKeys), or run beside `make run`")
		}
		raw = []byte(v)
	}
	keys, err := ticket.ParseKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("the ticket keys: %w", err)
	}
	return keys, nil
}
