package sale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/jobs"
)

// spearman is the rank correlation of two orderings of the same n items:
// xs[i] and ys[i] are item i's ranks (0..n-1, no ties).
func spearman(xs, ys []int) float64 {
	n := float64(len(xs))
	var d2 float64
	for i := range xs {
		d := float64(xs[i] - ys[i])
		d2 += d * d
	}
	return 1 - 6*d2/(n*(n*n-1))
}

// maxRho: over 200 early joiners a random draw gives |ρ| above 0.3 with
// odds of about 1 in 100,000 (ρ's spread is 1/√199 ≈ 0.07); a draw that
// followed join order gives ρ = 1.
const maxRho = 0.3

// rankOf gives each index its rank under less.
func rankOf(n int, less func(i, j int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, less)
	ranks := make([]int, n)
	for r, i := range idx {
		ranks[i] = r
	}
	return ranks
}

func TestSpearmanCheckerFailsADrawInJoinOrder(t *testing.T) {
	// Negative control for the fairness check below: orders that follow
	// join order (or its reverse) are caught.
	n := 200
	joined := rankOf(n, func(i, j int) int { return cmp.Compare(i, j) })
	if rho := spearman(joined, joined); math.Abs(rho) <= maxRho {
		t.Fatalf("join-ordered draw: ρ = %v passes the check", rho)
	}
	reversed := rankOf(n, func(i, j int) int { return cmp.Compare(j, i) })
	if rho := spearman(joined, reversed); math.Abs(rho) <= maxRho {
		t.Fatalf("reverse-ordered draw: ρ = %v passes the check", rho)
	}
}

// Everyone who joined before opensAt is ranked by a random draw and
// admitted before anyone who joined later; later joiners go in join order;
// the first admissions come within 2 s of the opening.
func TestEarlyJoinersAreDrawnAtRandomAndAdmittedBeforeLaterOnes(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1000, 60))
	ctx := context.Background()
	const early, late = 200, 6
	var joined []Place
	for i := range early {
		p := e.join(fmt.Sprintf("early-%03d", i))
		if p.Order != "" {
			t.Fatalf("an early joiner's order is visible before opensAt: %q", p.Order)
		}
		joined = append(joined, p)
	}
	draws, err := e.fs.Collection(Draws).Where("screeningId", "==", e.id).Documents(ctx).GetAll()
	if err != nil || len(draws) != early {
		t.Fatalf("%d draws (%v), want %d", len(draws), err, early)
	}
	opensAt := e.serverNow().Add(time.Second)
	e.setSale(map[string]any{"opensAt": opensAt})

	done := make(chan error, 1)
	go func() { done <- e.run(e.admitter(), 5*time.Second) }()
	for time.Now().Before(opensAt.Add(300 * time.Millisecond)) {
		time.Sleep(50 * time.Millisecond)
	}
	for i := range late {
		p := e.join(fmt.Sprintf("late-%d", i))
		if !strings.HasPrefix(p.Order, latePrefix) || p.JoinedAt.Before(opensAt) {
			t.Fatalf("a later joiner: %+v", p)
		}
		joined = append(joined, p)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	byID := map[string]Place{}
	for _, p := range e.places() {
		byID[p.ID] = p
	}
	var all []Place
	for _, j := range joined {
		p := byID[j.ID]
		if p.Status != StatusAdmitted || p.AdmittedAt == nil {
			t.Fatalf("%s not admitted: %+v", p.UID, p)
		}
		all = append(all, p)
	}
	// Admission follows order, and every early joiner sorts before every
	// later one.
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(x, y Place) int { return cmp.Compare(x.Order, y.Order) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].AdmittedAt.Before(*sorted[i-1].AdmittedAt) {
			t.Fatalf("%s (order %s) admitted before %s (order %s)", sorted[i].UID, sorted[i].Order, sorted[i-1].UID, sorted[i-1].Order)
		}
	}
	for i, p := range sorted {
		if isEarly := strings.HasPrefix(p.UID, "early-"); isEarly != (i < early) {
			t.Fatalf("place %d in order is %s", i, p.UID)
		}
	}
	// Later joiners in join order.
	for i := early + 1; i < len(all); i++ {
		if all[i].Order <= all[i-1].Order {
			t.Fatalf("later joiners out of join order: %s before %s", all[i].Order, all[i-1].Order)
		}
	}
	// The draw does not follow join order.
	joinRank := rankOf(early, func(i, j int) int { return cmp.Compare(i, j) })
	orderRank := rankOf(early, func(i, j int) int { return cmp.Compare(all[i].Order, all[j].Order) })
	rho := spearman(joinRank, orderRank)
	t.Logf("Spearman ρ of join order and draw over %d early joiners: %.3f", early, rho)
	if math.Abs(rho) > maxRho {
		t.Fatalf("the draw follows join order: ρ = %.3f", rho)
	}
	first := *sorted[0].AdmittedAt
	if d := first.Sub(opensAt); d < 0 || d > 2*time.Second {
		t.Fatalf("first admission %v after opensAt, want within 2s", d)
	}
	if n, _ := countOf(ctx, e.fs.Collection(Draws).Query, nil); n != 0 {
		t.Fatalf("%d draws left after the ranking", n)
	}
}

