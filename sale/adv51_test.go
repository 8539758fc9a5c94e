package sale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// Attacks on the read cuts of issue #51 (the admitter's kept line, the
// ranking without reads, joins without a first read of the place).

// tryJoin joins uid; a join that could not commit in its window (a loaded
// machine: 500 ms in tests) is only logged, from any goroutine: the
// trickles of joiners below need no particular one.
// It says whether the join answered in time: one that did not may land
// late, a straggler that later joiners may pass by right.
func (e *env) tryJoin(uid string) bool {
	_, _, err := e.svc.Join(context.Background(), uid, e.id)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrJoinTimedOut):
		e.t.Logf("join %s: %v", uid, err)
	default:
		e.t.Errorf("join %s: %v", uid, err)
	}
	return false
}

// A later join whose commit lands after its join window (the commit
// overran its deadline: the server got it late) has an order the admitter
// may already have read through. Before issue #51 the heads were queried
// afresh each tick, so such a place sorted first and was admitted at the
// next tick (as an early straggler is: docs/waiting-room.md, Stragglers).
// The run's kept line (r.line) queries each shard only from where it knows
// it, so a place landing behind that point is never seen until the lease
// changes hands, while everyone who joins after it is admitted.
//
// The line is kept busy by a trickle of joiners, as in any sale: each tick
// reads every shard through the bound. Then what the overdue commit would
// have written lands (as TestAStragglingEarlyJoinIsRankedBeforeLaterJoiners
// writes an early one), and the trickle goes on. Red before the kept
// line was checked by a count (heads): the straggler still waited after
// 20 s, and 15 who joined after it landed were admitted.
func TestALaterJoinWhoseCommitLandsLateIsStillAdmittedFirst(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(-time.Minute), 6000, 500, 60))
	a := e.admitter()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(time.Minute)) }()

	trickle := func(prefix string, n int) {
		for i := range n {
			e.tryJoin(fmt.Sprintf("%s%02d", prefix, i))
			time.Sleep(150 * time.Millisecond)
		}
	}
	trickle("a", 12) // about 2 s: the run reads every shard through its bound, tick after tick
	id := QueueID(e.id, "straggler")
	joined := e.serverNow().Add(-3 * time.Second) // its read; its commit lands now, 3 s on
	p := Place{ID: id, UID: "straggler", ScreeningID: e.id, Status: StatusWaiting, JoinedAt: joined, Shard: shardOf(id), Order: lateOrder(joined, id)}
	if _, err := e.fs.Collection(Queue).Doc(id).Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	landed := e.serverNow()
	trickle("b", 20) // 3 s more
	// Everyone who joined has had their window: wait for the line to empty.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		waiting := 0
		for _, q := range e.places() {
			if q.Status == StatusWaiting {
				waiting++
			}
		}
		if waiting == 0 {
			break
		}
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	var s *Place
	all := e.places()
	for i := range all {
		if all[i].ID == id {
			s = &all[i]
		}
	}
	if s == nil {
		t.Fatal("the straggler's place is gone")
	}
	// Those who joined 1 s or more after it landed (a tick and a window
	// later) must not be admitted before it.
	var overtook []string
	for _, q := range all {
		if q.ID == id || q.AdmittedAt == nil || q.JoinedAt.Before(landed.Add(time.Second)) {
			continue
		}
		if s.AdmittedAt == nil || q.AdmittedAt.Before(*s.AdmittedAt) {
			overtook = append(overtook, q.UID)
		}
	}
	t.Logf("the run read its line afresh %d times", strings.Count(e.log.String(), "changed behind what the admitter read"))
	if s.Status != StatusAdmitted || len(overtook) > 0 {
		t.Fatalf("the place whose join landed late (order %s, landed %v) is %s, admitted %v; admitted before it, though they joined a second or more after it landed: %v",
			s.Order, landed, s.Status, s.AdmittedAt, overtook)
	}
}

