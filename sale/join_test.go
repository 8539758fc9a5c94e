package sale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

func TestJoinRefusesWhatCannotBeJoined(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 5, nil)
	set := func(id string, doc map[string]any) {
		if _, err := e.fs.Collection(booking.Screenings).Doc(id).Set(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	opens := time.Now().Add(time.Hour)
	set("started", map[string]any{"startsAt": time.Now().Add(-time.Minute), "rows": []string{"A"}, "seatsPerRow": 2, "sale": saleOpening(opens, 10, 10, 60)})
	set("noStart", map[string]any{"rows": []string{"A"}, "seatsPerRow": 2, "sale": saleOpening(opens, 10, 10, 60)})
	set("shortPass", map[string]any{"startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2,
		"sale": map[string]any{"opensAt": opens, "admitPerMinute": 10, "maxActive": 10, "passSeconds": 0}})
	set("manySeats", map[string]any{"startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2,
		"sale": map[string]any{"opensAt": opens, "admitPerMinute": 10, "maxActive": 10, "maxSeatsPerUser": 11}})
	set("textOpens", map[string]any{"startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2,
		"sale": map[string]any{"opensAt": "tomorrow", "admitPerMinute": 10, "maxActive": 10}})
	set("typo", map[string]any{"startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2,
		"sale": map[string]any{"opensAt": opens, "admitPerMinute": 10, "maxActive": 10, "maxSeats": 2}})
	set("opensLate", map[string]any{"startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2,
		"sale": saleOpening(time.Now().Add(2*time.Hour), 10, 10, 60)})
	for _, c := range []struct {
		screening, uid string
		want           error
		says           string
	}{
		{"nope", "u1", booking.ErrScreeningNotFound, ""},
		{"s1", "u1", ErrNoSale, ""},
		{"started", "u1", booking.ErrScreeningStarted, ""},
		{"noStart", "u1", ErrMisconfigured, "needs a startsAt"},
		{"shortPass", "u1", ErrMisconfigured, "passSeconds must be a whole number from 1 to 3600"},
		{"manySeats", "u1", ErrMisconfigured, "maxSeatsPerUser must be a whole number from 1 to 10"},
		{"textOpens", "u1", ErrMisconfigured, "opensAt must be a timestamp"},
		{"typo", "u1", ErrMisconfigured, `unknown field "maxSeats"`},
		{"opensLate", "u1", ErrMisconfigured, "opensAt must be before the screening's startsAt"},
		{"bad/id", "u1", booking.ErrInvalidArgument, ""},
		{"s1", "", booking.ErrInvalidArgument, ""},
	} {
		_, _, err := e.svc.Join(ctx, c.uid, c.screening)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("join %q: %v, want %v saying %q", c.screening, err, c.want, c.says)
		}
	}
	if n, _ := countOf(ctx, e.fs.Collection(Queue).Query, nil); n != 0 {
		t.Fatalf("refused joins wrote %d places", n)
	}
	if !strings.Contains(e.log.String(), `"level":"ERROR"`) {
		t.Fatal("a join to a misconfigured sale logged no ERROR")
	}
}

// Two joins of one user at the same moment make one place; every answer
// names it, and exactly one says it made it.
func TestJoinTwiceConcurrentlyMakesOnePlace(t *testing.T) {
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(time.Hour), 10, 10, 60))
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	places := make([]Place, n)
	created := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { places[i], created[i], errs[i] = e.svc.Join(ctx, "alice", e.id) })
	}
	wg.Wait()
	made := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if places[i].ID != QueueID(e.id, "alice") || places[i].Status != StatusWaiting {
			t.Fatalf("join %d answered %+v", i, places[i])
		}
		if created[i] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d joins say they made the place, want 1", made)
	}
	for _, coll := range []string{Queue, Draws} {
		if c, _ := countOf(ctx, e.fs.Collection(coll).Query, nil); c != 1 {
			t.Fatalf("%d documents in %s, want 1", c, coll)
		}
	}
}

// Joining again never moves anyone back: a later join gets the same place
// with the same order.
func TestJoinAgainKeepsThePlace(t *testing.T) {
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(-time.Minute), 10, 10, 60))
	first := e.join("alice")
	if first.Order == "" || first.Shard != shardOf(first.ID) {
		t.Fatalf("a later joiner: %+v", first)
	}
	again, created, err := e.svc.Join(context.Background(), "alice", e.id)
	if err != nil || created || again.Order != first.Order || !again.JoinedAt.Equal(first.JoinedAt) {
		t.Fatalf("joined again: %+v created=%v err=%v; first %+v", again, created, err, first)
	}
}

// No seat free and no hold live: the sale is sold out, joins are refused;
// a freed seat opens it again.
func TestSoldOutRefusesJoinsUntilASeatFrees(t *testing.T) {
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(-time.Minute), 10, 10, 60))
	ctx := context.Background()
	seats := e.fs.Collection(booking.Screenings).Doc(e.id).Collection("seats")
	for _, s := range []string{"A1", "A2"} {
		if _, err := seats.Doc(s).Set(ctx, map[string]any{"status": booking.StatusBooked, "bookingId": "b-" + s}); err != nil {
			t.Fatal(err)
		}
	}
	pass := func() {
		t.Helper()
		if err := e.admitter().Run(ctx, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if p := e.public(); p.State != StateSoldOut || p.SeatsLeft != 0 {
		t.Fatalf("all seats booked: %+v", p)
	}
	if _, _, err := e.svc.Join(ctx, "late", e.id); !errors.Is(err, ErrSoldOut) {
		t.Fatalf("join to a sold-out sale: %v", err)
	}
	// A live hold is no sold-out: it may lapse.
	if _, err := seats.Doc("A2").Set(ctx, map[string]any{"status": booking.StatusHeld, "holdId": "h1", "heldUntil": time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the public document changes at most once a second
	pass()
	if p := e.public(); p.State != StateOpen || p.SeatsLeft != 0 {
		t.Fatalf("one seat held: %+v", p)
	}
	if _, _, err := e.svc.Join(ctx, "late", e.id); err != nil {
		t.Fatalf("join while a hold lives: %v", err)
	}
}
