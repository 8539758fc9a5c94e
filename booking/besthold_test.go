package booking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
)

// rowLabels are the first n row labels, A, B, ...
func rowLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('A' + i))
	}
	return out
}

// putHall writes screening s1 of rows × perRow seats, starting in an hour.
func putHall(t *testing.T, fs *firestore.Client, rows, perRow int) Screening {
	t.Helper()
	sc := Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: rowLabels(rows), SeatsPerRow: perRow}
	if _, err := fs.Doc("screenings/s1").Set(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

// storedHall is screening s1's hall as Firestore holds it now: a seat is
// free without a document or with a hold that has ended by the read's time.
func storedHall(t *testing.T, fs *firestore.Client, sc Screening) Hall {
	t.Helper()
	h := Hall{Rows: sc.Rows, SeatsPerRow: sc.SeatsPerRow, Free: make([]bool, len(sc.Rows)*sc.SeatsPerRow)}
	for i := range h.Free {
		h.Free[i] = true
	}
	docs, err := fs.Collection("screenings/s1/seats").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if seatState(d, d.ReadTime) != "" {
			i, ok := h.index(d.Ref.ID)
			if !ok {
				t.Fatalf("seat document %s is not a seat of the hall", d.Ref.ID)
			}
			h.Free[i] = false
		}
	}
	return h
}

// drawn draws a hall as hallOf takes it.
func drawn(h Hall) string {
	var b strings.Builder
	for i, f := range h.Free {
		if i > 0 && i%h.SeatsPerRow == 0 {
			b.WriteByte('/')
		}
		if f {
			b.WriteByte('.')
		} else {
			b.WriteByte('x')
		}
	}
	return b.String()
}

// holdDocs counts the hold documents of user uid.
func holdDocs(t *testing.T, fs *firestore.Client, uid string) int {
	t.Helper()
	snaps, err := fs.Collection(Holds).Where("uid", "==", uid).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return len(snaps)
}

func TestHoldBestHoldsTheBestBlockAndARetryAnswersIt(t *testing.T) {
	fs := firelocktest.NewClient(t)
	putHall(t, fs, 3, 6)
	svc := New(fs)
	t.Cleanup(svc.Close)
	ctx := context.Background()
	r := BestRequest{UID: "u1", ScreeningID: "s1", Count: 2, RequestID: "r1"}
	h, created, err := svc.HoldBest(ctx, "e1", r, time.Minute)
	if err != nil || !created {
		t.Fatalf("HoldBest: created %v, %v", created, err)
	}
	if !slices.Equal(h.Seats, []string{"B3", "B4"}) || h.Status != StatusHeld {
		t.Fatalf("held %v (%s), want B3 B4 held: the middle of the row two thirds back", h.Seats, h.Status)
	}
	for _, seat := range h.Seats {
		snap, err := fs.Doc("screenings/s1/seats/" + seat).Get(ctx)
		if err != nil || snap.Data()["holdId"] != h.ID {
			t.Fatalf("seat %s does not show the hold: %v %v", seat, snap.Data(), err)
		}
	}
	// A retry answers the same hold, through a cold instance too.
	cold := New(fs)
	defer cold.Close()
	for _, s := range []*Service{svc, cold} {
		again, created, err := s.HoldBest(ctx, "e2", r, time.Minute)
		if err != nil || created || again.ID != h.ID || !slices.Equal(again.Seats, h.Seats) {
			t.Fatalf("retry: %+v created %v, %v; want the hold %s again", again, created, err, h.ID)
		}
	}
	// The requestId used for another count, or by Hold for other seats: refused.
	if _, _, err := svc.HoldBest(ctx, "e3", BestRequest{UID: "u1", ScreeningID: "s1", Count: 3, RequestID: "r1"}, time.Minute); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("the requestId again for 3 seats: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := svc.Hold(ctx, "e4", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r1"}, time.Minute); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("the requestId again for A1: %v, want ErrInvalidArgument", err)
	}
	if n := holdDocs(t, fs, "u1"); n != 1 {
		t.Fatalf("%d holds of u1, want 1", n)
	}
	checkSeats(t, fs)
}

