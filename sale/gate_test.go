package sale

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// gateEnv is a sale open since a minute ago, with passes written as the
// admitter writes them.
type gateEnv struct {
	*env
	ctx context.Context
}

func newGateEnv(t *testing.T) gateEnv {
	e := newEnv(t, 2, 10, saleOpening(time.Now().Add(-time.Minute), 10, 10, 600))
	return gateEnv{e, context.Background()}
}

// pass writes uid's place for screening with the given status and pass end.
func (g gateEnv) pass(screening, uid, status string, until time.Time, extra map[string]any) {
	g.t.Helper()
	d := map[string]any{"uid": uid, "screeningId": screening, "status": status, "joinedAt": time.Now(), "shard": 0}
	if !until.IsZero() {
		d["admittedAt"], d["passUntil"] = until.Add(-time.Minute), until
	}
	for k, v := range extra {
		d[k] = v
	}
	if _, err := g.fs.Collection(Queue).Doc(QueueID(screening, uid)).Set(g.ctx, d); err != nil {
		g.t.Fatal(err)
	}
}

// decide runs the gate on a claim as booking does: screening and pass read
// together, the updates committed on the pass's update time.
func (g gateEnv) decide(passOf string, c booking.Claim) error {
	g.t.Helper()
	snaps, err := g.fs.GetAll(g.ctx, []*firestore.DocumentRef{
		g.fs.Collection(booking.Screenings).Doc(c.ScreeningID), g.svc.Pass(passOf, c.UID),
	})
	if err != nil {
		g.t.Fatal(err)
	}
	if !g.svc.Gated(snaps[0]) {
		g.t.Fatal("a screening with a sale is not gated")
	}
	ups, err := g.svc.Admit(snaps[0], snaps[1], c, snaps[1].ReadTime)
	if err != nil {
		return err
	}
	if _, err := snaps[1].Ref.Update(g.ctx, ups, firestore.LastUpdateTime(snaps[1].UpdateTime)); err != nil {
		g.t.Fatal(err)
	}
	return nil
}

