package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/payment"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The payments of priced screenings (CONTRACT §10): find a buyer's.
func (a *app) paymentsCmd() *cobra.Command {
	c := group("payments", "Lists and shows payments (CONTRACT §10)", a.paymentsListCmd(), a.paymentsShowCmd())
	c.Long = "Finds a buyer's payment: payments/{holdId}, one per hold that went to Stripe\n" +
		"Checkout, with its session, amount, state, booking and refund."
	return c
}

// paymentRow is a payment as the command line shows it.
type paymentRow struct {
	HoldID          string     `json:"holdId"`
	UID             string     `json:"uid"`
	ScreeningID     string     `json:"screeningId"`
	Seats           []string   `json:"seats"`
	Status          string     `json:"status"`
	Amount          int64      `json:"amount"`
	Currency        string     `json:"currency"`
	SessionID       string     `json:"sessionId"`
	PaymentIntentID string     `json:"paymentIntentId,omitempty"`
	BookingID       string     `json:"bookingId,omitempty"`
	RefundID        string     `json:"refundId,omitempty"`
	RefundReason    string     `json:"refundReason,omitempty"`
	LateAccepted    bool       `json:"lateAccepted,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
	PaidAt          *time.Time `json:"paidAt,omitempty"`
	RefundedAt      *time.Time `json:"refundedAt,omitempty"`
}

func paymentOf(snap *firestore.DocumentSnapshot) (paymentRow, error) {
	var r payment.Record
	if err := snap.DataTo(&r); err != nil {
		return paymentRow{}, fmt.Errorf("payment %s: %w", snap.Ref.ID, err)
	}
	return paymentRow{HoldID: snap.Ref.ID, UID: r.UID, ScreeningID: r.ScreeningID, Seats: r.Seats, Status: r.Status, Amount: r.Amount,
		Currency: r.Currency, SessionID: r.SessionID, PaymentIntentID: r.PaymentIntentID, BookingID: r.BookingID, RefundID: r.RefundID,
		RefundReason: r.RefundReason, LateAccepted: r.LateAccepted, CreatedAt: r.CreatedAt, PaidAt: r.PaidAt, RefundedAt: r.RefundedAt}, nil
}

func (a *app) paymentsListCmd() *cobra.Command {
	var uid, state, output string
	cmd := &cobra.Command{
		Use:   "list SCREENING",
		Short: "Lists a screening's payments",
		Long: `Lists the payments of a screening, oldest first: each hold that went to checkout,
its buyer (uid), seats, amount, state (open, paid, expired, refunded) and booking or
refund. --uid narrows it to one buyer, --state to one state. The last line adds them
up: paid, refunded, and what stays.`,
		Example: `$ firelock payments list demo
HOLD                              UID                           SEATS   AMOUNT     STATE     BOOKING / REFUND
5f0c8a...                         3kzJ62shbqrF2a3ibraybx2l4Fgu  A1 A2   30.00 EUR  paid      b6d1...
total: 1 paid (30.00 EUR), 0 refunded (0.00 EUR): 30.00 EUR`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(func([]string) error {
		if state != "" && !slices.Contains([]string{payment.StatusOpen, payment.StatusPaid, payment.StatusExpired, payment.StatusRefunded}, state) {
			return usagef("--state %q: want open, paid, expired or refunded", state)
		}
		return nil
	}, func(ctx context.Context, args []string) error {
		q := a.db.Collection(payment.Payments).Where("screeningId", "==", args[0])
		if uid != "" {
			q = q.Where("uid", "==", uid)
		}
		snaps, err := q.Documents(ctx).GetAll()
		if err != nil {
			return err
		}
		rows := []paymentRow{}
		for _, s := range snaps {
			p, err := paymentOf(s)
			if err != nil {
				return err
			}
			if state == "" || p.Status == state {
				rows = append(rows, p)
			}
		}
		slices.SortFunc(rows, func(x, y paymentRow) int { return x.CreatedAt.Compare(y.CreatedAt) })
		if output == "json" {
			return printJSON(a.stdout, rows)
		}
		if len(rows) == 0 {
			fmt.Fprintf(a.stdout, "no payments for %s\n", args[0])
			return nil
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "HOLD\tUID\tSEATS\tAMOUNT\tSTATE\tBOOKING / REFUND")
		var paid, refunded, nPaid, nRefunded int64
		cur := ""
		for _, p := range rows {
			then := p.BookingID
			if p.Status == payment.StatusRefunded {
				then = p.RefundReason
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.HoldID, p.UID, strings.Join(p.Seats, " "), payment.Format(p.Amount, p.Currency), p.Status, then)
			cur = p.Currency
			if p.Status == payment.StatusPaid || p.Status == payment.StatusRefunded {
				paid += p.Amount
				nPaid++
			}
			if p.Status == payment.StatusRefunded {
				refunded += p.Amount
				nRefunded++
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "total: %d paid (%s), %d refunded (%s): %s\n", nPaid, payment.Format(paid, cur), nRefunded,
			payment.Format(refunded, cur), payment.Format(paid-refunded, cur))
		return err
	})
	cmd.Flags().StringVar(&uid, "uid", "", "one buyer's payments (a Firebase Auth uid)")
	cmd.Flags().StringVar(&state, "state", "", "payments in this state only: open, paid, expired or refunded")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) paymentsShowCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show HOLD",
		Short: "Shows one payment",
		Long: `Shows the payment of one hold (payments/HOLD): its buyer, screening, seats, Stripe
Checkout Session and PaymentIntent, amount, state, and the booking it made or the
refund it got and why (seats_lost, released, revoked, sale_closed,
seat_limit, cancelled).`,
		Example: `$ firelock payments show 5f0c8a...
hold             5f0c8a...
state            paid
amount           30.00 EUR
...`,
		Args: positional(1, 1),
	}
	cmd.RunE = a.action(nil, func(ctx context.Context, args []string) error {
		snap, err := a.db.Collection(payment.Payments).Doc(args[0]).Get(ctx)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("no payment for hold %q (firelock payments list SCREENING lists them)", args[0])
		}
		if err != nil {
			return err
		}
		p, err := paymentOf(snap)
		if err != nil {
			return err
		}
		if output == "json" {
			return printJSON(a.stdout, p)
		}
		ts := func(t *time.Time) string {
			if t == nil {
				return "–"
			}
			return t.UTC().Format(time.RFC3339)
		}
		w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		for _, l := range [][2]string{
			{"hold", p.HoldID}, {"screening", p.ScreeningID}, {"buyer (uid)", p.UID}, {"seats", strings.Join(p.Seats, " ")},
			{"state", p.Status}, {"amount", payment.Format(p.Amount, p.Currency)},
			{"checkout session", p.SessionID}, {"payment intent", or(p.PaymentIntentID)}, {"booking", or(p.BookingID)},
			{"late, and booked", fmt.Sprint(p.LateAccepted)}, {"refund", or(p.RefundID)}, {"refund reason", or(p.RefundReason)},
			{"created", p.CreatedAt.UTC().Format(time.RFC3339)}, {"paid", ts(p.PaidAt)}, {"refunded", ts(p.RefundedAt)},
		} {
			fmt.Fprintf(w, "%s\t%s\n", l[0], l[1])
		}
		return w.Flush()
	})
	outputFlag(cmd, &output)
	return cmd
}

func or(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
