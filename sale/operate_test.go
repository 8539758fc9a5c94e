package sale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"google.golang.org/grpc/status"
)

// withMinute shortens the saleStats minute for tests.
func withMinute(d time.Duration) Option { return func(o *options) { o.minute = d } }

var olive = Operator{UID: "op-olive", Email: "olive@example.com"}

// operate runs an action as the operator olive, and returns the server
// time it committed at (the screening's update time after it).
func (e *env) operate(svc *Service, action string, fields map[string]any) time.Time {
	e.t.Helper()
	bk := booking.New(e.fs, booking.WithGate(svc))
	defer bk.Close()
	if _, err := svc.Operate(context.Background(), Operation{ScreeningID: e.id, Action: action, Sale: fields, By: olive}, bk); err != nil {
		e.t.Fatalf("%s %v: %v", action, fields, err)
	}
	snap, err := e.fs.Collection(booking.Screenings).Doc(e.id).Get(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.UpdateTime
}

// admittedTimes are the admissions of the sale, in order.
func (e *env) admittedTimes() []time.Time {
	var ts []time.Time
	for _, p := range e.places() {
		if p.AdmittedAt != nil {
			ts = append(ts, *p.AdmittedAt)
		}
	}
	slices.SortFunc(ts, time.Time.Compare)
	return ts
}

// A paused sale admits nobody, from the pause's commit on (the admission
// transaction reads the screening), and shows paused; passes still expire;
// resume admits again (CONTRACT §7a, §8).
func TestPauseAdmitsNobodyAndResumeGoesOn(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 1))
	for _, uid := range []string{"u1", "u2", "u3", "u4", "u5", "u6"} {
		e.join(uid)
	}
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	done := make(chan error, 1)
	go func() { done <- e.run(e.admitter(), 9*time.Second) }()
	for len(e.admittedTimes()) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	paused := e.operate(e.svc, ActionPause, nil)
	time.Sleep(2500 * time.Millisecond)
	pub := e.public()
	if pub.State != StatePaused || pub.UpdatedAt.Sub(paused) > 2*time.Second {
		t.Errorf("2.5 s after the pause at %v, sales/s1 is %s since %v, want paused within 2 s", paused, pub.State, pub.UpdatedAt)
	}
	// The places say so (sales/{id}'s active count follows within
	// numbersEvery).
	for _, p := range e.places() {
		if p.Status == StatusAdmitted {
			t.Errorf("the 1-s pass of %s did not expire while paused: %+v", p.UID, p)
		}
	}
	resumed := e.operate(e.svc, ActionResume, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var during, after int
	for _, at := range e.admittedTimes() {
		switch {
		case at.After(paused) && at.Before(resumed):
			during++
		case at.After(resumed):
			after++
			if at.Sub(resumed) > 2*time.Second && after == 1 {
				t.Errorf("the first admission after the resume came %v after it, want within 2 s", at.Sub(resumed))
			}
		}
	}
	if during != 0 {
		t.Errorf("%d admitted while paused", during)
	}
	if after == 0 {
		t.Error("nobody was admitted after the resume")
	}
}

// A change of maxActive and of admitPerMinute takes effect within 2 s of
// its commit: admissions on each side of the change follow the limit of
// their side (the rate window is 2 s here, so admitPerMinute counts per
// 2 s).
func TestLiveChangesOfMaxActiveAndRate(t *testing.T) {
	t.Run("maxActive", func(t *testing.T) {
		e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 600))
		for i := range 12 {
			e.join(string(rune('a'+i)) + "-user")
		}
		e.setSale(map[string]any{"opensAt": e.serverNow()})
		done := make(chan error, 1)
		go func() { done <- e.run(e.admitter(), 5*time.Second) }()
		for len(e.admittedTimes()) < 2 {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		changed := e.operate(e.svc, ActionConfigure, map[string]any{"maxActive": 5})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ts := e.admittedTimes()
		var before, within int
		for _, at := range ts {
			switch {
			case !at.After(changed):
				before++
			case at.Sub(changed) <= 2*time.Second:
				within++
			}
		}
		if before != 2 || within != 3 || len(ts) != 5 {
			t.Fatalf("admissions: %d before the change to maxActive 5, %d within 2 s after, %d in all; want 2, 3, 5", before, within, len(ts))
		}
	})
	t.Run("admitPerMinute", func(t *testing.T) {
		e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 2, 100, 600))
		for i := range 30 {
			e.join(string(rune('a'+i)) + "-user")
		}
		e.setSale(map[string]any{"opensAt": e.serverNow()})
		done := make(chan error, 1)
		go func() { done <- e.run(e.admitter(), 8*time.Second) }()
		time.Sleep(4 * time.Second)
		changed := e.operate(e.svc, ActionConfigure, map[string]any{"admitPerMinute": 8})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ts := e.admittedTimes()
		// Each admission, with those in the 2 s up to it: at most 2 before
		// the change, at most 8 after it.
		for i, a := range ts {
			n, limit := 0, 2
			for _, at := range ts[:i+1] {
				if a.Sub(at) < 2*time.Second {
					n++
				}
			}
			if a.After(changed) {
				limit = 8
			}
			if n > limit {
				t.Fatalf("%d admissions in the 2 s up to %v; the limit then was %d (changed at %v)", n, a, limit, changed)
			}
		}
		within := 0
		for _, at := range ts {
			if at.After(changed) && at.Sub(changed) <= 2*time.Second {
				within++
			}
		}
		if within <= 2 {
			t.Fatalf("%d admissions within 2 s of raising the rate to 8 (from 2): the change did not take effect", within)
		}
	})
}