// meteringViolations checks what Firestore holds after admitters ran: no
// place admitted twice (the state's count of admissions equals the places
// that carry one), at most admitPerMinute admissions in any window, at most
// maxActive passes live at any instant (a pass lives from admittedAt to
// passUntil, or to doneAt).
func meteringViolations(places []Place, doneAt map[string]time.Time, st admitState, admitPerWindow, maxActive int, window time.Duration) []string {
	var bad []string
	var admitted []Place
	for _, p := range places {
		if p.AdmittedAt != nil {
			admitted = append(admitted, p)
		}
	}
	if int64(len(admitted)) != st.Admitted {
		bad = append(bad, fmt.Sprintf("%d admissions made, %d places admitted: a place was admitted twice", st.Admitted, len(admitted)))
	}
	slices.SortFunc(admitted, func(x, y Place) int { return x.AdmittedAt.Compare(*y.AdmittedAt) })
	for i, p := range admitted {
		n := 0
		for _, q := range admitted[i:] {
			if q.AdmittedAt.Sub(*p.AdmittedAt) < window {
				n++
			}
		}
		if n > admitPerWindow {
			bad = append(bad, fmt.Sprintf("%d admissions within %v from %v (at most %d)", n, window, p.AdmittedAt, admitPerWindow))
		}
		live := 0
		for _, q := range admitted {
			end := *q.PassUntil
			if d, ok := doneAt[q.ID]; ok && d.Before(end) {
				end = d
			}
			if !q.AdmittedAt.After(*p.AdmittedAt) && p.AdmittedAt.Before(end) {
				live++
			}
		}
		if live > maxActive {
			bad = append(bad, fmt.Sprintf("%d passes live at %v (at most %d)", live, p.AdmittedAt, maxActive))
		}
	}
	return bad
}

