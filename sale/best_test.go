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

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// bestEnv is a gate environment (2 rows of 10, a sale open since a minute
// ago, 6 seats a user) with a booking Service under the sale's gate whose
// RPCs are counted.
type bestEnv struct {
	gateEnv
	stats *rpcstats.Stats
	bk    *booking.Service
}

func newBestEnv(t *testing.T) bestEnv {
	g := newGateEnv(t)
	stats := &rpcstats.Stats{}
	fs, err := rpcstats.NewClient(g.ctx, projectOf(g.fs), stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	bk := booking.New(fs, booking.WithGate(New(fs, testOptions(g.log)...)))
	t.Cleanup(bk.Close)
	return bestEnv{g, stats, bk}
}

// seatMap writes the sale's seat map as its publisher would (rows joined
// without separators).
func (b bestEnv) seatMap(rows ...string) {
	b.t.Helper()
	if _, err := b.fs.Collection(SeatMaps).Doc("s1").Set(b.ctx, map[string]any{"seats": strings.Join(rows, ""), "updatedAt": time.Now()}); err != nil {
		b.t.Fatal(err)
	}
}

func (b bestEnv) best(uid, requestID string, count int) (booking.Hold, error) {
	h, _, err := b.bk.HoldBest(b.ctx, "e", booking.BestRequest{UID: uid, ScreeningID: "s1", Count: count, RequestID: requestID}, time.Minute)
	return h, err
}

// During a sale, best available chooses from the sale's seat map, read
// once with the screening and the pass, reads no seat documents, and
// commits on that read: the map says B4-B7 are held (their documents say
// free), so the pair goes to row A, where nothing is stranded; the pass
// records the hold in the same commit.
func TestBestAvailableDuringASaleChoosesFromTheSeatMap(t *testing.T) {
	b := newBestEnv(t)
	b.pass("s1", "u", StatusAdmitted, time.Now().Add(time.Hour), nil)
	b.seatMap("..........", "...hhhh...")
	before := b.stats.Snapshot()
	h, err := b.best("u", "r1", 2)
	if err != nil {
		t.Fatal(err)
	}
	cost := b.stats.Snapshot().Sub(before)
	t.Logf("held %v; cost %v", h.Seats, cost)
	if !slices.Equal(h.Seats, []string{"A5", "A6"}) {
		t.Fatalf("held %v, want A5 A6: row B's pairs strand a seat by the map", h.Seats)
	}
	if cost.RPCs["RunQuery"] != 0 || cost.RPCs["BatchGetDocuments"] != 1 || cost.RPCs["Commit"] != 1 {
		t.Fatalf("a best hold during a sale cost %v: want one read (the map with the screening and the pass) and one commit on it", cost)
	}
	if got := b.status("u"); got != StatusAdmitted {
		t.Fatalf("the pass is %s", got)
	}
	snap, err := b.svc.Pass("s1", "u").Get(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if holds, _ := snap.Data()[fieldHolds].(map[string]any); holds[h.ID] == nil {
		t.Fatalf("the pass does not count the hold: %v", snap.Data())
	}

	// Without a map yet (the admitter has not written it), the seat documents.
	if _, err := b.fs.Collection(SeatMaps).Doc("s1").Delete(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.pass("s1", "v", StatusAdmitted, time.Now().Add(time.Hour), nil)
	if h, err := b.best("v", "r1", 2); err != nil || !slices.Equal(h.Seats, []string{"B5", "B6"}) {
		t.Fatalf("without a map: %v, %v; want B5 B6 by the seat documents", h.Seats, err)
	}
}

// The gate's checks come before any seat is tried, as for Hold: no pass,
// a pass that has ended, before the opening; a count over the sale's cap
// is a bad request (400), and a count that would take the user past the
// cap with what they hold is seat_limit (409). None holds anything.
func TestBestAvailableDuringASaleKeepsTheGatesChecks(t *testing.T) {
	b := newBestEnv(t)
	b.seatMap(strings.Repeat(".", 20))
	b.pass("s1", "ended", StatusAdmitted, time.Now().Add(-time.Second), nil)
	b.pass("s1", "waiting", StatusWaiting, time.Time{}, nil)
	b.pass("s1", "holder", StatusAdmitted, time.Now().Add(time.Hour), nil)
	if _, err := b.best("holder", "first", 5); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		uid   string
		count int
		want  error
	}{
		{"nobody", 2, booking.ErrNotAdmitted},
		{"ended", 2, booking.ErrNotAdmitted},
		{"waiting", 2, booking.ErrNotAdmitted},
		{"holder", 7, booking.ErrInvalidArgument},
		{"holder", 2, booking.ErrSeatLimit},
	} {
		before := b.stats.Snapshot()
		_, err := b.best(c.uid, "again", c.count)
		if !errors.Is(err, c.want) {
			t.Errorf("%s, %d seats: %v, want %v", c.uid, c.count, err, c.want)
		}
		if cost := b.stats.Snapshot().Sub(before); cost.RPCs["Commit"] != 0 || cost.RPCs["BatchGetDocuments"] != 1 {
			t.Errorf("%s, %d seats: refused after %v, want one read and no commit", c.uid, c.count, cost)
		}
	}
	if got := booking.Code(func() error { _, err := b.best("holder", "again", 7); return err }()); got != "invalid_argument" {
		t.Errorf("7 seats over a cap of 6: %s", got)
	}
	b.setSale(map[string]any{"opensAt": time.Now().Add(time.Hour)})
	if _, err := b.best("holder", "later", 1); !errors.Is(err, booking.ErrSaleNotOpen) {
		t.Errorf("before the opening: %v", err)
	}
	holds, err := b.fs.Collection(booking.Holds).Documents(b.ctx).GetAll()
	if err != nil || len(holds) != 1 {
		t.Fatalf("%d holds (%v), want only the first", len(holds), err)
	}
}

// A stale map (the publisher lags the seats by up to a second) shows a
// block free that somebody has just held: the claim loses, and the next
// block is held; the caller never hears of it.
func TestBestAvailableGoesPastWhatAStaleSeatMapShows(t *testing.T) {
	b := newBestEnv(t)
	b.pass("s1", "u", StatusAdmitted, time.Now().Add(time.Hour), nil)
	b.seatMap(strings.Repeat(".", 20))
	// B5 and B6 (the best pair by the map) were held a moment ago.
	other := booking.New(b.fs)
	defer other.Close()
	if _, _, err := other.Hold(b.ctx, "o", booking.Request{UID: "o", ScreeningID: "s1", Seats: []string{"B5", "B6"}, RequestID: "o"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	h, err := b.best("u", "r", 2)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.Seats, "B5") || slices.Contains(h.Seats, "B6") {
		t.Fatalf("held %v over somebody's hold", h.Seats)
	}
	t.Logf("held %v past the stale map", h.Seats)
}

// The map lags the seats by up to a second: a request that finds no block
// in it reads the seats the map shows held, where their being free would
// make a block, before it answers no_seats_together. A seat whose hold
// ended or was released is held then; with none, it is a refusal after
// that one batched read; a map of booked seats refuses at once.
func TestBestAvailableReadsTheSeatsALaggingMapShowsHeld(t *testing.T) {
	b := newBestEnv(t)
	b.pass("s1", "u", StatusAdmitted, time.Now().Add(time.Hour), nil)
	other := booking.New(b.fs)
	defer other.Close()
	for i, seats := range [][]string{{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10"}, {"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"}} {
		if _, _, err := other.Hold(b.ctx, "o", booking.Request{UID: "o", ScreeningID: "s1", Seats: seats, RequestID: string(rune('a' + i))}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// The map still shows B9 and B10 held: their hold was released a
	// moment ago, say.
	for _, c := range []struct {
		seats string
		want  string // the hold, or "" for no_seats_together
		reads int    // batched reads
	}{
		// the first read, the held seats (the claim commits on the first)
		{strings.Repeat("h", 20), "[B10 B9]", 2},
		// the first read, the held seats, the request's own hold
		{strings.Repeat("h", 20), "", 3},
		// the first read, the request's own hold
		{strings.Repeat("b", 20), "", 2},
	} {
		b.seatMap(c.seats)
		before := b.stats.Snapshot()
		h, err := b.best("u", "r-"+c.want+c.seats[:1], 2)
		cost := b.stats.Snapshot().Sub(before)
		var ne *booking.NoSeatsError
		switch {
		case c.want != "" && (err != nil || fmt.Sprint(h.Seats) != c.want):
			t.Fatalf("a map of %s: %v, %v; want %s", c.seats, h.Seats, err, c.want)
		case c.want == "" && (!errors.As(err, &ne) || ne.SeatsLeft != 0):
			t.Fatalf("a map of %s: %v, want no_seats_together with none left", c.seats, err)
		}
		if cost.RPCs["BatchGetDocuments"] != c.reads {
			t.Fatalf("a map of %s: %v, want %d batched reads", c.seats, cost, c.reads)
		}
	}
}

// Many admitted users ask for pairs at once on a sale's hall of 30 seats
// (room for all), through three instances, while one user asks six times
// at once against a cap of 4. The first claims commit on their first read (the pass as read):
// a pass that another of its user's holds changed fails that commit, and
// the claim is decided again. Afterwards, on what Firestore holds: no seat
// held twice, every pass counts exactly its user's holds, nobody is past
// the cap, and refusals came only when no pair was left or the cap was
// reached.
func TestConcurrentBestHoldsDuringASaleKeepSeatsAndCaps(t *testing.T) {
	e := newEnv(t, 3, 10, map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 10, "maxActive": 30, "passSeconds": 600, "maxSeatsPerUser": 4})
	g := gateEnv{e, context.Background()}
	var svcs []*booking.Service
	for range 3 {
		b := booking.New(e.fs, booking.WithGate(e.svc))
		t.Cleanup(b.Close)
		svcs = append(svcs, b)
	}
	if _, err := e.fs.Collection(SeatMaps).Doc("s1").Set(g.ctx, map[string]any{"seats": strings.Repeat(".", 30), "updatedAt": time.Now()}); err != nil {
		t.Fatal(err)
	}
	type ask struct{ uid, rid string }
	var asks []ask
	for i := range 8 {
		uid := fmt.Sprint("u", i)
		g.pass("s1", uid, StatusAdmitted, time.Now().Add(10*time.Minute), nil)
		asks = append(asks, ask{uid, "r"})
	}
	g.pass("s1", "greedy", StatusAdmitted, time.Now().Add(10*time.Minute), nil)
	for i := range 6 {
		asks = append(asks, ask{"greedy", fmt.Sprint("g", i)})
	}
	var mu sync.Mutex
	answered := map[string]int{}
	var wg sync.WaitGroup
	for i, a := range asks {
		wg.Go(func() {
			_, _, err := svcs[i%len(svcs)].HoldBest(g.ctx, "e", booking.BestRequest{UID: a.uid, ScreeningID: "s1", Count: 2, RequestID: a.rid}, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				answered[a.uid+" held"]++
			case errors.Is(err, booking.ErrSeatLimit) && a.uid == "greedy":
				answered["greedy seat_limit"]++
			case errors.Is(err, booking.ErrNoSeatsTogether):
				answered["no_seats_together"]++
			default:
				t.Errorf("%s %s: %v", a.uid, a.rid, err)
			}
		})
	}
	wg.Wait()
	t.Logf("answers: %v", answered)
	holds, err := e.fs.Collection(booking.Holds).Documents(g.ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	perUser := map[string]int{}
	for _, h := range holds {
		uid := h.Data()["uid"].(string)
		for _, seat := range h.Data()["seats"].([]any) {
			if prev, ok := owner[seat.(string)]; ok {
				t.Errorf("seat %s is in holds %s and %s", seat, prev, h.Ref.ID)
			}
			owner[seat.(string)] = h.Ref.ID
			perUser[uid]++
		}
		pass, err := e.svc.Pass("s1", uid).Get(g.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rec, _ := pass.Data()[fieldHolds].(map[string]any)[h.Ref.ID].(map[string]any); rec == nil || rec["seats"] != int64(2) {
			t.Errorf("the pass of %s does not count hold %s: %v", uid, h.Ref.ID, pass.Data()[fieldHolds])
		}
	}
	for uid, n := range perUser {
		if n > 4 {
			t.Errorf("%s holds %d seats, over the cap of 4", uid, n)
		}
	}
	seats, err := e.fs.Collection("screenings/s1/seats").Documents(g.ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(seats) != len(owner) {
		t.Errorf("%d seat documents for %d seats held", len(seats), len(owner))
	}
	if perUser["greedy"] != 4 || answered["greedy seat_limit"] != 4 || answered["no_seats_together"] != 0 {
		t.Errorf("greedy holds %d seats with %d seat_limit answers (%d no_seats_together), want 4, 4 and none", perUser["greedy"], answered["greedy seat_limit"], answered["no_seats_together"])
	}
	for i := range 8 {
		if uid := fmt.Sprint("u", i); perUser[uid] != 2 {
			t.Errorf("%s holds %d seats, want its pair", uid, perUser[uid])
		}
	}
}

// A burst of best-available requests that all find no block in a map of
// held seats read those seats once between them, not once each: a read of
// the held seats that began after a request's own first read serves it.
// Of ten requests for the one pair whose hold ended, one holds it and nine
// are refused.
func TestBestAvailableRequestsShareTheReadOfHeldSeats(t *testing.T) {
	b := newBestEnv(t)
	other := booking.New(b.fs)
	defer other.Close()
	for i, seats := range [][]string{{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10"}, {"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"}} {
		if _, _, err := other.Hold(b.ctx, "o", booking.Request{UID: "o", ScreeningID: "s1", Seats: seats, RequestID: string(rune('a' + i))}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	b.seatMap(strings.Repeat("h", 20)) // B9 and B10's hold ended a moment ago
	var uids []string
	for i := range 10 {
		uids = append(uids, fmt.Sprint("u", i))
		b.pass("s1", uids[i], StatusAdmitted, time.Now().Add(time.Hour), nil)
	}
	before := b.stats.Snapshot()
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, refused := 0, 0
	for _, uid := range uids {
		wg.Go(func() {
			_, err := b.best(uid, "r", 2)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				held++
			case errors.Is(err, booking.ErrNoSeatsTogether):
				refused++
			default:
				t.Errorf("%s: %v", uid, err)
			}
		})
	}
	wg.Wait()
	cost := b.stats.Snapshot().Sub(before)
	t.Logf("%d held, %d refused; %v", held, refused, cost)
	if held != 1 || refused != 9 {
		t.Fatalf("%d held, %d refused: want the one pair held and nine refused", held, refused)
	}
	// Each request's own reads: its first read (4 documents) and, refused,
	// its own hold (1). Each read of the held seats is 20 documents: read
	// once each, they would be 200.
	if own := 10*4 + 9; cost.Reads-own >= 100 {
		t.Fatalf("%d documents read, %d of them beyond the requests' own reads: the held seats were not read once between them", cost.Reads, cost.Reads-own)
	}
}