func (g gateEnv) settle(uid string, c booking.Change) {
	g.t.Helper()
	snap, err := g.svc.Pass(g.id, uid).Get(g.ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	ups, err := g.svc.Settle(snap, c, snap.ReadTime)
	if err != nil {
		g.t.Fatal(err)
	}
	if len(ups) > 0 {
		if _, err := snap.Ref.Update(g.ctx, ups, firestore.LastUpdateTime(snap.UpdateTime)); err != nil {
			g.t.Fatal(err)
		}
	}
}

func (g gateEnv) status(uid string) string {
	snap, err := g.svc.Pass(g.id, uid).Get(g.ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	s, _ := snap.Data()["status"].(string)
	return s
}

func hold(uid, id string, seats int, until time.Time) booking.Claim {
	return booking.Claim{Kind: booking.ClaimHold, ID: id, UID: uid, ScreeningID: "s1", Seats: make([]string, seats), Until: until}
}

func book(uid, id string, seats int) booking.Claim {
	return booking.Claim{Kind: booking.ClaimBooking, ID: id, UID: uid, ScreeningID: "s1", Seats: make([]string, seats)}
}

func TestGateAdmitsOnlyALivePassOfThisScreening(t *testing.T) {
	g := newGateEnv(t)
	soon := time.Now().Add(time.Hour)
	g.pass("s1", "live", StatusAdmitted, soon, nil)
	g.pass("s1", "waiting", StatusWaiting, time.Time{}, nil)
	g.pass("s1", "ended", StatusAdmitted, time.Now().Add(-time.Second), nil)
	g.pass("s1", "ending", StatusAdmitted, time.Now().Add(50*time.Millisecond), nil) // within the margin
	g.pass("s1", "done", StatusDone, soon, nil)
	g.pass("s1", "expired", StatusExpired, time.Now().Add(-time.Second), nil)
	g.pass("s2", "other", StatusAdmitted, soon, nil)
	// A place stored under this screening's id but for another screening.
	if _, err := g.fs.Collection(Queue).Doc(QueueID("s1", "forged")).Set(g.ctx, map[string]any{
		"uid": "forged", "screeningId": "s2", "status": StatusAdmitted, "passUntil": soon, "joinedAt": time.Now(), "shard": 0,
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		uid, passOf string
		want        error
	}{
		{"live", "s1", nil},
		{"nobody", "s1", booking.ErrNotAdmitted},
		{"waiting", "s1", booking.ErrNotAdmitted},
		{"ended", "s1", booking.ErrNotAdmitted},
		{"ending", "s1", booking.ErrNotAdmitted},
		{"done", "s1", booking.ErrNotAdmitted},
		{"expired", "s1", booking.ErrNotAdmitted},
		{"other", "s2", booking.ErrNotAdmitted}, // another screening's pass
		{"forged", "s1", booking.ErrNotAdmitted},
	} {
		if err := g.decide(c.passOf, hold(c.uid, "h-"+c.uid, 1, soon)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.uid, err, c.want)
		}
	}
}

func TestGateRefusesBeforeTheSaleOpensAndWhenMisconfigured(t *testing.T) {
	g := newGateEnv(t)
	g.pass("s1", "alice", StatusAdmitted, time.Now().Add(time.Hour), nil)
	g.setSale(map[string]any{"opensAt": time.Now().Add(time.Hour)})
	if err := g.decide("s1", book("alice", "b1", 1)); !errors.Is(err, booking.ErrSaleNotOpen) {
		t.Fatalf("before opensAt: %v", err)
	}
	g.setSale(map[string]any{"opensAt": time.Now().Add(-time.Minute), "maxActive": -1})
	if err := g.decide("s1", book("alice", "b1", 1)); !errors.Is(err, booking.ErrSaleNotOpen) {
		t.Fatalf("misconfigured: %v", err)
	}
}

// The cap counts live holds and bookings; ended and released holds and
// cancelled bookings do not count.
func TestGateCapCountsLiveHoldsAndBookings(t *testing.T) {
	g := newGateEnv(t) // maxSeatsPerUser: the default 6
	soon := time.Now().Add(time.Hour)
	g.pass("s1", "alice", StatusAdmitted, soon, nil)
	if err := g.decide("s1", hold("alice", "h1", 3, soon)); err != nil {
		t.Fatal(err)
	}
	if err := g.decide("s1", book("alice", "b1", 2)); err != nil {
		t.Fatal(err)
	}
	if err := g.decide("s1", hold("alice", "h2", 2, soon)); !errors.Is(err, booking.ErrSeatLimit) {
		t.Fatalf("3 held + 2 booked + 2: %v, want ErrSeatLimit", err)
	}
	g.settle("alice", booking.Change{Kind: booking.HoldReleased, HoldID: "h1", Seats: 3})
	if err := g.decide("s1", hold("alice", "h2", 4, soon)); err != nil {
		t.Fatalf("after releasing 3: %v", err)
	}
	g.settle("alice", booking.Change{Kind: booking.BookingCancelled, BookingID: "b1", Seats: 2})
	g.settle("alice", booking.Change{Kind: booking.BookingCancelled, BookingID: "b1", Seats: 2}) // twice is harmless
	if err := g.decide("s1", hold("alice", "h3", 2, time.Now().Add(time.Second))); err != nil {
		t.Fatalf("after cancelling 2: %v", err)
	}
	if err := g.decide("s1", book("alice", "b2", 1)); !errors.Is(err, booking.ErrSeatLimit) {
		t.Fatalf("4 + 2 held + 1: %v, want ErrSeatLimit", err)
	}
	time.Sleep(1100 * time.Millisecond) // h3 ends: its seats count no more
	if err := g.decide("s1", book("alice", "b2", 2)); err != nil {
		t.Fatalf("after a hold ended: %v", err)
	}
	snap, _ := g.svc.Pass("s1", "alice").Get(g.ctx)
	if holds := snap.Data()[fieldHolds].(map[string]any); len(holds) != 1 || holds["h2"] == nil {
		t.Fatalf("the ended hold was not pruned: %v", holds)
	}
	if g.status("alice") != StatusAdmitted {
		t.Fatal("a booking while a hold lives ended the pass")
	}
}

// A confirmed hold becomes a booking; when the user holds nothing and has
// booked, the pass is done. A hold made under a pass is confirmed after
// the pass ended, and an extended hold counts until its new end.
func TestGateSettlesHoldsAndEndsThePassWhenDone(t *testing.T) {
	g := newGateEnv(t)
	soon := time.Now().Add(time.Hour)
	g.pass("s1", "alice", StatusAdmitted, soon, nil)
	if err := g.decide("s1", hold("alice", "h1", 2, time.Now().Add(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := g.decide("s1", hold("alice", "h2", 2, soon)); err != nil {
		t.Fatal(err)
	}
	g.settle("alice", booking.Change{Kind: booking.HoldExtended, HoldID: "h1", Until: soon})
	time.Sleep(2100 * time.Millisecond)
	if err := g.decide("s1", hold("alice", "h3", 3, soon)); !errors.Is(err, booking.ErrSeatLimit) {
		t.Fatalf("h1 extended: %v, want ErrSeatLimit", err)
	}
	g.settle("alice", booking.Change{Kind: booking.HoldConfirmed, HoldID: "h1", BookingID: "b1", Seats: 2})
	if g.status("alice") != StatusAdmitted {
		t.Fatal("confirmed while h2 lives: the pass ended")
	}
	// The pass ends (the admitter marks it expired); h2 is still confirmed.
	if _, err := g.svc.Pass("s1", "alice").Update(g.ctx, []firestore.Update{{Path: "status", Value: StatusExpired}}); err != nil {
		t.Fatal(err)
	}
	g.settle("alice", booking.Change{Kind: booking.HoldConfirmed, HoldID: "h2", BookingID: "b2", Seats: 2})
	snap, _ := g.svc.Pass("s1", "alice").Get(g.ctx)
	if b := snap.Data()[fieldBookings].(map[string]any); len(b) != 2 || snap.Data()["status"] != StatusExpired {
		t.Fatalf("after confirming on an ended pass: %v", snap.Data())
	}

	g.pass("s1", "bob", StatusAdmitted, soon, nil)
	if err := g.decide("s1", hold("bob", "h9", 1, soon)); err != nil {
		t.Fatal(err)
	}
	g.settle("bob", booking.Change{Kind: booking.HoldConfirmed, HoldID: "h9", BookingID: "b9", Seats: 1})
	snap, _ = g.svc.Pass("s1", "bob").Get(g.ctx)
	if snap.Data()["status"] != StatusDone || snap.Data()[fieldDoneAt] == nil {
		t.Fatalf("bob holds nothing and booked: %v", snap.Data())
	}
	// A pass that never counted a hold leaves it alone.
	g.settle("bob", booking.Change{Kind: booking.HoldReleased, HoldID: "unknown"})
	g.settle("bob", booking.Change{Kind: booking.HoldExtended, HoldID: "unknown", Until: soon})
	if ups, err := g.svc.Settle(nil, booking.Change{Kind: booking.HoldReleased, HoldID: "h"}, time.Now()); ups != nil || err != nil {
		t.Fatalf("no pass: %v %v", ups, err)
	}
}

// One user's holds racing each other through several booking instances
// never pass the seat cap: the cap is checked on the pass as the deciding
// read found it, and the commit that takes the seats is conditioned on the
// pass being unchanged. Had a hold relied on a separate read, several
// would fit under the cap at once.
func TestConcurrentHoldsOfOneUserNeverPassTheCap(t *testing.T) {
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600, "maxSeatsPerUser": 3})
	g := gateEnv{e, context.Background()}
	g.pass("s1", "alice", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	var svcs []*booking.Service
	for range 3 {
		b := booking.New(e.fs, booking.WithGate(e.svc))
		t.Cleanup(b.Close)
		svcs = append(svcs, b)
	}
	seats := []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "B1", "B2", "B3"}
	var mu sync.Mutex
	held := 0
	var wg sync.WaitGroup
	for i, seat := range seats {
		wg.Go(func() {
			svc := svcs[i%len(svcs)]
			r := booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{seat}, RequestID: "r" + seat}
			var err error
			if i%3 == 0 {
				_, _, err = svc.Book(g.ctx, "e", r)
			} else {
				_, _, err = svc.Hold(g.ctx, "e", r, time.Minute)
			}
			switch {
			case err == nil:
				mu.Lock()
				held++
				mu.Unlock()
			case !errors.Is(err, booking.ErrSeatLimit) && !errors.Is(err, booking.ErrSeatBusy) && !errors.Is(err, booking.ErrNotAdmitted):
				t.Errorf("%s: %v", seat, err)
			}
		})
	}
	wg.Wait()
	// What Firestore holds: alice's live holds and bookings.
	n := 0
	for _, coll := range []string{booking.Holds, booking.Bookings} {
		snaps, err := e.fs.Collection(coll).Where("uid", "==", "alice").Documents(g.ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			n += len(s.Data()["seats"].([]any))
		}
	}
	if n > 3 || held > 3 {
		t.Fatalf("alice holds or booked %d seats (%d successes), over her cap of 3", n, held)
	}
	if n == 0 {
		t.Fatal("nothing was held: the race proved nothing")
	}
	taken, err := e.fs.Collection("screenings/s1/seats").Documents(g.ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(taken) != n {
		t.Fatalf("%d seat documents for %d seats held or booked", len(taken), n)
	}
}