// A block that another request takes between the choice and the claim is
// left out, and the next block is held: the caller never hears of it.
func TestHoldBestChoosesAgainWhenItsBlockIsTakenMeanwhile(t *testing.T) {
	for _, path := range []string{"one commit", "read first"} {
		t.Run(path, func(t *testing.T) {
			fs := firelocktest.NewClient(t)
			putHall(t, fs, 3, 6)
			svc := New(fs)
			t.Cleanup(svc.Close)
			ctx := context.Background()
			if path == "read first" {
				svc.Close() // keeps no screening current: every claim reads first
			}
			if path == "one commit" { // the screening current and the clock sampled
				if _, _, err := svc.HoldBest(ctx, "w", BestRequest{UID: "w", ScreeningID: "s1", Count: 1, RequestID: "warm"}, time.Minute); err != nil {
					t.Fatal(err)
				}
				for _, ok := svc.screenings.current("s1"); !ok; _, ok = svc.screenings.current("s1") {
					time.Sleep(10 * time.Millisecond)
				}
			}
			// Another instance takes the first seat of the block chosen, just
			// before its commit.
			other := New(fs)
			defer other.Close()
			commits := 0
			var stolen string
			svc.hooks.beforeCommit = func(fast bool) {
				commits++
				if commits > 1 {
					return
				}
				if fast != (path == "one commit") {
					t.Errorf("the claim took the wrong path: one commit %v", fast)
				}
				want := Best(storedHall(t, fs, Screening{Rows: rowLabels(3), SeatsPerRow: 6}), nil, 2, true)
				stolen = (Hall{Rows: rowLabels(3), SeatsPerRow: 6}).SeatIDs(want)[0]
				if _, _, err := other.Hold(ctx, "o", Request{UID: "o", ScreeningID: "s1", Seats: []string{stolen}, RequestID: "o"}, time.Minute); err != nil {
					t.Errorf("the other hold: %v", err)
				}
			}
			h, created, err := svc.HoldBest(ctx, "e", BestRequest{UID: "u", ScreeningID: "s1", Count: 2, RequestID: "r"}, time.Minute)
			if err != nil || !created {
				t.Fatalf("HoldBest: created %v, %v", created, err)
			}
			if commits < 2 || stolen == "" || slices.Contains(h.Seats, stolen) {
				t.Fatalf("held %v after %d commits (%s stolen): want another block after a lost one", h.Seats, commits, stolen)
			}
			checkSeats(t, fs)
		})
	}
}

// 409 no_seats_together only when no block of the count is left, with the
// seats left; single seats still go to a request that takes them apart.
func TestHoldBestAnswersNoSeatsTogetherOnlyWhenNoBlockIsLeft(t *testing.T) {
	fs := firelocktest.NewClient(t)
	sc := putHall(t, fs, 1, 5)
	svc := New(fs)
	t.Cleanup(svc.Close)
	ctx := context.Background()
	if _, _, err := svc.Hold(ctx, "e", Request{UID: "o", ScreeningID: "s1", Seats: []string{"A2", "A4"}, RequestID: "o"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, _, err := svc.HoldBest(ctx, "e", BestRequest{UID: "u", ScreeningID: "s1", Count: 2, RequestID: "pair"}, time.Minute)
	var ne *NoSeatsError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNoSeatsTogether) || ne.SeatsLeft != 3 || Code(err) != "no_seats_together" {
		t.Fatalf("a pair in .x.x.: %v, want no_seats_together with 3 seats left", err)
	}
	if n := holdDocs(t, fs, "u"); n != 0 {
		t.Fatalf("a refused request wrote %d holds", n)
	}
	h, _, err := svc.HoldBest(ctx, "e", BestRequest{UID: "u", ScreeningID: "s1", Count: 3, Apart: true, RequestID: "apart"}, time.Minute)
	if err != nil || !slices.Equal(h.Seats, []string{"A1", "A3", "A5"}) {
		t.Fatalf("three apart: %v, %v; want A1 A3 A5", h.Seats, err)
	}
	_, _, err = svc.HoldBest(ctx, "e", BestRequest{UID: "u", ScreeningID: "s1", Count: 1, RequestID: "one"}, time.Minute)
	if !errors.As(err, &ne) || ne.SeatsLeft != 0 {
		t.Fatalf("one seat of a full hall: %v, want no_seats_together with none left", err)
	}
	if got := drawn(storedHall(t, fs, sc)); got != "xxxxx" {
		t.Fatalf("the hall is %s, want it full", got)
	}
	checkSeats(t, fs)
}

func TestHoldBestRefusesBadInputAndHoldsNothing(t *testing.T) {
	fs := firelocktest.NewClient(t)
	putHall(t, fs, 2, 12)
	svc := New(fs)
	t.Cleanup(svc.Close)
	ctx := context.Background()
	ok := BestRequest{UID: "u", ScreeningID: "s1", Count: 2, RequestID: "r"}
	with := func(f func(*BestRequest)) BestRequest { r := ok; f(&r); return r }
	for _, c := range []struct {
		name string
		r    BestRequest
		d    time.Duration
	}{
		{"count 0", with(func(r *BestRequest) { r.Count = 0 }), 0},
		{"count -1", with(func(r *BestRequest) { r.Count = -1 }), 0},
		{"count 11", with(func(r *BestRequest) { r.Count = 11 }), 0},
		{"no requestId", with(func(r *BestRequest) { r.RequestID = "" }), 0},
		{"no screening", with(func(r *BestRequest) { r.ScreeningID = "" }), 0},
		{"no user", with(func(r *BestRequest) { r.UID = "" }), 0},
		{"a hold of 4 s", ok, 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := svc.HoldBest(ctx, "e", c.r, c.d); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%+v for %v: %v, want ErrInvalidArgument", c.r, c.d, err)
			}
		})
	}
	if n := holdDocs(t, fs, "u"); n != 0 {
		t.Fatalf("bad requests wrote %d holds", n)
	}
	if _, _, err := svc.HoldBest(ctx, "e", with(func(r *BestRequest) { r.ScreeningID = "nope" }), 0); !errors.Is(err, ErrScreeningNotFound) {
		t.Fatalf("an unknown screening: %v", err)
	}
}