// An idle sale (nobody waiting, no pass: the admitter looks every 5 s)
// shows a pause within 2 s: a change of the screening wakes the admitter.
func TestAPauseOfAnIdleSaleShowsWithin2s(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(-time.Minute), 600, 10, 600))
	prod := e.prodService()
	a, err := prod.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.run(a, 9*time.Second) }()
	time.Sleep(3 * time.Second) // published once, then idle
	paused := e.operate(prod, ActionPause, nil)
	time.Sleep(2500 * time.Millisecond)
	if pub := e.public(); pub.State != StatePaused || pub.UpdatedAt.Sub(paused) > 2*time.Second {
		t.Errorf("2.5 s after pausing an idle sale at %v: %s since %v", paused, pub.State, pub.UpdatedAt)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The admitter writes a minute's figures once it is over (minutes of 2 s
// here): over the sale they add up to what Firestore holds.
func TestSaleStatsMinutesAddUp(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 1))
	e.svc = New(e.fs, append(testOptions(e.log), withMinute(2*time.Second))...)
	for _, uid := range []string{"u1", "u2", "u3", "u4"} {
		e.join(uid)
	}
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	bk := booking.New(e.fs, booking.WithGate(e.svc))
	t.Cleanup(bk.Close)
	done := make(chan error, 1)
	go func() { done <- e.run(e.admitter(), 9*time.Second) }()
	time.Sleep(2 * time.Second)
	e.join("late1")
	e.join("late2")
	// An admitted user holds one seat and books another.
	held, booked := 0, 0
	for deadline := time.Now().Add(3 * time.Second); (held == 0 || booked == 0) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, p := range e.places() {
			if p.Status != StatusAdmitted || held > 0 {
				continue
			}
			if _, _, err := bk.Hold(context.Background(), "e", booking.Request{UID: p.UID, ScreeningID: e.id, Seats: []string{"A1"}, RequestID: "h"}, 5*time.Second); err == nil {
				held++
			}
			if _, _, err := bk.Book(context.Background(), "e", booking.Request{UID: p.UID, ScreeningID: e.id, Seats: []string{"A2"}, RequestID: "b"}); err == nil {
				booked++
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	snaps, err := e.fs.Collection(Stats).Doc(e.id).Collection("minutes").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) < 3 {
		t.Fatalf("%d minutes of figures over 9 s of 2-s minutes", len(snaps))
	}
	var sum Minute
	var last Minute
	for _, s := range snaps { // in key order: time order
		var m Minute
		if err := s.DataTo(&m); err != nil {
			t.Fatal(err)
		}
		sum.Joins += m.Joins
		sum.Admissions += m.Admissions
		sum.Holds += m.Holds
		sum.Bookings += m.Bookings
		sum.Expired += m.Expired
		last = m
	}
	var admitted, expired int64
	for _, p := range e.places() {
		if p.AdmittedAt != nil {
			admitted++
		}
		if p.Status == StatusExpired {
			expired++
		}
	}
	st := e.state()
	// Figures count what happened before the last minute was written: the
	// minute in progress is not among them.
	inProgress := st.Admitted - last.Admitted
	if sum.Admissions != admitted-inProgress || last.Admitted != admitted-inProgress {
		t.Errorf("minutes add up to %d admissions (last level %d); Firestore holds %d, %d of them in the minute in progress", sum.Admissions, last.Admitted, admitted, inProgress)
	}
	if sum.Expired > expired || sum.Expired < expired-st.Minute.Expired {
		t.Errorf("minutes add up to %d expirations; %d places expired, %d in the minute in progress", sum.Expired, expired, st.Minute.Expired)
	}
	if sum.Joins+st.Minute.Waiting > 6 || sum.Joins < 2 {
		t.Errorf("minutes add up to %d joins (%d waiting when the minute in progress began) of 6 places, 2 of them after the opening", sum.Joins, st.Minute.Waiting)
	}
	// The seats at the end of the last minute: the hold and the booking
	// (the 1-s hold lapsed before the run ended, its seat counted free).
	if last.SeatsSold != int64(booked) || last.SeatsHeld+last.SeatsSold+last.SeatsLeft != 200 {
		t.Errorf("the last minute's seats: %d sold, %d held, %d left of 200; want %d sold", last.SeatsSold, last.SeatsHeld, last.SeatsLeft, booked)
	}
	if sum.Holds != int64(held) || sum.Bookings != int64(booked) {
		t.Errorf("minutes add up to %d holds and %d bookings, want %d and %d", sum.Holds, sum.Bookings, held, booked)
	}
}

