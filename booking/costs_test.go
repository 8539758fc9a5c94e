package booking

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// What each operation costs on the wire, counted by an interceptor on the
// client (issue #23): a booking or hold of free seats is one commit, a
// confirm one read and one commit, a loser one failed commit and one read
// (one read, when this instance knows the seat is taken);
// and a booking writes only its seats, its own document and one counter
// shard, so two bookings of different seats share no document but a shard.
func TestCostsOnFreeSeats(t *testing.T) {
	ctx := context.Background()
	stats := &rpcstats.Stats{}
	var mu sync.Mutex
	var written []string
	stats.OnWrite = func(doc string, _ time.Time) { mu.Lock(); written = append(written, doc); mu.Unlock() }
	fs := countedClient(t, stats)
	if _, err := fs.Doc("screenings/s1").Set(ctx, Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A", "B"}, SeatsPerRow: 9}); err != nil {
		t.Fatal(err)
	}
	svc := New(fs)
	t.Cleanup(svc.Close)
	warm(t, svc)

	cost := func(name string, op func() error) rpcstats.Counts {
		t.Helper()
		mu.Lock()
		written = nil
		mu.Unlock()
		before := stats.Snapshot()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := stats.Snapshot().Sub(before)
		t.Logf("%s: %v", name, c)
		return c
	}
	want := func(name string, c rpcstats.Counts, rpcs map[string]int) {
		t.Helper()
		if len(c.RPCs) != len(rpcs) {
			t.Errorf("%s cost %v, want %v", name, c, rpcs)
			return
		}
		for k, v := range rpcs {
			if c.RPCs[k] != v {
				t.Errorf("%s cost %v, want %v", name, c, rpcs)
			}
		}
	}

	c := cost("book two free seats", func() error {
		_, _, err := svc.Book(ctx, "e1", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
		return err
	})
	want("book", c, map[string]int{"Commit": 1})
	if c.Writes != 4 {
		t.Errorf("a booking of 2 seats wrote %d documents, want 4 (2 seats, the booking, a counter shard)", c.Writes)
	}
	shard := regexp.MustCompile(`/documents/counters/tickets-s1/shards/\d+$`)
	mu.Lock()
	for _, doc := range written {
		switch {
		case regexp.MustCompile(`/documents/screenings/s1/seats/A[12]$`).MatchString(doc),
			regexp.MustCompile(`/documents/bookings/[0-9a-f]{32}$`).MatchString(doc),
			shard.MatchString(doc):
		default:
			t.Errorf("a booking wrote %s: not its seats, its document or a counter shard", doc)
		}
	}
	mu.Unlock()

	var holdID string
	c = cost("hold a free seat", func() error {
		h, _, err := svc.Hold(ctx, "e2", Request{UID: "u2", ScreeningID: "s1", Seats: []string{"B1"}, RequestID: "r2"}, time.Minute)
		holdID = h.ID
		return err
	})
	want("hold", c, map[string]int{"Commit": 1})
	hold := c

	c = cost("confirm the hold", func() error {
		_, created, err := svc.ConfirmHold(ctx, "u2", holdID)
		if err == nil && !created {
			err = errors.New("not created")
		}
		return err
	})
	want("confirm", c, map[string]int{"BatchGetDocuments": 1, "Commit": 1})
	if n := hold.Calls() + c.Calls(); n > 4 {
		t.Errorf("a checkout (hold + confirm) costs %d RPCs, want at most 4", n)
	}

	lose := func(seat string) error {
		_, _, err := svc.Book(ctx, "e3", Request{UID: "u3", ScreeningID: "s1", Seats: []string{seat}, RequestID: "r3" + seat})
		if !errors.Is(err, ErrSeatTaken) {
			return errors.New("not seat_taken: " + errString(err))
		}
		return nil
	}
	// A seat this instance took a moment ago: the loser reads first.
	c = cost("lose a seat this instance took", func() error { return lose("A1") })
	want("known loser", c, map[string]int{"BatchGetDocuments": 1})
	// A seat another instance took: the one commit fails, and one read
	// names the conflict.
	other := New(fs)
	defer other.Close()
	if _, _, err := other.Book(ctx, "o", Request{UID: "u9", ScreeningID: "s1", Seats: []string{"B9"}, RequestID: "r9"}); err != nil {
		t.Fatal(err)
	}
	c = cost("lose a seat another instance took", func() error { return lose("B9") })
	want("loser", c, map[string]int{"Commit": 1, "BatchGetDocuments": 1})

	c = cost("a retry of a booking", func() error {
		_, created, err := svc.Book(ctx, "e4", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
		if err == nil && created {
			err = errors.New("created again")
		}
		return err
	})
	want("retry", c, map[string]int{"BatchGetDocuments": 1})

	// Another user's booking of other seats touches none of the first's
	// documents but, at most, a counter shard.
	mu.Lock()
	written = nil
	mu.Unlock()
	if _, _, err := svc.Book(ctx, "e5", Request{UID: "u5", ScreeningID: "s1", Seats: []string{"A7"}, RequestID: "r5"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, doc := range written {
		if slices.Contains([]string{"A1", "A2"}, doc[len(doc)-2:]) {
			t.Errorf("a booking of A7 wrote %s", doc)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// A hold on the one-commit path ends within a second of the server's time
// of its request plus its length: its end is placed by the bounds the
// Service keeps of Firestore's clock, and createdAt is the server's stamp.
func TestOneCommitHoldEndsOnTheServersClock(t *testing.T) {
	fs, svc := newScreening(t)
	ctx := context.Background()
	warm(t, svc)
	fast := false
	svc.hooks.beforeCommit = func(f bool) { fast = f }
	for i, d := range []time.Duration{5 * time.Second, 420 * time.Second, 900 * time.Second} {
		h, _, err := svc.Hold(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{[]string{"A1", "A2", "A3"}[i]}, RequestID: d.String()}, d)
		if err != nil {
			t.Fatal(err)
		}
		if !fast {
			t.Fatal("the hold did not take the one-commit path")
		}
		snap, err := fs.Collection(Holds).Doc(h.ID).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var stored Hold
		if err := snap.DataTo(&stored); err != nil {
			t.Fatal(err)
		}
		if !stored.HeldUntil.Equal(h.HeldUntil) {
			t.Fatalf("answered heldUntil %v, stored %v", h.HeldUntil, stored.HeldUntil)
		}
		if off := stored.HeldUntil.Sub(stored.CreatedAt) - d; off > time.Second || off < -time.Second {
			t.Errorf("hold of %v: heldUntil − createdAt − length = %v, want within a second", d, off)
		}
	}
}