// finishBest settles requests whose answer was an error other than a
// refusal (a lost answer, a deadline): a retry with the same requestId, as
// the contract asks of a client, answers what the first attempt did.
func finishBest(t *testing.T, svc *Service, r BestRequest) (Hold, error) {
	t.Helper()
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h, _, err := svc.HoldBest(ctx, "retry", r, time.Minute)
		cancel()
		if err == nil || refusal(err) || errors.Is(err, ErrNoSeatsTogether) || try == 5 {
			return h, err
		}
	}
}

// bestRun is n concurrent requests for count seats each on screening s1
// and what each was finally answered.
type bestRun struct {
	holds   map[string]Hold  // requestId -> the hold answered
	refused map[string]error // requestId -> the refusal answered
	retried int              // requests first answered an error that was no refusal
}

func runBest(t *testing.T, svcs []*Service, retry *Service, round, n, count int, deadline time.Duration) bestRun {
	t.Helper()
	run := bestRun{holds: map[string]Hold{}, refused: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			r := BestRequest{UID: fmt.Sprint("u", i), ScreeningID: "s1", Count: count, RequestID: fmt.Sprintf("r%d-%d", round, i)}
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			h, _, err := svcs[i%len(svcs)].HoldBest(ctx, fmt.Sprint("e", i), r, time.Minute)
			cancel()
			retried := err != nil && !refusal(err) && !errors.Is(err, ErrNoSeatsTogether)
			if retried {
				h, err = finishBest(t, retry, r)
			}
			mu.Lock()
			defer mu.Unlock()
			if retried {
				run.retried++
			}
			if err != nil {
				run.refused[r.RequestID] = err
				return
			}
			run.holds[r.RequestID] = h
		})
	}
	close(start)
	wg.Wait()
	return run
}

// check proves every answer on what Firestore holds: each hold answered is
// stored with exactly its seats, side by side in one row; each request
// refused holds nothing; and the seat invariants (no seat held twice, every
// seat document matching its hold).
func (run bestRun) check(t *testing.T, fs *firestore.Client, count int) {
	t.Helper()
	ctx := context.Background()
	for rid, h := range run.holds {
		snap, err := fs.Collection(Holds).Doc(h.ID).Get(ctx)
		if err != nil {
			t.Errorf("%s was answered hold %s, which is not stored: %v", rid, h.ID, err)
			continue
		}
		var stored Hold
		if err := snap.DataTo(&stored); err != nil || !slices.Equal(stored.Seats, h.Seats) || len(h.Seats) != count {
			t.Errorf("%s was answered %v, the stored hold has %v (%v)", rid, h.Seats, stored.Seats, err)
		}
		row := strings.TrimRight(h.Seats[0], "0123456789")
		var nums []int
		for _, s := range h.Seats {
			var n int
			fmt.Sscanf(strings.TrimPrefix(s, row), "%d", &n)
			nums = append(nums, n)
			if !strings.HasPrefix(s, row) {
				t.Errorf("%s holds %v: not one row", rid, h.Seats)
			}
		}
		slices.Sort(nums)
		if nums[len(nums)-1]-nums[0] != len(nums)-1 {
			t.Errorf("%s holds %v: not side by side", rid, h.Seats)
		}
	}
	for rid, err := range run.refused {
		var round, n int
		fmt.Sscanf(rid, "r%d-%d", &round, &n)
		if snap, gerr := fs.Collection(Holds).Doc(holdID(fmt.Sprint("u", n), rid)).Get(ctx); !notFound(gerr) {
			t.Errorf("%s was refused (%v), yet its hold is stored: %v", rid, err, snap.Data())
		}
	}
	checkSeats(t, fs)
}

