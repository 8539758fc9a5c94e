package sale

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// seatMapVersions records every version of seatMaps/{id} a listener sees.
type seatMapVersions struct {
	mu sync.Mutex
	v  []SeatMap
}

func (e *env) watchSeatMap(ctx context.Context) *seatMapVersions {
	e.t.Helper()
	out := &seatMapVersions{}
	it := e.fs.Collection(SeatMaps).Doc(e.id).Snapshots(ctx)
	go func() {
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				return
			}
			var m SeatMap
			if snap.Exists() && snap.DataTo(&m) == nil {
				out.mu.Lock()
				out.v = append(out.v, m)
				out.mu.Unlock()
			}
		}
	}()
	return out
}

func (s *seatMapVersions) all() []SeatMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SeatMap(nil), s.v...)
}

// waitFor waits (up to within) for a version showing want, and returns it.
func (s *seatMapVersions) waitFor(t *testing.T, want string, within time.Duration) SeatMap {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v := s.all()
		for _, m := range v {
			if m.Seats == want {
				return m
			}
		}
		if time.Now().After(deadline) {
			last := "none"
			if len(v) > 0 {
				last = v[len(v)-1].Seats
			}
			t.Fatalf("the seat map never showed %q within %v; last %q", want, within, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setSeat writes a seat document as booking does, and returns its commit
// time; status "" deletes it.
func (e *env) setSeat(seat, status string, heldUntil time.Time) time.Time {
	e.t.Helper()
	ref := e.fs.Collection(booking.Screenings).Doc(e.id).Collection(booking.SeatsCollection).Doc(seat)
	var (
		res *firestore.WriteResult
		err error
	)
	switch status {
	case "":
		if _, err := ref.Delete(context.Background()); err != nil {
			e.t.Fatal(err)
		}
		return e.serverNow() // a deletion's result has no time
	case booking.StatusBooked:
		res, err = ref.Set(context.Background(), map[string]any{"status": status, "bookingId": "b-" + seat, "bookedAt": firestore.ServerTimestamp})
	default:
		res, err = ref.Set(context.Background(), map[string]any{"status": status, "holdId": "h-" + seat, "heldUntil": heldUntil})
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return res.UpdateTime
}

// The sale's seat map is one document, one character a seat in layout
// order, that follows the seats within about a second of each change
// (CONTRACT §7a): bookings, holds, a hold's end by Firestore's clock (its
// document still there), and a freed seat. Writes are a second apart at
// least, however fast the seats change.
func TestTheSeatMapFollowsTheSeats(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 2, 3, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	// A lease a stall cannot cost: CI's run of 11-29 14:42 stalled the
	// machine past the tests' 2-s admitter lease, the publisher stopped,
	// and the map missed its 5 s. What this test follows is the map.
	e.svc = New(e.fs, append(testOptions(e.log), WithAdmitterLease(10*time.Second))...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	done := make(chan error, 1)
	go func() { done <- e.admitter().Run(ctx, time.Now().Add(20*time.Second)) }()
	maps.waitFor(t, "......", 5*time.Second)

	var lags []time.Duration
	changed := func(want string, at time.Time) {
		t.Helper()
		m := maps.waitFor(t, want, 5*time.Second)
		lags = append(lags, m.UpdatedAt.Sub(at))
	}
	changed("b.....", e.setSeat("A1", booking.StatusBooked, time.Time{}))
	now := e.serverNow()
	e.setSeat("B2", booking.StatusHeld, now.Add(2*time.Second))
	changed("b.h.h.", e.setSeat("A3", booking.StatusHeld, now.Add(time.Hour)))
	// The hold on B2 ends with its document still there; A3's goes on.
	m := maps.waitFor(t, "b.h...", 5*time.Second)
	if m.UpdatedAt.Before(now.Add(2 * time.Second)) {
		t.Errorf("B2 showed free at %v, before its hold's end %v", m.UpdatedAt, now.Add(2*time.Second))
	}
	changed("..h...", e.setSeat("A1", "", time.Time{}))
	// A burst of changes: the map is written a second apart at least.
	for _, seat := range []string{"A1", "A2", "B1", "B2", "B3"} {
		e.setSeat(seat, booking.StatusBooked, time.Time{})
	}
	maps.waitFor(t, "bbhbbb", 5*time.Second)
	v := maps.all()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for i := 1; i < len(v); i++ {
		// The writes are spaced by the admitter's clock and stamped by
		// Firestore's; allow a little between the two.
		if gap := v[i].UpdatedAt.Sub(v[i-1].UpdatedAt); gap < seatMapEvery-100*time.Millisecond {
			t.Errorf("seat map versions %d and %d were written %v apart, want a second at least", i-1, i, gap)
		}
	}
	t.Logf("%d versions; lag from a seat's commit to the map's: %v", len(v), lags)
}

// A publisher whose lease is gone writes nothing: its commits are fenced
// by the sale's lease, so a stale admitter never overwrites the map of the
// one that took the sale over.
func TestAStalePublisherWritesNoSeatMap(t *testing.T) {
	t.Parallel()
	if wrote := stalePublisherWrites(t, false); wrote != "" {
		t.Fatalf("a publisher whose lease was released by force wrote %q", wrote)
	}
	// Negative control: unguarded, the stale publisher's write lands.
	if wrote := stalePublisherWrites(t, true); wrote != ".b." {
		t.Fatalf("the planted unguarded publisher wrote %q, want .b.: the test cannot see a stale write", wrote)
	}
}

// stalePublisherWrites runs a publisher, releases its lease by force,
// books a seat, and returns what the publisher wrote after ("": nothing).
func stalePublisherWrites(t *testing.T, unguarded bool) string {
	e := newEnv(t, 1, 3, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	a := e.admitter()
	a.seatMapUnguarded = unguarded
	lease, err := a.locker.TryAcquire(ctx, "admit-"+e.id)
	if err != nil {
		t.Fatal(err)
	}
	// No keep-alive: this publisher never learns that its lease has gone,
	// as a stale one would not before its next renewal.
	go a.publishSeatMap(ctx, e.id, lease, nil)
	maps.waitFor(t, "...", 5*time.Second)

	info, err := lock.Inspect(ctx, e.fs, Locks+"/admit-"+e.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.ForceRelease(ctx, e.fs, info, "test", "a stale admitter"); err != nil {
		t.Fatal(err)
	}
	e.setSeat("A2", booking.StatusBooked, time.Time{})
	time.Sleep(2500 * time.Millisecond) // past the second between writes, and many retries
	for _, m := range maps.all() {
		if m.Seats != "..." {
			return m.Seats
		}
	}
	return ""
}

// A run of one pass (a manual trigger; the web tests' admitter) publishes
// the seat map too, from a read of the seats, a second apart at least.
func TestAOnePassRunPublishesTheSeatMap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 3, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	pass := func() SeatMap {
		t.Helper()
		if err := e.admitter().Run(context.Background(), time.Time{}); err != nil {
			t.Fatal(err)
		}
		snap, err := e.fs.Collection(SeatMaps).Doc(e.id).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var m SeatMap
		if err := snap.DataTo(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	e.setSeat("A1", booking.StatusBooked, time.Time{})
	first := pass()
	if first.Seats != "b.." {
		t.Fatalf("after one pass the map is %q, want b..", first.Seats)
	}
	e.setSeat("A3", booking.StatusHeld, e.serverNow().Add(time.Hour))
	if m := pass(); m.Seats != "b.." && m.UpdatedAt.Sub(first.UpdatedAt) < seatMapEvery-100*time.Millisecond {
		t.Fatalf("a pass rewrote the map %v after the last write", m.UpdatedAt.Sub(first.UpdatedAt))
	}
	time.Sleep(seatMapEvery)
	if m := pass(); m.Seats != "b.h" {
		t.Fatalf("a pass a second later left the map at %q, want b.h", m.Seats)
	}
}

// Two admitters take the sale from each other through faults (answers
// dropped or late, connections reset) while eight writers change the
// seats at random. Once the seats stop changing and the faults heal, the
// map shows exactly what the seat documents say, within a few seconds;
// and it was never written twice within a second (judged on the versions
// a listener saw).
func TestTheSeatMapConvergesThroughFaultsAndTakeovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 10, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	a, pa := e.faultyAdmitter()
	b, pb := e.faultyAdmitter()
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	var runs sync.WaitGroup
	for _, adm := range []*Admitter{a, b} {
		runs.Go(func() { adm.Run(runCtx, time.Now().Add(time.Minute)) })
	}
	seats := Layout(booking.Screening{Rows: []string{"A", "B"}, SeatsPerRow: 10})
	now := e.serverNow()
	stop := time.Now().Add(6 * time.Second)
	var writers sync.WaitGroup
	for w := range 8 {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for time.Now().Before(stop) {
				seat := seats[rng.IntN(len(seats))]
				switch rng.IntN(4) {
				case 0:
					e.setSeat(seat, "", time.Time{})
				case 1:
					e.setSeat(seat, booking.StatusBooked, time.Time{})
				case 2:
					e.setSeat(seat, booking.StatusHeld, now.Add(time.Hour))
				case 3:
					e.setSeat(seat, booking.StatusHeld, now.Add(-time.Second)) // lapsed already
				}
				time.Sleep(time.Duration(20+rng.IntN(80)) * time.Millisecond)
			}
		})
	}
	writers.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 99))
		for time.Now().Before(stop) {
			p := []*firelocktest.Proxy{pa, pb}[rng.IntN(2)]
			switch rng.IntN(3) {
			case 0:
				p.DropAnswers(100 * time.Millisecond)
			case 1:
				p.Delay(time.Duration(200+rng.IntN(600)) * time.Millisecond)
			case 2:
				p.Reset()
			}
			time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
			p.Heal()
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		}
	})
	writers.Wait()
	pa.Heal()
	pb.Heal()

	// The truth: every seat document as stored now.
	want := e.storedSeatMap(t, seats, now)
	got := maps.waitFor(t, want, 15*time.Second)
	stopRuns()
	runs.Wait()
	v := maps.all()
	for i := 1; i < len(v); i++ {
		if gap := v[i].UpdatedAt.Sub(v[i-1].UpdatedAt); gap < seatMapEvery-100*time.Millisecond {
			t.Errorf("seat map versions %d and %d were written %v apart, want a second at least", i-1, i, gap)
		}
	}
	t.Logf("converged to %s at %v; %d versions; faults %d + %d", got.Seats, got.UpdatedAt.Format("15:04:05.000"), len(v), pa.Faults(), pb.Faults())
}

// A row added to the screening during a sale shows on the seat map: the
// publisher reads the layout again when the screening changes, not once
// per run (issue #36.5).
func TestTheSeatMapFollowsALayoutChange(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 2, 3, saleOpening(time.Now().Add(time.Hour), 60, 10, 60))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	maps := e.watchSeatMap(ctx)
	done := make(chan error, 1)
	go func() { done <- e.admitter().Run(ctx, time.Now().Add(20*time.Second)) }()
	maps.waitFor(t, "......", 5*time.Second)
	e.setSeat("A1", booking.StatusBooked, time.Time{})
	maps.waitFor(t, "b.....", 5*time.Second)
	screening := e.fs.Collection(booking.Screenings).Doc(e.id)
	if _, err := screening.Update(ctx, []firestore.Update{{Path: "rows", Value: []string{"A", "B", "C"}}}); err != nil {
		t.Fatal(err)
	}
	maps.waitFor(t, "b........", 5*time.Second)
	e.setSeat("C3", booking.StatusBooked, time.Time{})
	maps.waitFor(t, "b.......b", 5*time.Second)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A commit the store answered Canceled is tried again at once, up to
// seatMapCancelledRetries in a row (the emulator fails one commit for each
// closed listener it has not forgotten: see there); any other failure, and
// Canceled past that, after seatMapRetry.
func TestRetryPublishAtOnceAfterACancelledCommit(t *testing.T) {
	cancelled := status.Error(codes.Canceled, "call already cancelled. Use ServerCallStreamObserver.setOnCancelHandler() to disable this exception")
	for _, c := range []struct {
		err       error
		cancelled int
		want      time.Duration
	}{
		{cancelled, 0, 0},
		{cancelled, seatMapCancelledRetries - 1, 0},
		{cancelled, seatMapCancelledRetries, seatMapRetry},
		{status.Error(codes.Unavailable, "connection reset"), 0, seatMapRetry},
		{status.Error(codes.DeadlineExceeded, "slow"), 0, seatMapRetry},
		{errors.New("lock: guard: the lease has gone"), 0, seatMapRetry},
	} {
		if got := retryPublish(c.err, c.cancelled); got != c.want {
			t.Errorf("retryPublish(%v, %d) = %v, want %v", c.err, c.cancelled, got, c.want)
		}
	}
}

// storedSeatMap is the seat map that the stored seat documents make, in
// the order of seats: 'b' booked, 'h' held past now, '.' otherwise.
func (e *env) storedSeatMap(t *testing.T, seats []string, now time.Time) string {
	t.Helper()
	snaps, err := e.fs.Collection(booking.Screenings).Doc(e.id).Collection(booking.SeatsCollection).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(strings.Repeat(".", len(seats)))
	index := map[string]int{}
	for i, s := range seats {
		index[s] = i
	}
	for _, s := range snaps {
		switch s.Data()["status"] {
		case booking.StatusBooked:
			want[index[s.Ref.ID]] = 'b'
		case booking.StatusHeld:
			if until, _ := s.Data()["heldUntil"].(time.Time); until.After(now) {
				want[index[s.Ref.ID]] = 'h'
			}
		}
	}
	return string(want)
}

// A failing read of every seat (readAfresh) is tried again after
// seatMapRetry, then less and less often, up to seatMapBehind: each try
// reads every seat document, so a store that refuses them for a while is
// not asked five times a second.
func TestReadingEverySeatAgainBacksOff(t *testing.T) {
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, seatMapBehind, seatMapBehind}
	for i, w := range want {
		if got := afreshBackoff(i + 1); got != w {
			t.Errorf("after %d failures: wait %v, want %v", i+1, got, w)
		}
	}
}
