package sale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
)

// Adversarial review of #36 (review36 branch): a revoke raced by the
// revoked user's own bots, and a revoke whose answer is lost.

// holdsOf lists uid's holds of the sale, as stored.
func (e *env) holdsOf(uid string) []*firestore.DocumentSnapshot {
	e.t.Helper()
	snaps, err := e.fs.Collection(booking.Holds).Where("uid", "==", uid).Documents(context.Background()).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	return snaps
}

// A revoke raced by its user's bots on four instances, confirming,
// extending and holding as fast as they can: the revoke answers, no
// booking of the user commits after the revoke's, no confirm started after
// the revoke answered succeeds, every hold not booked is released, and the
// revoke is logged once.
func TestARevokeRacedByTheUsersBotsWins(t *testing.T) {
	t.Parallel() // its own project; no timing is asserted, only what committed
	// One round, its bots mixed: each worker confirms, and every fourth of
	// its calls extends or starts a checkout, by worker (three separate
	// rounds took a minute of make test for the same races).
	for round := 0; round < 1; round++ {
		t.Run("mixed", func(t *testing.T) {
			e := newEnv(t, 4, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600, "maxSeatsPerUser": 8})
			ctx := context.Background()
			g := gateEnv{e, ctx}
			g.pass(e.id, "mallory", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
			var bks []*booking.Service
			for i := 0; i < 4; i++ {
				bk := booking.New(e.fs, booking.WithGate(e.svc))
				t.Cleanup(bk.Close)
				bks = append(bks, bk)
			}
			var holdIDs []string
			for i, row := range []string{"A", "B", "C"} {
				h, _, err := bks[0].Hold(ctx, "e", booking.Request{UID: "mallory", ScreeningID: e.id, Seats: []string{row + "1", row + "2"}, RequestID: fmt.Sprint("pre-", i)}, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				holdIDs = append(holdIDs, h.ID)
			}
			var mu sync.Mutex
			ids := append([]string(nil), holdIDs...)
			var revokedDone atomic.Int64 // unix nanos when the revoke answered
			var lateConfirms []string
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					bk := bks[w%len(bks)]
					mode := []string{"confirms", "extends", "checkouts"}[w%3]
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						mu.Lock()
						id := ids[(w+n)%len(ids)]
						mu.Unlock()
						started := time.Now().UnixNano()
						switch (w + n) % 4 {
						case 2:
							switch mode {
							case "extends":
								bk.ExtendHold(ctx, "mallory", id, time.Minute)
								continue
							case "checkouts":
								_, made, err := bk.StartPaying(ctx, "mallory", id, 5*time.Minute, booking.HoldPayment{SessionID: "cs_" + id, Amount: 100, Currency: "eur"},
									func(*firestore.Transaction, booking.Hold, time.Time) error { return nil })
								if err == nil && made {
									if done := revokedDone.Load(); done != 0 && started > done {
										mu.Lock()
										lateConfirms = append(lateConfirms, "checkout of "+id)
										mu.Unlock()
									}
								}
								continue
							}
							fallthrough
						case 0, 1:
							b, made, err := bk.ConfirmHold(ctx, "mallory", id)
							if err == nil && made {
								if done := revokedDone.Load(); done != 0 && started > done {
									mu.Lock()
									lateConfirms = append(lateConfirms, b.ID)
									mu.Unlock()
								}
							}
						case 3:
							seat := fmt.Sprintf("D%d", 1+(w*7+n)%10)
							h, _, err := bk.Hold(ctx, "e", booking.Request{UID: "mallory", ScreeningID: e.id, Seats: []string{seat}, RequestID: fmt.Sprint("bot-", w, "-", n)}, time.Minute)
							if err == nil {
								mu.Lock()
								ids = append(ids, h.ID)
								mu.Unlock()
							}
						}
					}
				}(w)
			}
			time.Sleep(time.Duration(10*round) * time.Millisecond)
			op := Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "mallory", Reason: "bot", By: oscar}
			sent := time.Now()
			out, err := e.svc.Operate(ctx, op, bks[0])
			took := time.Since(sent)
			revokedDone.Store(time.Now().UnixNano())
			time.Sleep(500 * time.Millisecond)
			close(stop)
			wg.Wait()
			if err != nil {
				// Liveness: the revoke's transaction lost the place's lock
				// to the bots' and failed Aborted (Transaction lock timeout)
				// in about 2 rounds of 3 (review #36); Operate now tries an
				// aborted action again until its context ends.
				t.Errorf("the revoke raced by the user's bots answered after %v: %v (%+v)", took, err, out)
				// The operator sends it again, the bots stopped.
				if _, err := e.svc.Operate(ctx, op, bks[0]); err != nil {
					t.Fatalf("the revoke again: %v", err)
				}
			} else {
				t.Logf("the revoke answered in %v", took)
			}
			if len(lateConfirms) > 0 {
				t.Errorf("confirms started after the revoke answered succeeded: %v", lateConfirms)
			}
			place, err := e.svc.Pass(e.id, "mallory").Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			revokedAt, _ := place.Data()[FieldRevokedAt].(time.Time)
			if st := place.Data()["status"]; st == StatusDone && len(place.Data()[fieldHolds].(map[string]any)) == 0 {
				t.Logf("the bots booked all they held before the revoke: the place is done, and the revoke had nothing to change")
				revokedAt = e.serverNow()
			} else if st != StatusExpired || revokedAt.IsZero() {
				t.Fatalf("the place after the revoke: %v", place.Data())
			}
			// The revoke's commit, where it is serialized: its log entry is
			// created in it. revokedAt is its transaction's read time, and a
			// confirm may commit between the two, before the revoke reads
			// the place (seen once: 10.7 ms apart, the revoke raced for 12 s).
			committed := revokedAt
			entries, err := e.fs.Collection(Log).Doc(e.id).Collection("entries").Documents(ctx).GetAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range entries {
				if a, _ := en.Data()["action"].(string); a == string(ActionRevoke) {
					committed = en.CreateTime
				}
			}
			bookings, err := e.fs.Collection(booking.Bookings).Where("uid", "==", "mallory").Documents(ctx).GetAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bookings {
				if !b.CreateTime.Before(committed) {
					t.Errorf("booking %s committed at %v, after the revoke's commit at %v (revokedAt %v)", b.Ref.ID, b.CreateTime, committed, revokedAt)
				}
			}
			now := e.serverNow()
			for _, h := range e.holdsOf("mallory") {
				st, _ := h.Data()["status"].(string)
				until, _ := h.Data()["heldUntil"].(time.Time)
				if (st == booking.StatusHeld || st == booking.StatusPaying) && now.Before(until) {
					t.Errorf("hold %s (created %v) still %s until %v after the revoke at %v", h.Ref.ID, h.CreateTime, st, until, revokedAt)
				}
			}
			want := 1
			if place.Data()["status"] == StatusDone {
				want = 0
			}
			if log := e.logOf(); len(log) != want {
				t.Errorf("log %v, want %d revoke entries", log, want)
			}
			t.Logf("%d bookings before the revoke, %d holds in all", len(bookings), len(e.holdsOf("mallory")))
		})
	}
}