// A join decides sold_out and closed on sales/{id} as its instance read it
// within the last second, and no longer reads the place first. Attacked
// with an instance whose cache says open: right after an operator's close
// (read from the screening), 10 users with places joining again at once
// each get their own place back, unchanged, and 10 new users at once are
// refused sale_closed with nothing written; a cached sold_out refuses new
// users and still gives the others their places; a pause refuses nobody.
func TestJoinsAroundACloseKeepPlacesAndRefuseNewcomersAtOnce(t *testing.T) {
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(-time.Minute), 600, 10, 60))
	ctx := context.Background()
	before := map[string]Place{}
	for i := range 10 {
		p := e.join(fmt.Sprintf("had%02d", i))
		before[p.UID] = p
	}
	svc := New(e.fs, testOptions(e.log)...) // another instance: its cache is its own
	if _, _, err := svc.Join(ctx, "warm", e.id); err != nil {
		t.Fatal(err)
	}
	for _, p := range e.places() {
		before[p.UID] = p
	}
	// joinAll joins users at once through svc: their answers by uid.
	type answer struct {
		p       Place
		created bool
		err     error
	}
	joinAll := func(uids []string) map[string]answer {
		var mu sync.Mutex
		var wg sync.WaitGroup
		got := map[string]answer{}
		for _, uid := range uids {
			wg.Go(func() {
				p, created, err := svc.Join(ctx, uid, e.id)
				mu.Lock()
				defer mu.Unlock()
				got[uid] = answer{p, created, err}
			})
		}
		wg.Wait()
		return got
	}
	uids := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
		return out
	}
	checkKept := func(when string, got map[string]answer) {
		t.Helper()
		for uid, a := range got {
			b := before[uid]
			if a.err != nil || a.created || a.p.ID != b.ID || a.p.Order != b.Order || !a.p.JoinedAt.Equal(b.JoinedAt) {
				t.Errorf("%s: %s joined again: %+v created=%v err=%v; had %+v", when, uid, a.p, a.created, a.err, b)
			}
		}
	}
	checkRefused := func(when string, got map[string]answer, want error) {
		t.Helper()
		for uid, a := range got {
			if !errors.Is(a.err, want) {
				t.Errorf("%s: newcomer %s: %+v created=%v err=%v, want %v", when, uid, a.p, a.created, a.err, want)
			}
		}
	}
	countPlaces := func() int {
		t.Helper()
		return len(e.places())
	}

	// A pause changes nothing for joins.
	e.operate(svc, "pause", nil)
	got := joinAll(append(uids("had", 10), uids("paused", 3)...))
	for _, uid := range uids("paused", 3) {
		a := got[uid]
		if a.err != nil || !a.created {
			t.Errorf("a join to a paused sale: %s: %+v created=%v err=%v", uid, a.p, a.created, a.err)
		}
		before[uid] = a.p
		delete(got, uid)
	}
	checkKept("paused", got)
	e.operate(svc, "resume", nil)

	// A cached sold_out: as the admitter publishes it.
	if _, err := e.fs.Collection(Sales).Doc(e.id).Set(ctx, map[string]any{"state": StateSoldOut}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	time.Sleep(publicTTL + 100*time.Millisecond) // the instance reads it again
	n := countPlaces()
	checkKept("sold out", joinAll(uids("had", 10)))
	checkRefused("sold out", joinAll(uids("new", 10)), ErrSoldOut)
	if m := countPlaces(); m != n {
		t.Errorf("sold out: %d places before the refused joins, %d after", n, m)
	}
	if _, err := e.fs.Collection(Sales).Doc(e.id).Set(ctx, map[string]any{"state": StateOpen}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	time.Sleep(publicTTL + 100*time.Millisecond)
	if _, _, err := svc.Join(ctx, "warm", e.id); err != nil { // the cache says open again
		t.Fatal(err)
	}

	// The operator closes; the instance's cache still says open.
	e.operate(e.svc, "close", nil)
	n = countPlaces()
	var kept, refused map[string]answer
	var wg sync.WaitGroup
	wg.Go(func() { kept = joinAll(uids("had", 10)) })
	wg.Go(func() { refused = joinAll(uids("closed", 10)) })
	wg.Wait()
	checkKept("closed", kept)
	checkRefused("closed", refused, ErrClosed)
	if m := countPlaces(); m != n {
		t.Errorf("closed: %d places before the refused joins, %d after", n, m)
	}
	draws, err := e.fs.Collection(Draws).Where("screeningId", "==", e.id).Documents(ctx).GetAll()
	if err != nil || len(draws) != 0 {
		t.Errorf("draws of a sale open a minute before: %d, %v", len(draws), err)
	}
}

// fairViolations: on what Firestore holds, a place admitted while a place
// before it in order was still waiting (admitted later, or still waiting).
// A place revoked before its turn (expired, never admitted) is out of it.
func fairViolations(places []Place) []string {
	var in []Place
	for _, p := range places {
		if p.Order != "" && (p.AdmittedAt != nil || p.Status == StatusWaiting) {
			in = append(in, p)
		}
	}
	slices.SortFunc(in, func(x, y Place) int { return strings.Compare(x.Order, y.Order) })
	var bad []string
	for i, q := range in {
		for _, p := range in[i+1:] {
			if p.AdmittedAt != nil && (q.AdmittedAt == nil || q.AdmittedAt.After(*p.AdmittedAt)) {
				bad = append(bad, fmt.Sprintf("%s (order %s) admitted at %v while %s (order %s) waited (admitted %v)", p.UID, p.Order, *p.AdmittedAt, q.UID, q.Order, q.AdmittedAt))
			}
		}
	}
	return bad
}

// Two admitters whose answers are dropped, delayed and reset at random
// (commits that land unheard, leases lost and taken over mid-line), a line
// of early joiners ranked at the opening, later joiners trickling in and an
// operator revoking waiting places while the runs keep their lines: no
// place is admitted while one before it in order still waits, and the
// limits hold. fairViolations is shown to catch an admitter that takes the
// line's places from the back (TestFairCheckerCatchesAnAdmitterOutOfOrder).
func TestAdmittersThroughFaultsKeepTheOrderWhileTheLineIsKept(t *testing.T) {
	const perWindow, maxActive = 6, 3
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), perWindow, maxActive, 1))
	e.joinAndOpen(16)
	a, pa := e.faultyAdmitter()
	b, pb := e.faultyAdmitter()
	const d = 9 * time.Second
	stop := time.Now().Add(d - time.Second)
	ctx := context.Background()
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = e.run(a, d) })
	wg.Go(func() { errs[1] = e.run(b, d) })
	wg.Go(func() { injectFaults(stop, 2, pa, pb) })
	var revoked, late []string
	wg.Go(func() {
		bk := booking.New(e.fs, booking.WithGate(e.svc))
		defer bk.Close()
		for i := 0; time.Now().Before(stop); i++ {
			if uid := fmt.Sprintf("later%02d", i); !e.tryJoin(uid) {
				late = append(late, uid)
			}
			time.Sleep(200 * time.Millisecond)
			if i%8 != 4 {
				continue
			}
			// Revoke the last waiting place: one a run may have read.
			var last Place
			for _, p := range e.places() {
				if p.Status == StatusWaiting && p.Order > last.Order {
					last = p
				}
			}
			if last.UID == "" {
				continue
			}
			if _, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: "revoke", UID: last.UID, By: olive}, bk); err != nil {
				t.Errorf("revoke %s: %v", last.UID, err)
			}
			revoked = append(revoked, last.UID)
		}
	})
	wg.Wait()
	places := e.places()
	admitted := 0
	for _, p := range places {
		if p.AdmittedAt != nil {
			admitted++
		}
		if slices.Contains(revoked, p.UID) && p.AdmittedAt != nil && p.Status != StatusExpired {
			t.Errorf("revoked %s, yet it holds a pass: %+v", p.UID, p)
		}
	}
	t.Logf("faults %d and %d; runs %v; %d places, %d admitted, revoked %v", pa.Faults(), pb.Faults(), errs, len(places), admitted, revoked)
	if admitted < perWindow {
		t.Fatalf("only %d admitted", admitted)
	}
	// A join that timed out may have landed late: those who joined after
	// it may have passed it by right. The others are judged.
	judged := slices.DeleteFunc(slices.Clone(places), func(p Place) bool { return slices.Contains(late, p.UID) })
	if bad := fairViolations(judged); len(bad) > 0 {
		t.Fatalf("admitted out of order:\n%s", strings.Join(bad, "\n"))
	}
	if bad := meteringViolations(places, nil, e.state(), perWindow, maxActive, 2*time.Second); len(bad) > 0 {
		t.Fatalf("metering violated:\n%s", strings.Join(bad, "\n"))
	}
}

