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

// Defects found in review of running a sale (issue #36, items 1-4), each
// as an operator meets it through Operate.

var oscar = Operator{UID: "cli:oscar", Email: "oscar@example.com"}

// logOf lists the sale's log, oldest first.
func (e *env) logOf() []map[string]any {
	e.t.Helper()
	snaps, err := e.fs.Collection(Log).Doc(e.id).Collection("entries").OrderBy("at", firestore.Asc).Documents(context.Background()).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for _, s := range snaps {
		out = append(out, s.Data())
	}
	return out
}

// holdFor gives uid a live pass and a hold of seats under it.
func (e *env) holdFor(bk *booking.Service, uid string, seats ...string) booking.Hold {
	e.t.Helper()
	g := gateEnv{e, context.Background()}
	g.pass(e.id, uid, StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	h, _, err := bk.Hold(context.Background(), "e", booking.Request{UID: uid, ScreeningID: e.id, Seats: seats, RequestID: "h-" + uid}, 5*time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// A revoke of a user whose pass has ended but whose hold lives on frees
// the seats, and so it is logged, as every action that changes something
// is (item 1).
func TestARevokeThatOnlyReleasesHoldsIsLogged(t *testing.T) {
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600})
	bk := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(bk.Close)
	ctx := context.Background()
	h := e.holdFor(bk, "alice", "A1", "A2")
	// The pass ends, as the admitter ends it; the hold lives on.
	if _, err := e.svc.Pass(e.id, "alice").Update(ctx, []firestore.Update{{Path: "status", Value: StatusExpired}, {Path: "passUntil", Value: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	out, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "alice", Reason: "resale bot", By: oscar}, bk)
	if err != nil || !out.Changed {
		t.Fatalf("revoke: %+v %v, want changed", out, err)
	}
	if snap, err := e.fs.Collection(booking.Holds).Doc(h.ID).Get(ctx); err != nil || snap.Data()["status"] != booking.StatusReleased {
		t.Fatalf("the hold after the revoke: %v %v, want released", snap.Data(), err)
	}
	log := e.logOf()
	if len(log) != 1 || log[0]["action"] != ActionRevoke || log[0]["reason"] != "resale bot" || log[0]["uid"] != oscar.UID {
		t.Fatalf("log %v, want one revoke entry", log)
	}
	after, _ := log[0]["after"].(map[string]any)
	before, _ := log[0]["before"].(map[string]any)
	if after["user"] != "alice" || after["holdsReleased"] != int64(1) || before["status"] != StatusExpired {
		t.Fatalf("the entry's before %v and after %v: want alice's expired place and one hold released", before, after)
	}
	// Again: nothing left to change, nothing logged.
	if out, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "alice", By: oscar}, bk); err != nil || out.Changed {
		t.Fatalf("the same revoke again: %+v %v, want unchanged", out, err)
	}
	if n := len(e.logOf()); n != 1 {
		t.Fatalf("%d log entries after a revoke that changed nothing, want 1", n)
	}
}

