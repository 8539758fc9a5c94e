package booking

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// seatTickets is a Tickets of this package's tests: a plain document per
// ticket ({bookingId, seatId, status}), and a check-in refuses the cancel.
// Package ticket's own tests run the real one (signed codes) through the
// same seam.
type seatTickets struct {
	client *firestore.Client
	n      atomic.Int64
}

func (t *seatTickets) Issue(b Booking) ([]IssuedTicket, error) {
	var out []IssuedTicket
	for _, seat := range b.Seats {
		id := fmt.Sprintf("t%08d-%s", t.n.Add(1), seat)
		out = append(out, IssuedTicket{ID: id, Seat: seat, Doc: map[string]any{"bookingId": b.ID, "seatId": seat, "status": "valid"}})
	}
	return out, nil
}

func (t *seatTickets) Ref(id string) *firestore.DocumentRef {
	return t.client.Collection("tickets").Doc(id)
}
func (t *seatTickets) CheckIn(id string) *firestore.DocumentRef {
	return t.client.Collection("checkins").Doc(id)
}

func (t *seatTickets) Cancel(_ string, ticket, checkIn *firestore.DocumentSnapshot) ([]firestore.Update, error) {
	if checkIn.Exists() {
		return nil, ErrTicketUsed
	}
	return []firestore.Update{{Path: "status", Value: "cancelled"}}, nil
}

// What tickets cost (CONTRACT §13): a booking of free seats is still one
// commit, which creates a ticket per seat besides its seats, its document
// and a counter shard (2 seats: 6 writes); its cancel reads each ticket and
// its check-in in the same transaction (2 more reads a seat) and writes
// each ticket.
func TestTicketsCostAWriteASeatInTheSameCommit(t *testing.T) {
	ctx := context.Background()
	stats := &rpcstats.Stats{}
	fs := countedClient(t, stats)
	if _, err := fs.Doc("screenings/s1").Set(ctx, Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 9}); err != nil {
		t.Fatal(err)
	}
	svc := New(fs, WithTickets(&seatTickets{client: fs}))
	t.Cleanup(svc.Close)
	warm(t, svc)
	before := stats.Snapshot()
	b, _, err := svc.Book(ctx, "e1", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	c := stats.Snapshot().Sub(before)
	t.Logf("book two seats with tickets: %v", c)
	if c.RPCs["Commit"] != 1 || c.Calls() != 1 || c.Writes != 6 {
		t.Errorf("a booking of 2 seats with tickets cost %v and %d writes, want one commit of 6 (2 seats, the booking, 2 tickets, a counter shard)", c, c.Writes)
	}
	before = stats.Snapshot()
	if _, err := svc.Cancel(ctx, "u1", b.ID); err != nil {
		t.Fatal(err)
	}
	c = stats.Snapshot().Sub(before)
	t.Logf("cancel it: %v", c)
	if c.Writes != 6 {
		t.Errorf("the cancel wrote %d documents, want 6 (2 seats deleted, the booking, 2 tickets, a counter shard)", c.Writes)
	}
	for _, id := range b.Tickets {
		snap, err := fs.Collection("tickets").Doc(id).Get(ctx)
		if err != nil || snap.Data()["status"] != "cancelled" {
			t.Errorf("ticket %s after the cancel: %v %v", id, snap.Data(), err)
		}
	}
}
