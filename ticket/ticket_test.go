package ticket_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/ticket"
)

func TestMain(m *testing.M) {
	firelocktest.SideBySide(6)
	os.Exit(firelocktest.Main(m))
}

// env is a booking Service issuing tickets on a fresh project with one
// screening s1 (rows A and B of 10), its client counting RPCs.
type env struct {
	t        *testing.T
	fs       *firestore.Client
	stats    *rpcstats.Stats
	keys     *ticket.Keys
	tickets  *ticket.Service
	bookings *booking.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	stats := &rpcstats.Stats{}
	fs, err := rpcstats.NewClient(context.Background(), firelocktest.ProjectID(t), stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	if _, err := fs.Doc("screenings/s1").Set(context.Background(), booking.Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A", "B"}, SeatsPerRow: 10}); err != nil {
		t.Fatal(err)
	}
	keys, err := ticket.GenerateKeys("t1")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, fs: fs, stats: stats, keys: keys, tickets: ticket.New(fs, keys)}
	e.bookings = e.newService()
	return e
}

// newService is another instance on the same project.
func (e *env) newService() *booking.Service {
	svc := booking.New(e.fs, booking.WithTickets(e.tickets))
	e.t.Cleanup(svc.Close)
	return svc
}

// checkTickets checks that booking id lists one valid ticket per seat, each
// for uid, version 1, with a code of its own that verifies, created in the
// booking's own commit (the same create time).
func (e *env) checkTickets(bookingID, uid string) []ticket.Ticket {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.fs.Collection(booking.Bookings).Doc(bookingID).Get(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var b booking.Booking
	if err := snap.DataTo(&b); err != nil {
		e.t.Fatal(err)
	}
	if len(b.Tickets) != len(b.Seats) {
		e.t.Fatalf("booking %s lists tickets %v for seats %v", bookingID, b.Tickets, b.Seats)
	}
	var out []ticket.Ticket
	for _, seat := range b.Seats {
		id := b.Tickets[seat]
		ts, err := e.fs.Collection(ticket.Collection).Doc(id).Get(ctx)
		if err != nil {
			e.t.Fatalf("ticket %s of seat %s: %v", id, seat, err)
		}
		tk, err := ticket.DecodeTicket(ts)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(id) < 20 || tk.UID != uid || tk.ScreeningID != b.ScreeningID || tk.SeatID != seat || tk.BookingID != bookingID ||
			tk.Status != ticket.StatusValid || tk.Version != 1 {
			e.t.Errorf("ticket %s: %+v, want valid version 1 of %s seat %s booking %s", id, tk, uid, seat, bookingID)
		}
		p, err := e.keys.Verify(tk.Code)
		if err != nil || p != (ticket.Payload{TicketID: id, ScreeningID: b.ScreeningID, Seat: seat, Version: 1, KeyID: "t1"}) {
			e.t.Errorf("ticket %s's code says %+v (%v)", id, p, err)
		}
		// issuedAt is the server's time of the request: the emulator stamps
		// it a few milliseconds before the commit's.
		if !ts.CreateTime.Equal(snap.CreateTime) || tk.IssuedAt.After(ts.CreateTime) || ts.CreateTime.Sub(tk.IssuedAt) > time.Second {
			e.t.Errorf("ticket %s was created at %v (issuedAt %v), its booking at %v: not in one commit", id, ts.CreateTime, tk.IssuedAt, snap.CreateTime)
		}
		out = append(out, tk)
	}
	return out
}

// rpcs runs op and returns the RPCs it made.
func (e *env) rpcs(op func()) map[string]int {
	before := e.stats.Snapshot()
	op()
	return e.stats.Snapshot().Sub(before).RPCs
}

// Every commit that confirms a booking creates its tickets, one per seat:
// BookSeats on its read path and on its one-commit path, ConfirmHold on its
// one-commit path and in its transaction, and a payment (ConfirmPayment),
// on time and late.
func TestEveryConfirmationIssuesItsTicketsInItsCommit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// A fresh instance reads first.
	var b booking.Booking
	got := e.rpcs(func() {
		var err error
		b, _, err = e.bookings.Book(ctx, "x1", booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
		if err != nil {
			t.Fatal(err)
		}
	})
	if got["BatchGetDocuments"] == 0 {
		t.Fatalf("the first booking took %v: not the read path", got)
	}
	if len(b.Tickets) != 2 {
		t.Fatalf("Book answered tickets %v", b.Tickets)
	}
	e.checkTickets(b.ID, "alice")

	// Once the instance keeps the screening, a booking is one commit.
	fast := false
	for i := range 100 {
		got = e.rpcs(func() {
			var err error
			b, _, err = e.bookings.Book(ctx, "x2", booking.Request{UID: "bob", ScreeningID: "s1", Seats: []string{fmt.Sprintf("B%d", i%10+1)}, RequestID: fmt.Sprint("f", i)})
			if err != nil {
				t.Fatal(err)
			}
		})
		if got["Commit"] == 1 && got["BatchGetDocuments"] == 0 {
			fast = true
			break
		}
		if _, err := e.bookings.Cancel(ctx, "bob", b.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !fast {
		t.Fatal("no booking took the one-commit path")
	}
	e.checkTickets(b.ID, "bob")

	// ConfirmHold: one commit on a warm instance, a transaction on a cold one.
	for _, c := range []struct {
		name string
		svc  *booking.Service
		seat string
		tx   bool
	}{{"warm", e.bookings, "A5", false}, {"cold", e.newService(), "A6", true}} {
		h, _, err := c.svc.Hold(ctx, "x3", booking.Request{UID: "carol", ScreeningID: "s1", Seats: []string{c.seat}, RequestID: "h" + c.name}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cold := c.svc
		if c.tx {
			cold = e.newService()
		}
		got = e.rpcs(func() {
			if b, _, err = cold.ConfirmHold(ctx, "carol", h.ID); err != nil {
				t.Fatal(err)
			}
		})
		if (got["BeginTransaction"] > 0) != c.tx {
			t.Errorf("%s confirm took %v", c.name, got)
		}
		e.checkTickets(b.ID, "carol")
	}
}

// A paid hold's confirmation (ConfirmPayment, as the Stripe webhook does
// it) creates the tickets in its commit, on time and late.
func TestAPaymentIssuesItsTicketsInItsCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		seat   string
		action booking.PaidAction
	}{{"A7", booking.PaidConfirm}, {"A8", booking.PaidLate}} {
		h, _, err := e.bookings.Hold(ctx, "x", booking.Request{UID: "dave", ScreeningID: "s1", Seats: []string{c.seat}, RequestID: "p" + c.seat}, booking.MinHold)
		if err != nil {
			t.Fatal(err)
		}
		pay := booking.HoldPayment{SessionID: "cs_" + c.seat, Amount: 100, Currency: "eur"}
		if _, _, err := e.bookings.StartPaying(ctx, "dave", h.ID, time.Second, pay, func(*firestore.Transaction, booking.Hold, time.Time) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if c.action == booking.PaidLate {
			time.Sleep(time.Until(h.HeldUntil) + 500*time.Millisecond)
		}
		b, action, err := e.bookings.ConfirmPayment(ctx, h.ID, "x", booking.BookingPayment{SessionID: pay.SessionID, PaymentIntentID: "pi", Amount: 100, Currency: "eur"}, nil,
			func(p booking.PaidHold) (booking.PaidAction, error) {
				if c.action == booking.PaidLate && (p.Live || !p.SeatsFree) {
					return "", fmt.Errorf("the hold is live %v, seats free %v: not a late payment", p.Live, p.SeatsFree)
				}
				return c.action, nil
			},
			func(*firestore.Transaction, booking.PaidHold, booking.PaidAction, *booking.Booking) error { return nil })
		if err != nil || action != c.action {
			t.Fatalf("%s: %v %v", c.action, action, err)
		}
		e.checkTickets(b.ID, "dave")
	}
}

// Cancelling a booking cancels its tickets in the same commit; a booking
// with a ticket that has been checked in is not cancelled (ticket_used),
// and nothing changes.
func TestCancelCancelsTheTicketsUnlessOneWasUsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	b, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "erin", ScreeningID: "s1", Seats: []string{"B1", "B2"}, RequestID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	used, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "erin", ScreeningID: "s1", Seats: []string{"B3", "B4"}, RequestID: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	// B4's ticket is in (as the door writes a first entry).
	if _, err := e.fs.Collection(ticket.CheckIns).Doc(used.Tickets["B4"]).Create(ctx, map[string]any{"screeningId": "s1", "version": 1, "state": "in", "seq": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.bookings.Cancel(ctx, "erin", used.ID); !errors.Is(err, booking.ErrTicketUsed) || booking.Code(err) != "ticket_used" {
		t.Fatalf("cancel of a booking with a ticket in: %v, want ErrTicketUsed", err)
	}
	after := e.checkTickets(used.ID, "erin")
	if after[0].Status != ticket.StatusValid || after[1].Status != ticket.StatusValid {
		t.Fatalf("a refused cancel changed the tickets: %+v", after)
	}
	if _, err := e.bookings.Cancel(ctx, "erin", b.ID); err != nil {
		t.Fatal(err)
	}
	bs, err := e.fs.Collection(booking.Bookings).Doc(b.ID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range b.Tickets {
		ts, err := e.fs.Collection(ticket.Collection).Doc(id).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ts.Data()["status"] != ticket.StatusCancelled || !ts.UpdateTime.Equal(bs.UpdateTime) {
			t.Errorf("ticket %s: %v at %v, booking cancelled at %v: want cancelled in that commit", id, ts.Data()["status"], ts.UpdateTime, bs.UpdateTime)
		}
	}
	// A retry of the cancel is harmless.
	if _, err := e.bookings.Cancel(ctx, "erin", b.ID); err != nil {
		t.Fatal(err)
	}
}

// users is an address book for transfers: the functions use Firebase
// Auth's (functions tests); here, a map.
type users map[string]string

func (u users) UIDByEmail(_ context.Context, email string) (string, error) {
	if uid, ok := u[email]; ok {
		return uid, nil
	}
	return "", fmt.Errorf("%w: %s", ticket.ErrUserNotFound, email)
}

// A transfer gives the ticket to the other account with version 2, a new
// code and a new issuedAt, in one commit; another user's ticket is refused
// before the email is looked up; a ticket that has been scanned, is
// cancelled or whose screening started stays where it is.
func TestTransfer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	book := func(seat string) string {
		b, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "frank", ScreeningID: "s1", Seats: []string{seat}, RequestID: "t" + seat})
		if err != nil {
			t.Fatal(err)
		}
		return b.Tickets[seat]
	}
	book1 := book("A1")
	before, _ := e.tickets.Get(ctx, book1)
	looked := 0
	counting := usersFunc(func(ctx context.Context, email string) (string, error) {
		looked++
		return users{"gina@example.com": "gina", "frank@example.com": "frank"}.UIDByEmail(ctx, email)
	})
	if _, err := e.tickets.Transfer(ctx, "mallory", book1, "gina@example.com", counting); !errors.Is(err, booking.ErrForbidden) || looked != 0 {
		t.Fatalf("another's ticket: %v after %d lookups, want ErrForbidden before any", err, looked)
	}
	for _, c := range []struct {
		to   string
		want error
	}{{"nobody@example.com", ticket.ErrUserNotFound}, {"frank@example.com", booking.ErrInvalidArgument}, {"not an email", booking.ErrInvalidArgument}} {
		if _, err := e.tickets.Transfer(ctx, "frank", book1, c.to, counting); !errors.Is(err, c.want) {
			t.Errorf("transfer to %q: %v, want %v", c.to, err, c.want)
		}
	}
	if _, err := e.tickets.Transfer(ctx, "frank", "nosuchticket0000000000", "gina@example.com", counting); !errors.Is(err, ticket.ErrTicketNotFound) {
		t.Errorf("no such ticket: %v", err)
	}
	got, err := e.tickets.Transfer(ctx, "frank", book1, "gina@example.com", counting)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := e.tickets.Get(ctx, book1)
	if got.Version != 2 || after.UID != "gina" || after.Version != 2 || after.Code == before.Code || !after.IssuedAt.After(before.IssuedAt) {
		t.Fatalf("after the transfer: %+v (answered %+v), before %+v", after, got, before)
	}
	if p, err := e.keys.Verify(after.Code); err != nil || p.Version != 2 || p.TicketID != book1 || p.Seat != "A1" {
		t.Fatalf("the new code says %+v, %v", p, err)
	}
	if _, err := e.tickets.Transfer(ctx, "frank", book1, "gina@example.com", counting); !errors.Is(err, booking.ErrForbidden) {
		t.Fatalf("the old owner transfers again: %v", err)
	}

	scanned := book("A2")
	if _, err := e.fs.Collection(ticket.CheckIns).Doc(scanned).Create(ctx, map[string]any{"state": "in"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tickets.Transfer(ctx, "frank", scanned, "gina@example.com", counting); !errors.Is(err, booking.ErrTicketUsed) {
		t.Errorf("a scanned ticket: %v, want ErrTicketUsed", err)
	}
	cancelled := book("A3")
	if _, err := e.fs.Collection(ticket.Collection).Doc(cancelled).Update(ctx, []firestore.Update{{Path: "status", Value: "cancelled"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tickets.Transfer(ctx, "frank", cancelled, "gina@example.com", counting); !errors.Is(err, ticket.ErrCancelled) {
		t.Errorf("a cancelled ticket: %v, want ErrCancelled", err)
	}
	started := book("A4")
	if _, err := e.fs.Doc("screenings/s1").Update(ctx, []firestore.Update{{Path: "startsAt", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tickets.Transfer(ctx, "frank", started, "gina@example.com", counting); !errors.Is(err, booking.ErrScreeningStarted) {
		t.Errorf("a started screening: %v, want ErrScreeningStarted", err)
	}
	for _, id := range []string{scanned, cancelled, started} {
		tk, _ := e.tickets.Get(ctx, id)
		if tk.UID != "frank" || tk.Version != 1 {
			t.Errorf("a refused transfer changed ticket %s: %+v", id, tk)
		}
	}
}

type usersFunc func(ctx context.Context, email string) (string, error)

func (f usersFunc) UIDByEmail(ctx context.Context, email string) (string, error) {
	return f(ctx, email)
}

// A hostile giver: alice transfers her ticket to bob (who may have paid
// her for it), then cancels or refunds her booking. A ticket transferred
// away is no longer hers to cancel: the cancel answers ticket_used, naming
// the seat, and writes nothing (no refund either: a paid booking's refund
// is made only once the cancel commits); bob's ticket stays his and valid.
func TestACancelAfterATransferLeavesTheNewHoldersTicket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	b, _, err := e.bookings.Book(ctx, "x", booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{"A8", "A9"}, RequestID: "gift"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.tickets.Transfer(ctx, "alice", b.Tickets["A9"], "bob@example.com", users{"bob@example.com": "bob"}); err != nil {
		t.Fatal(err)
	}
	before, err := e.fs.Collection(booking.Bookings).Doc(b.ID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, cerr := e.bookings.Cancel(ctx, "alice", b.ID)
	if !errors.Is(cerr, booking.ErrTicketUsed) || booking.Code(cerr) != "ticket_used" || !strings.Contains(cerr.Error(), "A9") || !strings.Contains(cerr.Error(), "transferred") {
		t.Fatalf("alice's cancel after giving A9 to bob: %v, want ticket_used naming A9, transferred", cerr)
	}
	after, err := e.fs.Collection(booking.Bookings).Doc(b.ID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdateTime.Equal(before.UpdateTime) {
		t.Fatal("the refused cancel wrote the booking")
	}
	for seat, uid := range map[string]string{"A8": "alice", "A9": "bob"} {
		tk, err := e.tickets.Get(ctx, b.Tickets[seat])
		if err != nil {
			t.Fatal(err)
		}
		if tk.UID != uid || tk.Status != ticket.StatusValid {
			t.Errorf("%s after the refused cancel: %s, of %s; want %s's, valid", seat, tk.Status, tk.UID, uid)
		}
	}
}