// meteringRun joins n users to a sale that opens at once, runs two
// admitters concurrently for d, and returns what the checker finds.
func meteringRun(t *testing.T, d time.Duration, plant func(a, b *Admitter)) []string {
	const n, perWindow, maxActive = 24, 4, 3
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), perWindow, maxActive, 1))
	e.joinAndOpen(n)
	a, b := e.admitter(), e.admitter()
	plant(a, b)
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = e.run(a, d) })
	wg.Go(func() { errs[1] = e.run(b, d) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	places := e.places()
	admitted := 0
	for _, p := range places {
		if p.AdmittedAt != nil {
			admitted++
		}
	}
	t.Logf("%d of %d admitted in %v by two admitters", admitted, n, d)
	if admitted < perWindow {
		t.Fatalf("only %d admitted", admitted)
	}
	return meteringViolations(places, nil, e.state(), perWindow, maxActive, 2*time.Second)
}

// Two admitters at once (a duplicate run, a takeover) never admit a place
// twice, never pass the rate, never pass maxActive: judged on what
// Firestore holds afterwards.
func TestTwoAdmittersKeepRateAndMaxActive(t *testing.T) {
	t.Parallel() // its own project; judged on what Firestore holds
	if bad := meteringRun(t, 5*time.Second, func(a, b *Admitter) {}); len(bad) > 0 {
		t.Fatalf("metering violated:\n%s", strings.Join(bad, "\n"))
	}
}

// Negative control: an admitter that ignores the rate and maxActive is
// caught by the same checker.
func TestMeteringCheckerCatchesAnAdmitterIgnoringItsLimits(t *testing.T) {
	bad := meteringRun(t, 2*time.Second, func(a, b *Admitter) { a.ignoreLimits, b.ignoreLimits = true, true })
	if len(bad) == 0 {
		t.Fatal("the checker passed admitters that ignored their limits")
	}
	t.Logf("the checker found %d violations, e.g. %s", len(bad), bad[0])
}

// An admitter that crashes mid-run (its lease left to end by itself) loses
// no place: the next admitter takes the sale over when the lease ends and
// admits everyone, once, in order.
func TestCrashMidRunLosesNoPlace(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 4, 1))
	const n = 12
	e.joinAndOpen(n)
	crashing := e.admitter()
	crashing.crash = func(admitted int64) bool { return admitted > 0 }
	if err := e.run(crashing, 5*time.Second); !errors.Is(err, errCrash) {
		t.Fatalf("crashing run: %v", err)
	}
	crashedWith := e.state().Admitted
	if crashedWith == 0 || crashedWith >= n {
		t.Fatalf("the crash came after %d admissions", crashedWith)
	}
	if err := e.run(e.admitter(), 7*time.Second); err != nil {
		t.Fatal(err)
	}
	places := e.places()
	if len(places) != n {
		t.Fatalf("%d places, want %d", len(places), n)
	}
	slices.SortFunc(places, func(x, y Place) int { return cmp.Compare(x.Order, y.Order) })
	for i, p := range places {
		if p.AdmittedAt == nil {
			t.Fatalf("%s was never admitted: %+v", p.UID, p)
		}
		if i > 0 && p.AdmittedAt.Before(*places[i-1].AdmittedAt) {
			t.Fatalf("%s admitted out of order", p.UID)
		}
	}
	if bad := meteringViolations(places, nil, e.state(), 600, 4, 2*time.Second); len(bad) > 0 {
		t.Fatalf("after the takeover: %s", strings.Join(bad, "\n"))
	}
}

