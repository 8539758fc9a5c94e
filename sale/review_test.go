package sale

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/faultproxy"
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
	p := faultproxy.Start(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := emulators.NewFirestoreVia(t, p.Addr, projectOf(e.fs))
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