// 60 requests at once for 2 seats each on a hall of 100 (10 rows of 10),
// through one instance (the way a function instance serves a burst): 50
// are served, which fills the hall, and the 10 others get
// no_seats_together. No seat is held twice, and the hall ends full: no
// single seat was stranded on the way, which would have left a pair
// unserved. A second hall, 60 requests through three instances.
func TestConcurrentBestHoldsFillTheHallWithoutStrandingASeat(t *testing.T) {
	for _, instances := range []int{1, 3} {
		t.Run(fmt.Sprint("instances=", instances), func(t *testing.T) {
			project := firelocktest.ProjectID(t)
			fs := firelocktest.NewClientFor(t, project)
			sc := putHall(t, fs, 10, 10)
			var svcs []*Service
			for range instances {
				s := New(firelocktest.NewClientFor(t, project))
				t.Cleanup(s.Close)
				svcs = append(svcs, s)
			}
			run := runBest(t, svcs, svcs[0], 0, 60, 2, time.Minute)
			run.check(t, fs, 2)
			hall := storedHall(t, fs, sc)
			stranded := hall.Stranded()
			t.Logf("%d served, %d refused; the hall: %s; stranded: %v", len(run.holds), len(run.refused), drawn(hall), hall.SeatIDs(stranded))
			for rid, err := range run.refused {
				if !errors.Is(err, ErrNoSeatsTogether) {
					t.Errorf("%s: %v, want no_seats_together or a hold", rid, err)
				}
			}
			if instances == 1 && (len(run.holds) != 50 || hall.FreeSeats() != 0) {
				t.Fatalf("%d of 60 requests served, %d seats left free (%v stranded): want 50 and a full hall", len(run.holds), hall.FreeSeats(), hall.SeatIDs(stranded))
			}
			// Across instances a request chooses without the others' claims
			// in flight; a stranded seat is possible there, but a pair is
			// never refused while one is free.
			if Best(hall, nil, 2, true) != nil {
				t.Fatalf("requests were refused while a pair is free: %s", drawn(hall))
			}
		})
	}
}

// The checker goes red on a planted bug: a choice without the orphan rule
// (a random free pair) leaves single seats stranded, and pairs unserved.
func TestBestCheckerCatchesAChoiceWithoutTheOrphanRule(t *testing.T) {
	fs := firelocktest.NewClient(t)
	sc := putHall(t, fs, 10, 10)
	svc := New(fs)
	t.Cleanup(svc.Close)
	rng := rand.New(rand.NewPCG(5, 6))
	var mu sync.Mutex
	svc.hooks.bestChoice = func(h Hall) Block {
		mu.Lock()
		defer mu.Unlock()
		all := BestBlocks(h, nil, 2, true)
		if len(all) == 0 {
			return nil
		}
		return all[rng.IntN(len(all))]
	}
	run := runBest(t, []*Service{svc}, svc, 0, 60, 2, time.Minute)
	hall := storedHall(t, fs, sc)
	t.Logf("planted: %d served; the hall: %s; stranded: %v", len(run.holds), drawn(hall), hall.SeatIDs(hall.Stranded()))
	if len(run.holds) == 50 && len(hall.Stranded()) == 0 {
		t.Fatal("a random choice filled the hall like the orphan rule: the check cannot tell them apart")
	}
}

// The same burst through the fault proxy (answers dropped and delayed,
// connections reset, each request under a 2 s deadline), round after round
// on one hall (each round's holds released before the next) until the
// proxy has injected 5 faults: every answer holds its block or holds
// nothing. A request answered with an error that is not a refusal is sent
// again with its requestId, as a client does, and that answer counts.
func TestBestHoldsUnderFaultsHoldTheirBlockOrNothing(t *testing.T) {
	tp := newTapped(t)
	sc := putHall(t, tp.direct, 10, 10)
	stop := make(chan struct{})
	healed := tp.proxy.InjectAtRandom(t, rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano()))), stop, nil)
	direct := New(tp.direct)
	t.Cleanup(direct.Close)
	ctx := context.Background()
	for round := 0; round < 3 || (tp.proxy.Faults() < 5 && round < 30); round++ {
		run := runBest(t, []*Service{tp.svc}, direct, round, 60, 2, 2*time.Second)
		run.check(t, tp.direct, 2)
		hall := storedHall(t, tp.direct, sc)
		t.Logf("round %d: %d served, %d refused, %d sent again after an error, %d faults so far; stranded: %v",
			round, len(run.holds), len(run.refused), run.retried, tp.proxy.Faults(), hall.SeatIDs(hall.Stranded()))
		if Best(hall, nil, 2, true) != nil {
			t.Fatalf("round %d: requests were refused while a pair is free: %s", round, drawn(hall))
		}
		for rid, h := range run.holds {
			var r, n int
			fmt.Sscanf(rid, "r%d-%d", &r, &n)
			if _, err := direct.ReleaseHold(ctx, fmt.Sprint("u", n), h.ID); err != nil {
				t.Fatal(err)
			}
		}
		if t.Failed() {
			break
		}
	}
	close(stop)
	<-healed
	if tp.proxy.Faults() < 5 {
		t.Fatalf("only %d faults: the run proves nothing about faults", tp.proxy.Faults())
	}
}