// proxiedReleaser releases nothing: the network went down right after the
// revoke's commit (RevokeHold goes through a proxy that drops every
// answer).
type proxiedReleaser struct {
	p  *firelocktest.Proxy
	bk *booking.Service
}

func (r proxiedReleaser) RevokeHold(ctx context.Context, uid, holdID string) (booking.Hold, error) {
	if err := r.p.DropAnswers(100 * time.Millisecond); err != nil {
		return booking.Hold{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return r.bk.RevokeHold(ctx, uid, holdID)
}

// A revoke whose holds could not be released (its releases lost on the
// network after its commit) answers an error; the operator sends it again.
// The retry releases the holds, and the revoke is logged once, with the
// revokedAt of its commit kept.
func TestARevokeRetriedAfterItsReleasesFailedIsLoggedOnce(t *testing.T) {
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600})
	ctx := context.Background()
	bk := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(bk.Close)
	h := e.holdFor(bk, "alice", "A1", "A2")
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := firelocktest.NewClientVia(t, p.Addr, projectOf(e.fs))
	bkVia := booking.New(via, booking.WithGate(e.svc))
	t.Cleanup(bkVia.Close)
	if _, err := via.Collection(booking.Screenings).Doc(e.id).Get(ctx); err != nil {
		t.Fatal(err)
	}
	op := Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "alice", Reason: "bot", By: oscar}
	if _, err := e.svc.Operate(ctx, op, proxiedReleaser{p, bkVia}); err == nil {
		t.Fatal("a revoke whose release was lost answered no error; the test proves nothing")
	}
	p.Heal()
	first, err := e.svc.Pass(e.id, "alice").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Operate(ctx, op, bk); err != nil {
		t.Fatalf("the revoke again: %v", err)
	}
	if snap, err := e.fs.Collection(booking.Holds).Doc(h.ID).Get(ctx); err != nil || snap.Data()["status"] != booking.StatusReleased {
		t.Fatalf("the hold after the retried revoke: %v %v, want released", snap.Data(), err)
	}
	again, err := e.svc.Pass(e.id, "alice").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := first.Data()[FieldRevokedAt].(time.Time), again.Data()[FieldRevokedAt].(time.Time); !a.Equal(b) {
		t.Errorf("revokedAt moved from %v to %v on the retry", a, b)
	}
	if log := e.logOf(); len(log) != 1 {
		t.Errorf("%d log entries for one revoke sent twice: %v", len(log), log)
	}
}

