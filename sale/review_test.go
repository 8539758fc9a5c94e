package sale

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// A hold whose commit lands late has its end moved to the commit's time
// plus its length, on the hold and its seats; the pass's record of the hold
// moves in the same commit. Left at the decision's end, it let the Gate
// count the hold as ended between the two ends, and the same user held six
// more seats: 12 booked against a cap of 6 (issue #29.1).
func TestAHoldCommittedLateMovesThePassRecordOfItsEnd(t *testing.T) {
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600, "maxSeatsPerUser": 6})
	g := gateEnv{e, context.Background()}
	g.pass("s1", "alice", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := firelocktest.NewClientVia(t, p.Addr, projectOf(e.fs))
	slow := booking.New(via, booking.WithGate(e.svc))
	t.Cleanup(slow.Close)
	// Every request reaches the emulator 1.5 s late (once the connection is
	// up: a handshake that slow would not connect): the commit lands at
	// least that long after the read that decided the hold.
	if _, err := via.Collection(booking.Screenings).Doc("s1").Get(g.ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.DelayRequests(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	seats := []string{"A1", "A2", "A3", "A4", "A5", "A6"}
	h, _, err := slow.Hold(g.ctx, "e", booking.Request{UID: "alice", ScreeningID: "s1", Seats: seats, RequestID: "late"}, 5*time.Second)
	p.Heal()
	if err != nil {
		t.Fatal(err)
	}
	hold, err := e.fs.Collection(booking.Holds).Doc(h.ID).Get(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	end := hold.Data()["heldUntil"].(time.Time)
	if lasts := end.Sub(hold.CreateTime); lasts < 5*time.Second-time.Millisecond {
		t.Fatalf("the hold lasts %v from its commit: its commit did not land late, or its end was not moved; the test proves nothing", lasts)
	}
	for _, seat := range seats {
		s, err := e.fs.Collection("screenings/s1/seats").Doc(seat).Get(g.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Data()["heldUntil"].(time.Time); !got.Equal(end) {
			t.Errorf("seat %s is held until %v, the hold until %v", seat, got, end)
		}
	}
	pass, err := e.svc.Pass("s1", "alice").Get(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := pass.Data()["holds"].(map[string]any)[h.ID].(map[string]any)
	if got, _ := rec["until"].(time.Time); !got.Equal(end) {
		t.Fatalf("the pass records the hold until %v, but it is held until %v: between the two the gate counts it ended", got, end)
	}
	// And so the cap holds while the hold lives: six more seats are refused.
	fast := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(fast.Close)
	_, _, err = fast.Hold(g.ctx, "e", booking.Request{UID: "alice", ScreeningID: "s1", Seats: []string{"B1", "B2", "B3", "B4", "B5", "B6"}, RequestID: "more"}, 5*time.Second)
	if !errors.Is(err, booking.ErrSeatLimit) {
		t.Fatalf("six more seats during the late hold: %v, want seat_limit", err)
	}
}

// A sale made invalid while it runs stops new admissions only: the
// admitter says why at ERROR, keeps expiring passes, and keeps publishing
// the sale, as paused (issue #29.3, CONTRACT §7a).
func TestASaleMadeInvalidWhileItRunsStillExpiresAndPublishes(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 2))
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	a := e.admitter()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(time.Minute)) }()
	var first Place
	for deadline := time.Now().Add(4 * time.Second); first.ID == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, p := range e.places() {
			if p.Status == StatusAdmitted {
				first = p
			}
		}
	}
	if first.ID == "" {
		t.Fatal("nobody was admitted before the sale was made invalid")
	}
	e.setSale(map[string]any{"admitPerMinute": "600"}) // by hand, a string
	invalidAt := e.serverNow()
	// The pass (2 s) ends and is published within a few ticks; under load
	// that can take seconds, so the run goes on until then (at most a
	// minute), not for a fixed time (a run of 8 s failed 1 in 8 at load 11).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if pub := e.public(); pub.Active == 0 && pub.UpdatedAt.After(invalidAt) {
			break
		}
	}
	time.Sleep(time.Second) // a second more: an admission the invalid sale made would show
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, p := range e.places() {
		switch {
		case p.ID == first.ID && p.Status != StatusExpired:
			t.Errorf("the pass admitted before the sale turned invalid did not expire: %+v", p)
		case p.ID != first.ID && p.Status != StatusWaiting:
			t.Errorf("the invalid sale admitted %s: %+v", p.UID, p)
		}
	}
	pub := e.public()
	if pub.State != StatePaused || !pub.UpdatedAt.After(invalidAt) || pub.Active != 0 || pub.Waiting != 1 {
		t.Errorf("sales/s1 after the sale turned invalid: %+v, want paused, updated since %v, 0 active, 1 waiting", pub, invalidAt)
	}
	if log := e.log.String(); !strings.Contains(log, `"level":"ERROR"`) || !strings.Contains(log, `sale.admitPerMinute must be a whole number from 1 to 10000, not the string \"600\"`) {
		t.Errorf("no ERROR naming the field, its value and its type; log:\n%s", log)
	}
}