// The order checker goes red on an admitter that admits the line from its
// back: its negative control.
func TestFairCheckerCatchesAnAdmitterOutOfOrder(t *testing.T) {
	at := time.Now()
	later := at.Add(time.Second)
	ok := []Place{
		{UID: "a", Order: "0aa", Status: StatusExpired, AdmittedAt: &at},
		{UID: "b", Order: "0bb", Status: StatusAdmitted, AdmittedAt: &later},
		{UID: "r", Order: "0bc", Status: StatusExpired}, // revoked before its turn
		{UID: "c", Order: "1cc", Status: StatusWaiting},
	}
	if bad := fairViolations(ok); len(bad) > 0 {
		t.Fatalf("a fair line judged unfair: %v", bad)
	}
	backwards := []Place{
		{UID: "a", Order: "0aa", Status: StatusAdmitted, AdmittedAt: &later},
		{UID: "b", Order: "0bb", Status: StatusAdmitted, AdmittedAt: &at},
	}
	skipped := []Place{
		{UID: "a", Order: "0aa", Status: StatusWaiting},
		{UID: "b", Order: "0bb", Status: StatusAdmitted, AdmittedAt: &at},
	}
	if len(fairViolations(backwards)) == 0 || len(fairViolations(skipped)) == 0 {
		t.Fatal("the checker missed an admission out of order")
	}
}