// A pass that reaches passUntil is marked expired within 2 s, and the next
// place is admitted within 2 s of the pass's end.
func TestPassesExpireAndFreeTheirSlot(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 1))
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	if err := e.run(e.admitter(), 4*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The draw decides who goes first.
	ps := e.places()
	slices.SortFunc(ps, func(x, y Place) int { return cmp.Compare(x.Order, y.Order) })
	first, second := ps[0], ps[1]
	snap, err := e.fs.Collection(Queue).Doc(first.ID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := placeOf(snap)
	if p1.Status != StatusExpired {
		t.Fatalf("first pass: %+v", p1)
	}
	// The expiry is the place's last write: its update time is when.
	if d := snap.UpdateTime.Sub(*p1.PassUntil); d < 0 || d > 2*time.Second {
		t.Fatalf("marked expired %v after passUntil, want within 2s", d)
	}
	snap, err = e.fs.Collection(Queue).Doc(second.ID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := placeOf(snap)
	if p2.AdmittedAt == nil {
		t.Fatalf("second never admitted: %+v", p2)
	}
	if d := p2.AdmittedAt.Sub(*p1.PassUntil); d < 0 || d > 2*time.Second {
		t.Fatalf("second admitted %v after the first pass ended, want within 2s", d)
	}
}

// done (the user booked and holds nothing) ends a pass early and frees
// its slot within 2 s.
func TestDoneFreesASlot(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	ctx := context.Background()
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	runDone := make(chan error, 1)
	go func() { runDone <- e.run(e.admitter(), 4*time.Second) }()

	// Whoever is admitted first books two seats as booking does: the gate
	// decides on the pass read in the transaction, whose commit carries
	// its updates.
	var doneTime time.Time
	var first string
	deadline := time.Now().Add(3 * time.Second)
	for doneTime.IsZero() && time.Now().Before(deadline) {
		for _, uid := range []string{"u1", "u2"} {
			err := e.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				sc, err := tx.Get(e.fs.Collection(booking.Screenings).Doc(e.id))
				if err != nil {
					return err
				}
				pass, err := tx.Get(e.svc.Pass(e.id, uid))
				if err != nil {
					return err
				}
				ups, err := e.svc.Admit(sc, pass, booking.Claim{Kind: booking.ClaimBooking, ID: "b1", UID: uid, ScreeningID: e.id, Seats: []string{"A1", "A2"}}, pass.ReadTime)
				if err != nil {
					return err
				}
				return tx.Update(pass.Ref, ups)
			})
			if errors.Is(err, booking.ErrNotAdmitted) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			snap, _ := e.svc.Pass(e.id, uid).Get(ctx)
			if snap.Data()["status"] != StatusDone {
				t.Fatalf("a booking with nothing held left the pass %v", snap.Data()["status"])
			}
			doneTime, first = snap.UpdateTime, uid
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if doneTime.IsZero() {
		t.Fatal("nobody was admitted")
	}
	second := map[string]string{"u1": "u2", "u2": "u1"}[first]
	snap, err := e.svc.Pass(e.id, second).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := placeOf(snap)
	if p2.AdmittedAt == nil {
		t.Fatalf("%s never admitted after %s was done: %+v", second, first, p2)
	}
	if d := p2.AdmittedAt.Sub(doneTime); d < 0 || d > 2*time.Second {
		t.Fatalf("%s admitted %v after %s was done, want within 2s", second, d, first)
	}
}

// A sale that turns misconfigured admits nobody and says why at ERROR.
func TestMisconfiguredSaleAdmitsNobody(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 10, 60))
	e.join("u1")
	e.setSale(map[string]any{"opensAt": e.serverNow(), "admitPerMinute": 0})
	if err := e.run(e.admitter(), 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, p := range e.places() {
		if p.Status != StatusWaiting {
			t.Fatalf("a misconfigured sale admitted %s", p.UID)
		}
	}
	if log := e.log.String(); !strings.Contains(log, `"level":"ERROR"`) || !strings.Contains(log, "admitPerMinute must be a whole number from 1") {
		t.Fatalf("no ERROR naming the problem; log:\n%s", log)
	}
}

// marks let a client estimate how many wait ahead of it: with admission
// stalled (maxActive reached), every published mark is exact, early marks
// from the ranking and late ones from counting the line.
func TestMarksCountThePlacesAhead(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 5, 60))
	for i := range 40 {
		e.join(fmt.Sprintf("early-%02d", i))
	}
	opensAt := e.serverNow()
	e.setSale(map[string]any{"opensAt": opensAt})
	runDone := make(chan error, 1)
	go func() { runDone <- e.run(e.admitter(), 7*time.Second) }()
	time.Sleep(1500 * time.Millisecond)
	for i := range 10 {
		e.join(fmt.Sprintf("late-%02d", i))
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	pub := e.public()
	places := e.places()
	if pub.Admitted != 5 || pub.Active != 5 || pub.Waiting != 45 || pub.State != StateOpen || pub.SeatsLeft != 200 {
		t.Fatalf("public: %+v", pub)
	}
	if len(pub.Marks) < 10 || len(pub.Marks) > MaxMarks {
		t.Fatalf("%d marks", len(pub.Marks))
	}
	late := 0
	for i, m := range pub.Marks {
		if i > 0 && m.Order <= pub.Marks[i-1].Order {
			t.Fatalf("marks out of order: %v", pub.Marks)
		}
		var ahead int64
		for _, p := range places {
			if p.Status == StatusWaiting && p.Order < m.Order {
				ahead++
			}
		}
		if m.Ahead != ahead {
			t.Errorf("mark %s: ahead %d, but %d wait before it", m.Order, m.Ahead, ahead)
		}
		if strings.HasPrefix(m.Order, latePrefix) {
			late++
		}
	}
	if late == 0 {
		t.Fatalf("no mark along the later joiners: %v", pub.Marks)
	}
}