// A sale misconfigured from the start still closes at the start, so its
// seat map is no longer gated (issue #29.4).
func TestAMisconfiguredSaleClosesAtTheStart(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": "50"})
	start := e.serverNow().Add(2 * time.Second)
	if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Update(context.Background(), []firestore.Update{{Path: "startsAt", Value: start}}); err != nil {
		t.Fatal(err)
	}
	if err := e.run(e.admitter(), 4*time.Second); err != nil {
		t.Fatal(err)
	}
	if pub := e.public(); pub.State != StateClosed {
		t.Fatalf("a misconfigured sale after its start: %+v, want closed", pub)
	}
}

// The misconfiguration message names the field, the value and its JSON
// type: maxActive given as the string "50" used to read "not 50" (issue
// #29.5).
func TestMisconfigurationNamesTheValuesType(t *testing.T) {
	for _, c := range []struct {
		value any
		want  string
	}{
		{"50", `sale.maxActive must be a whole number from 1 to 100000, not the string "50"`},
		{50.5, `sale.maxActive must be a whole number from 1 to 100000, not the number 50.5`},
		{true, `sale.maxActive must be a whole number from 1 to 100000, not the boolean true`},
		{nil, `sale.maxActive must be a whole number from 1 to 100000, not null`},
		{map[string]any{"n": 1}, `sale.maxActive must be a whole number from 1 to 100000, not an object`},
		{int64(0), `sale.maxActive must be a whole number from 1 to 100000, not the number 0`},
	} {
		e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 10, "maxActive": c.value})
		_, _, err := e.svc.Join(context.Background(), "u1", e.id)
		if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("maxActive %#v: %v, want ErrMisconfigured saying %q", c.value, err, c.want)
		}
	}
}

// A fault does not stall the admitter's loop: every step and take has a
// deadline, so a run whose reads and writes go into a black hole (no
// answer, connections open) still ends on time, even while its lease
// renews on a healthy connection and so never ends its context (issue
// #29.12: TryAcquire and the steps ran without a deadline of their own, and
// one unanswered call held the run, and every sale it looks after, for as
// long as it hung).
func TestTheAdmitterEndsOnTimeThroughAFault(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 60))
	e.joinAndOpen(4)
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := firelocktest.NewClientVia(t, p.Addr, projectOf(e.fs))
	svc := New(via, testOptions(e.log)...)
	healthy, err := lock.New(e.fs, Locks, lock.WithLeaseDuration(svc.o.lease))
	if err != nil {
		t.Fatal(err)
	}
	a := &Admitter{s: svc, locker: healthy, changed: make(chan string, 16)}
	until := time.Now().Add(3 * time.Second)
	time.AfterFunc(time.Second, func() { p.Blackhole() })
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background(), until) }()
	select {
	case <-done:
		if late := time.Since(until); late > 15*time.Second {
			t.Errorf("the run ended %v after its end", late)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the admitter's run was still stalled 40 s past its end, behind a black hole")
	}
	p.Heal()
}