// Operators acting at once, half of them through a proxy that drops, delays
// and resets their answers: every action either commits with its log entry
// or leaves nothing, and the log replays to the sale as stored. (Most of
// them time out: a transaction whose client vanished holds its read locks
// on the screening until the store expires it, and the others wait.) The log
// has exactly one entry per change that committed (an action answered
// Changed, or one whose answer was lost but whose entry is there), and
// the last pause or resume and the last rate logged are what the
// screening holds.
func TestConcurrentOperatorsLeaveTheLogAndTheSaleInStep(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, _ := firelocktest.NewClientVia(t, p.Addr, projectOf(e.fs))
	faulty := New(via, testOptions(e.log)...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var answeredChanged, errs atomic.Int64
	var mu sync.Mutex
	kinds := map[string]int{}
	for w := range 6 {
		svc := e.svc
		if w%2 == 1 {
			svc = faulty
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for i := 0; i < 8; i++ {
				op := Operation{ScreeningID: e.id, By: olive}
				switch rng.IntN(3) {
				case 0:
					op.Action = ActionPause
				case 1:
					op.Action = ActionResume
				case 2:
					op.Action, op.Sale = ActionConfigure, map[string]any{"admitPerMinute": float64(1 + rng.IntN(500))}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				out, err := svc.Operate(ctx, op, nil)
				cancel()
				switch {
				case err != nil:
					errs.Add(1)
					mu.Lock()
					kinds[fmt.Sprintf("%s via the proxy %v: %s", op.Action, w%2 == 1, status.Code(err))]++
					mu.Unlock()
				case out.Changed:
					answeredChanged.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 77))
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch rng.IntN(3) {
			case 0:
				p.DropAnswers(100 * time.Millisecond)
			case 1:
				p.Delay(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			case 2:
				p.Reset()
			}
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			p.Heal()
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
	})
	go func() { time.Sleep(8 * time.Second); close(stop) }()
	wg.Wait()
	p.Heal()

	ctx := context.Background()
	entries, err := e.fs.Collection(Log).Doc(e.id).Collection("entries").OrderBy("at", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	// Answered Changed must be logged; a lost answer may be logged too.
	if n := int64(len(entries)); n < answeredChanged.Load() || n > answeredChanged.Load()+errs.Load() {
		t.Fatalf("%d log entries for %d actions answered as changes and %d errors", n, answeredChanged.Load(), errs.Load())
	}
	paused, rate := false, int64(60)
	for i, en := range entries {
		after, _ := en.Data()["after"].(map[string]any)
		before, _ := en.Data()["before"].(map[string]any)
		if i > 0 {
			// Each entry's before is the previous entry's after: no change
			// slipped in unlogged.
			prev, _ := entries[i-1].Data()["after"].(map[string]any)
			if fmt.Sprint(prev) != fmt.Sprint(before) {
				t.Fatalf("log entry %d's before %v is not entry %d's after %v", i, before, i-1, prev)
			}
		}
		paused = after["paused"] == true
		if r, ok := after["admitPerMinute"].(int64); ok {
			rate = r
		}
	}
	snap, err := e.fs.Collection(booking.Screenings).Doc(e.id).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := controlOf(snap).Paused; got != paused {
		t.Errorf("the screening is paused=%v; the log replays to paused=%v", got, paused)
	}
	if got, _ := snap.Data()["sale"].(map[string]any)["admitPerMinute"].(int64); got != rate {
		t.Errorf("the screening's admitPerMinute is %d; the log replays to %d", got, rate)
	}
	t.Logf("%d entries, %d answered as changes, %d errors (%v), %d faults", len(entries), answeredChanged.Load(), errs.Load(), kinds, p.Faults())
}

// takingsLog is a Takings that answers made-up figures for each stretch it
// is asked about, and remembers the stretches.
type takingsLog struct {
	mu      sync.Mutex
	windows [][2]time.Time
}

func (l *takingsLog) Takings(_ context.Context, _ string, from, to time.Time) (int64, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.windows = append(l.windows, [2]time.Time{from, to})
	return figuresFor(from)
}

// A step that stalls between its counts, which closed a minute, and its
// transaction, past the end of the next minute, leaves no stretch uncounted:
// the next minute begins where the counts ended, not at the minute of the
// transaction (CI's run of 11-29 15:49: a 2-s minute skipped, its holds,
// bookings and takings in no minute).
func TestAStalledStepLeavesNoMinuteUncounted(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 1))
	tk := &takingsLog{}
	const minute = 2 * time.Second
	e.svc = New(e.fs, append(testOptions(e.log), withMinute(minute), WithTakings(tk), WithAdmitterLease(10*time.Second))...)
	e.join("u1")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	a := e.admitter()
	var stalled atomic.Bool
	a.afterCount = func(closing bool) {
		if closing && stalled.CompareAndSwap(false, true) {
			time.Sleep(time.Until(time.Now().Truncate(minute).Add(minute + 200*time.Millisecond)))
		}
	}
	if err := e.run(a, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	if !stalled.Load() {
		t.Fatal("no step closed a minute: nothing stalled")
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if len(tk.windows) < 3 {
		t.Fatalf("%d stretches asked about, want at least 3", len(tk.windows))
	}
	for i, w := range tk.windows {
		if i > 0 && !w[0].Equal(tk.windows[i-1][1]) && !w[0].Equal(tk.windows[i-1][0]) {
			t.Errorf("stretch %d starts at %v, the one before ended at %v: %v uncounted", i, w[0], tk.windows[i-1][1], w[0].Sub(tk.windows[i-1][1]))
		}
	}
}

// figuresFor are the made-up takings of the stretch from from.
func figuresFor(from time.Time) (int64, int64, int64, error) {
	n := from.UnixMilli() % 997
	return 100 + n, 10 + n, n % 3, nil
}

// With a Takings (a priced sale, CONTRACT §10), each minute carries the
// revenue, refunds and late payments of exactly its own stretch: the
// stretches asked about follow one another without gap or overlap.
func TestSaleStatsMinutesCarryTheTakings(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 1))
	tk := &takingsLog{}
	e.svc = New(e.fs, append(testOptions(e.log), withMinute(2*time.Second), WithTakings(tk))...)
	e.join("u1")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	// 10 s of 2-s minutes: at least two are written even when a loaded
	// machine costs the admitter its 2-s lease once (CI's run of 11-29
	// 13:20 wrote one in 7 s).
	if err := e.run(e.admitter(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	snaps, err := e.fs.Collection(Stats).Doc(e.id).Collection("minutes").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if len(snaps) < 2 || len(tk.windows) < len(snaps) {
		t.Fatalf("%d minutes written, %d stretches asked about", len(snaps), len(tk.windows))
	}
	asked := map[time.Time]bool{}
	for i, w := range tk.windows {
		asked[w[0]] = true
		if i > 0 && !w[0].Equal(tk.windows[i-1][1]) && !w[0].Equal(tk.windows[i-1][0]) {
			t.Errorf("stretch %d starts at %v, the one before ended at %v", i, w[0], tk.windows[i-1][1])
		}
	}
	for _, s := range snaps {
		var m Minute
		if err := s.DataTo(&m); err != nil {
			t.Fatal(err)
		}
		var from time.Time
		for f := range asked {
			if e.svc.o.minuteKey(f) == s.Ref.ID {
				from = f
			}
		}
		rev, ref, late, _ := figuresFor(from)
		if from.IsZero() || m.Revenue != rev || m.Refunds != ref || m.LatePayments != late {
			t.Errorf("minute %s: revenue %d, refunds %d, late %d; want %d, %d, %d (its stretch from %v)", s.Ref.ID, m.Revenue, m.Refunds, m.LatePayments, rev, ref, late, from)
		}
	}
}