func TestThinKeepsMarksSpreadAndBounded(t *testing.T) {
	var marks []rankMark
	for i := range 250 {
		marks = append(marks, rankMark{Order: fmt.Sprintf("1%05d", i), Rank: int64(i * i)})
	}
	got := thin(slices.Clone(marks), MaxMarks)
	if len(got) != MaxMarks || got[0] != marks[0] || got[len(got)-1] != marks[len(marks)-1] {
		t.Fatalf("thinned to %d: first %v last %v", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Order <= got[i-1].Order {
			t.Fatal("thin broke the order")
		}
	}
}

// An early join that committed after the ranking passed it (it overran
// its join window) is not lost: it is ranked last of the early joiners and
// admitted before any later joiner still waiting.
func TestAStragglingEarlyJoinIsRankedBeforeLaterJoiners(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 100, 60))
	ctx := context.Background()
	e.join("early")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	a := e.admitter()
	if err := e.run(a, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !e.ranking().Done {
		t.Fatal("the ranking is not over")
	}
	// What the overdue commit would have written.
	id := QueueID(e.id, "straggler")
	before := e.serverNow().Add(-5 * time.Second)
	if _, err := e.fs.Batch().
		Create(e.fs.Collection(Draws).Doc(id), map[string]any{"screeningId": e.id, "draw": "00"}).
		Create(e.fs.Collection(Queue).Doc(id), Place{UID: "straggler", ScreeningID: e.id, Status: StatusWaiting, JoinedAt: before, Shard: shardOf(id)}).
		Commit(ctx); err != nil {
		t.Fatal(err)
	}
	later := e.join("later")
	time.Sleep(600 * time.Millisecond) // the later join's window passes
	if err := e.run(a, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	snap, err := e.fs.Collection(Queue).Doc(id).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := placeOf(snap)
	snap, _ = e.fs.Collection(Queue).Doc(later.ID).Get(ctx)
	l, _ := placeOf(snap)
	if !strings.HasPrefix(s.Order, stragglerPrefix) || s.AdmittedAt == nil || l.AdmittedAt == nil || l.AdmittedAt.Before(*s.AdmittedAt) || s.Order >= l.Order {
		t.Fatalf("straggler %+v, later %+v", s, l)
	}
}

// refillGaps: for each pass that ended (passUntil) before the last
// admission, so someone still waited, how long its slot stayed empty (the
// sale admits one at a time: the next admission after its end).
func refillGaps(places []Place) []time.Duration {
	var admitted []time.Time
	for _, p := range places {
		if p.AdmittedAt != nil {
			admitted = append(admitted, *p.AdmittedAt)
		}
	}
	slices.SortFunc(admitted, time.Time.Compare)
	var gaps []time.Duration
	for _, p := range places {
		if p.PassUntil == nil || len(admitted) == 0 || !p.PassUntil.Before(admitted[len(admitted)-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(admitted, *p.PassUntil, time.Time.Compare)
		gaps = append(gaps, admitted[i].Sub(*p.PassUntil))
	}
	return gaps
}

// Two consecutive runs of the job admitQueue: the next one starts at the
// tick its predecessor runs until, but its delivery arrives 3 s late
// (Pub/Sub's push, a cold start). The predecessor keeps the sale across the
// handoff and the next run takes it over as it lets go: a pass that ends
// while people wait is refilled within the contract's 2 s, at the handoff
// too. Both runs go through the jobs Runner, as deliveries do.
func TestConsecutiveRunsHandOverWithoutAGap(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 1))
	e.svc = New(e.fs, append(testOptions(e.log), WithHandover(4*time.Second))...)
	const n, runSeconds, late = 16, 4, 3 * time.Second
	e.joinAndOpen(n)
	deliver := func(id string) error {
		// Each delivery on an admitter of its own, as on another instance.
		r := jobs.New(e.fs, map[string]jobs.Func{AdmitJob: e.admitter().Job()})
		_, err := r.Deliver(context.Background(), "exec-"+id, jobs.Event{Source: "test", ID: id, PublishTime: time.Now(),
			Data: fmt.Appendf(nil, `{"job": %q, "seconds": %d}`, AdmitJob, runSeconds)})
		return err
	}
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = deliver("first") })
	wg.Go(func() {
		time.Sleep(runSeconds*time.Second + late)
		errs[1] = deliver("next")
	})
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	places := e.places()
	gaps := refillGaps(places)
	slices.Sort(gaps)
	if len(gaps) < runSeconds {
		t.Fatalf("only %d passes ended while people waited", len(gaps))
	}
	t.Logf("%d refills, longest %v", len(gaps), gaps[len(gaps)-1])
	if g := gaps[len(gaps)-1]; g > 2*time.Second {
		t.Fatalf("a pass's slot stayed empty %v while people waited (refills %v)", g, gaps)
	}
	if bad := meteringViolations(places, nil, e.state(), 600, 1, 2*time.Second); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// The sale's numbers go out at their cadence (issue #37: every update is a