// A revoke whose commit landed but whose answer was lost (every answer
// held back 1.5 s, and the operator's call given up as soon as the commit
// shows) is sent again: the retry releases the holds and the revoke is
// logged once.
func TestARevokeWhoseAnswerWasLostIsLoggedOnce(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits
	e := newEnv(t, 2, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 10, "passSeconds": 600})
	ctx := context.Background()
	bk := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(bk.Close)
	h := e.holdFor(bk, "alice", "A1", "A2")
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := firelocktest.NewClientVia(t, p.Addr, projectOf(e.fs))
	svcVia := New(via, testOptions(e.log)...)
	if _, err := via.Collection(booking.Screenings).Doc(e.id).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Delay(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	op := Operation{ScreeningID: e.id, Action: ActionRevoke, UID: "alice", Reason: "bot", By: oscar}
	go func() { _, err := svcVia.Operate(cctx, op, bk); done <- err }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		snap, err := e.svc.Pass(e.id, "alice").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Data()[FieldRevokedAt]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the revoke never committed")
		}
	}
	cancel() // the answer is lost
	err := <-done
	p.Heal()
	t.Logf("the revoke whose answer was lost: %v", err)
	if err == nil {
		// it answered in the instant before the cancel: the holds are released
		t.Skip("the answer came back before it was given up")
	}
	if _, err := e.svc.Operate(ctx, op, bk); err != nil {
		t.Fatalf("the revoke again: %v", err)
	}
	if snap, err := e.fs.Collection(booking.Holds).Doc(h.ID).Get(ctx); err != nil || snap.Data()["status"] != booking.StatusReleased {
		t.Fatalf("the hold after the retried revoke: %v %v, want released", snap.Data(), err)
	}
	if log := e.logOf(); len(log) != 1 {
		t.Errorf("%d log entries for one revoke sent twice: %v", len(log), log)
	}
}

// Configure, sent as an operator's tools send it: opensAt with digits below
// the microsecond, in another zone, with trailing zeros; twice at once;
// null for a field §7 does not know; after the opening in another textual
// form. The same sale is the same sale: logged once, never sale_started.
func TestConfigureInEveryTextualFormIsIdempotent(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for the opening
	e := newEnv(t, 2, 10, nil)
	ctx := context.Background()
	opensAt := time.Now().Add(5 * time.Second).Truncate(time.Second).Add(123456789)
	zone := time.FixedZone("", 2*3600)
	forms := []string{
		opensAt.UTC().Format(time.RFC3339Nano),
		opensAt.In(zone).Format(time.RFC3339Nano),
		opensAt.Truncate(time.Microsecond).In(zone).Format("2006-01-02T15:04:05.000000000-07:00"),
		opensAt.Truncate(time.Microsecond).UTC().Format("2006-01-02T15:04:05.0000000Z"),
		opensAt.Truncate(time.Microsecond).UTC().Format("2006-01-02T15:04:05.000000000Z07:00"),
	}
	op := func(form string, extra map[string]any) Operation {
		s := map[string]any{"opensAt": form, "admitPerMinute": float64(60), "maxActive": float64(10)}
		for k, v := range extra {
			s[k] = v
		}
		return Operation{ScreeningID: e.id, Action: ActionConfigure, By: oscar, Sale: s}
	}
	// Twice at once, a new sale.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = e.svc.Operate(ctx, op(forms[i%len(forms)], nil), nil)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent configure %d: %v", i, err)
		}
	}
	for _, f := range forms {
		if out, err := e.svc.Operate(ctx, op(f, nil), nil); err != nil || out.Changed {
			t.Errorf("configure with opensAt %s: %+v %v, want unchanged", f, out, err)
		}
	}
	if _, err := e.svc.Operate(ctx, op(forms[0], map[string]any{"maxSeats": nil}), nil); !errors.Is(err, ErrInvalidSale) {
		t.Errorf("null for a field §7 does not know: %v, want invalid_sale", err)
	}
	for e.serverNow().Before(opensAt.Add(100 * time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, f := range forms {
		if out, err := e.svc.Operate(ctx, op(f, nil), nil); err != nil || out.Changed || out.State != StateOpen {
			t.Errorf("configure after the opening with opensAt %s: %+v %v, want open and unchanged", f, out, err)
		}
	}
	if out, err := e.svc.Operate(ctx, op(forms[1], map[string]any{"maxActive": float64(20)}), nil); err != nil || !out.Changed {
		t.Errorf("a new maxActive after the opening, opensAt in +02:00: %+v %v", out, err)
	}
	if n := len(e.logOf()); n != 2 {
		t.Errorf("%d log entries, want 2: %v", n, e.logOf())
	}
}

// DecodeSale takes one JSON object and nothing after it.
func TestDecodeSaleRefusesWhatFollowsTheObject(t *testing.T) {
	for _, in := range []string{`{"maxActive": 5} trailing`, `{"maxActive": 5}{"maxActive": 6}`, `{"maxActive": 5}]`} {
		if m, err := DecodeSale([]byte(in)); !errors.Is(err, booking.ErrInvalidArgument) {
			t.Errorf("DecodeSale(%s) = %v, %v; want invalid_argument", in, m, err)
		}
	}
	for _, in := range []string{`{"maxActive": 5}`, " {\"maxActive\": 5} \n"} {
		if _, err := DecodeSale([]byte(in)); err != nil {
			t.Errorf("DecodeSale(%q): %v", in, err)
		}
	}
}