// A hold that loses to a taken seat is refused on the screening as its
// listener keeps it (issue #51); everything that writes reads the
// screening first. Attacked right after an operator's close, and right
// after an admin moves the start into the past, while the listener may
// still hold the screening before: six admitted users at once hold a free
// seat each, and one a taken seat. Nothing is granted: the free seats are
// refused sale_closed (screening_started), the taken one refused, and no
// seat, hold or pass record is written.
func TestHoldsRightAfterACloseOrAStartAreRefusedWhateverTheListenerHas(t *testing.T) {
	for _, c := range []struct {
		name string
		act  func(e *env)
		want error
	}{
		{"closed", func(e *env) { e.operate(e.svc, "close", nil) }, booking.ErrSaleClosed},
		{"started", func(e *env) {
			if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Update(context.Background(), []firestore.Update{{Path: "startsAt", Value: time.Now().Add(-time.Second)}}); err != nil {
				e.t.Fatal(err)
			}
		}, booking.ErrScreeningStarted},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2, 10, saleOpening(time.Now().Add(-time.Minute), 600, 20, 600))
			bk := booking.New(e.fs, booking.WithGate(e.svc))
			t.Cleanup(bk.Close)
			g := gateEnv{e, ctx}
			users := []string{"u0", "u1", "u2", "u3", "u4", "u5", "late"}
			for _, u := range append(users, "alice") {
				g.pass(e.id, u, StatusAdmitted, time.Now().Add(10*time.Minute), nil)
			}
			e.holdFor(bk, "alice", "A1")       // reads the screening, and starts its listener
			time.Sleep(500 * time.Millisecond) // the listener's first snapshot
			// A refusal on the listener's screening: the path under attack.
			if _, _, err := bk.Hold(ctx, "e", booking.Request{UID: "late", ScreeningID: e.id, Seats: []string{"A1"}, RequestID: "warm"}, time.Minute); !errors.Is(err, booking.ErrSeatHeld) {
				t.Fatalf("a hold of a held seat: %v", err)
			}
			c.act(e)
			var wg sync.WaitGroup
			errs := make([]error, len(users))
			for i, u := range users {
				seat := fmt.Sprintf("B%d", i+1)
				if u == "late" {
					seat = "A1"
				}
				wg.Go(func() {
					_, _, errs[i] = bk.Hold(ctx, "e", booking.Request{UID: u, ScreeningID: e.id, Seats: []string{seat}, RequestID: "after-" + u}, time.Minute)
				})
			}
			wg.Wait()
			for i, u := range users {
				switch {
				case errs[i] == nil:
					t.Errorf("%s: %s was granted a hold after it", c.name, u)
				case u != "late" && !errors.Is(errs[i], c.want):
					t.Errorf("%s: %s's hold of a free seat: %v, want %v", c.name, u, errs[i], c.want)
				}
			}
			seats, err := e.fs.Collection(booking.Screenings).Doc(e.id).Collection("seats").Documents(ctx).GetAll()
			if err != nil || len(seats) != 1 || seats[0].Ref.ID != "A1" {
				t.Errorf("%s: seat documents %d (%v), want only alice's A1", c.name, len(seats), err)
			}
			holds, err := e.fs.Collection(booking.Holds).Where("screeningId", "==", e.id).Documents(ctx).GetAll()
			if err != nil || len(holds) != 1 {
				t.Errorf("%s: %d holds (%v), want alice's only", c.name, len(holds), err)
			}
		})
	}
}