// read for each person in the line): a change of the counts alone
// (waiting, while people join before the opening) and the line moving
// (admissions, every second here) at most every numbersEvery, and both
// still go out; a change of state at once.
func TestSaleNumbersGoOutAtTheirCadence(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	published := e.watchPublic(ctx)

	// Before the opening, people keep joining: only the counts change.
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		for i := range 40 {
			e.join(fmt.Sprintf("u%02d", i))
			time.Sleep(250 * time.Millisecond)
		}
	}()
	if err := e.run(e.admitter(), 11*time.Second); err != nil {
		t.Fatal(err)
	}
	<-joined
	// Open with one pass of a second at a time: the line moves every second.
	e.setSale(map[string]any{"opensAt": e.serverNow(), "maxActive": 1, "passSeconds": 1})
	if err := e.run(e.admitter(), 11*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the last update reaches the listener
	cancel()

	seen := published()
	var counts, moves int
	for i := 1; i < len(seen); i++ {
		x, y := seen[i-1], seen[i]
		gap := y.UpdatedAt.Sub(x.UpdatedAt)
		if x.State != y.State || samePublic(x, y) {
			continue
		}
		if x.Admitted != y.Admitted {
			moves++
		} else {
			counts++
		}
		if gap < numbersEvery-150*time.Millisecond {
			t.Errorf("the numbers (waiting %d → %d, admitted %d → %d) went out %v after the last update, want at most every %v", x.Waiting, y.Waiting, x.Admitted, y.Admitted, gap, numbersEvery)
		}
	}
	if counts < 1 || moves < 1 {
		t.Errorf("%d updates of the counts alone and %d of the line moving, want them to go out: %+v", counts, moves, seen)
	}
	if last := seen[len(seen)-1]; last.Admitted < 3 {
		t.Errorf("the last update shows %d admitted, want the line's progress published", last.Admitted)
	}
}

// A step's counts are one state of the store, at the step's read time: a
// shopper who books the last seats (her pass done with the same commit)
// after that time, while the step counts, leaves it either her live pass
// and her held seats, or no pass and no seat: never a free slot beside
// seats still free. So nobody is admitted to a sold-out sale. (The Playwright
// queue test saw dave admitted after carol took the last seats: the live
// passes were counted as they were now, the seats as at the read time.)
func TestNobodyIsAdmittedByCountsThatStraddleTheLastBooking(t *testing.T) {
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	ctx := context.Background()
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	a := e.admitter()
	var armed atomic.Bool
	var first atomic.Value // the uid admitted first
	var fired atomic.Bool
	a.beforeCount = func() {
		if !armed.Load() || fired.Swap(true) {
			return
		}
		// She books both seats: the seats booked and her pass done, in one
		// commit, landing after the step's read time.
		uid := first.Load().(string)
		err := e.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			for _, s := range []string{"A1", "A2"} {
				ref := e.fs.Collection(booking.Screenings).Doc(e.id).Collection(booking.SeatsCollection).Doc(s)
				if err := tx.Set(ref, map[string]any{"status": booking.StatusBooked, "bookingId": "b1"}); err != nil {
					return err
				}
			}
			return tx.Update(e.svc.Pass(e.id, uid), []firestore.Update{{Path: "status", Value: StatusDone}})
		})
		if err != nil {
			t.Errorf("book the last seats: %v", err)
		}
	}
	runDone := make(chan error, 1)
	go func() { runDone <- e.run(a, 8*time.Second) }()
	deadline := time.Now().Add(6 * time.Second)
	for first.Load() == nil && time.Now().Before(deadline) {
		for _, p := range e.places() {
			if p.Status == StatusAdmitted {
				first.Store(p.UID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if first.Load() == nil {
		t.Fatal("nobody was admitted")
	}
	// She holds both seats, then the next step's counts straddle her booking.
	until := e.serverNow().Add(time.Minute)
	e.setSeat("A1", booking.StatusHeld, until)
	e.setSeat("A2", booking.StatusHeld, until)
	armed.Store(true)
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if !fired.Load() {
		t.Fatal("no step counted after the seats were held")
	}
	for _, p := range e.places() {
		if p.UID != first.Load().(string) && p.Status != StatusWaiting {
			t.Errorf("%s is %s in a sold-out sale, want waiting", p.UID, p.Status)
		}
	}
	if st := e.public().State; st != StateSoldOut {
		t.Errorf("the sale is %q, want %q", st, StateSoldOut)
	}
}