// The same configure twice changes nothing the second time, when opensAt
// has digits below the microsecond that Firestore does not keep: it is not
// logged again, and after the opening it is not refused as a change of
// opensAt (item 2).
func TestTheSameConfigureWithNanosecondsIsIdempotent(t *testing.T) {
	e := newEnv(t, 2, 10, nil)
	ctx := context.Background()
	opensAt := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(123456789)
	op := Operation{ScreeningID: e.id, Action: ActionConfigure, By: oscar,
		Sale: map[string]any{"opensAt": opensAt.UTC().Format(time.RFC3339Nano), "admitPerMinute": float64(60), "maxActive": float64(10)}}
	if out, err := e.svc.Operate(ctx, op, nil); err != nil || !out.Changed {
		t.Fatalf("first configure: %+v %v", out, err)
	}
	if out, err := e.svc.Operate(ctx, op, nil); err != nil || out.Changed {
		t.Fatalf("the same configure again: %+v %v, want unchanged", out, err)
	}
	for e.serverNow().Before(opensAt.Add(100 * time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := e.svc.Operate(ctx, op, nil); err != nil || out.Changed || out.State != StateOpen {
		t.Fatalf("the same configure after the opening: %+v %v, want open and unchanged", out, err)
	}
	if n := len(e.logOf()); n != 1 {
		t.Fatalf("%d log entries, want 1", n)
	}
}

// A complete configure repairs a sale with a field written by hand that §7
// does not know: configure replaces the stored fields it does not know
// (the log's before still shows them) (item 3).
func TestAConfigureRepairsASaleWithAStrayField(t *testing.T) {
	opensAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	e := newEnv(t, 2, 10, map[string]any{"opensAt": opensAt, "admitPerMinute": 60, "maxActive": 10, "maxSeats": 4})
	ctx := context.Background()
	op := Operation{ScreeningID: e.id, Action: ActionConfigure, By: oscar,
		Sale: map[string]any{"opensAt": opensAt.Format(time.RFC3339), "admitPerMinute": float64(60), "maxActive": float64(10)}}
	out, err := e.svc.Operate(ctx, op, nil)
	if err != nil || !out.Changed {
		t.Fatalf("configure over a stray field: %+v %v, want it changed", out, err)
	}
	snap, err := e.fs.Collection(booking.Screenings).Doc(e.id).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored := snap.Data()["sale"].(map[string]any)
	if _, ok := stored["maxSeats"]; ok || stored["maxActive"] != int64(10) {
		t.Fatalf("stored sale %v, want maxSeats gone", stored)
	}
	log := e.logOf()
	if len(log) != 1 {
		t.Fatalf("log %v, want one entry", log)
	}
	if before, _ := log[0]["before"].(map[string]any); before["maxSeats"] != int64(4) {
		t.Fatalf("the entry's before %v should show the stray field it dropped", before)
	}
	if _, err := e.svc.config(snap); err != nil {
		t.Fatalf("the repaired sale: %v", err)
	}
}

// confirmingReleaser is a HoldRevoker through which each revoked hold's
// user tries to confirm it just before it is released: the window between
// a revoke's commit and the release of the holds.
type confirmingReleaser struct {
	bk        *booking.Service
	mu        sync.Mutex
	confirmed []error
}

func (r *confirmingReleaser) RevokeHold(ctx context.Context, uid, holdID string) (booking.Hold, error) {
	_, _, err := r.bk.ConfirmHold(ctx, uid, holdID)
	r.mu.Lock()
	r.confirmed = append(r.confirmed, err)
	r.mu.Unlock()
	return r.bk.RevokeHold(ctx, uid, holdID)
}

// A revoked user cannot confirm a hold once the revoke has committed, even
// before the hold is released: the confirm finds the place revoked in its
// own commit (item 4).
func TestARevokedUserCannotConfirmBeforeTheHoldIsReleased(t *testing.T) {
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600})
	bk := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(bk.Close)
	ctx := context.Background()
	h := e.holdFor(bk, "alice", "A1", "A2")
	r := &confirmingReleaser{bk: bk}
	if _, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "alice", Reason: "bot", By: oscar}, r); err != nil {
		t.Fatal(err)
	}
	if len(r.confirmed) != 1 || !errors.Is(r.confirmed[0], booking.ErrNotAdmitted) {
		t.Fatalf("a confirm between the revoke's commit and the release: %v, want ErrNotAdmitted", r.confirmed)
	}
	bookings, err := e.fs.Collection(booking.Bookings).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(bookings) != 0 {
		t.Fatalf("%d bookings after the revoke, want none", len(bookings))
	}
	if snap, err := e.fs.Collection(booking.Holds).Doc(h.ID).Get(ctx); err != nil || snap.Data()["status"] != booking.StatusReleased {
		t.Fatalf("the hold: %v %v, want released", snap.Data(), err)
	}
}
