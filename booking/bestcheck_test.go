package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// mapGate is a sale's gate reduced to its seat map: every screening is
// gated, everyone is admitted without a cap, and the map is the document
// seatmaps/{id}, which the test writes (package sale's publisher keeps it a
// second behind the seats).
type mapGate struct{ fs *firestore.Client }

func (g mapGate) Gated(*firestore.DocumentSnapshot) bool { return true }
func (g mapGate) Pass(screeningID, uid string) *firestore.DocumentRef {
	return g.fs.Collection("passes").Doc(screeningID + "-" + uid)
}
func (mapGate) Admit(_, _ *firestore.DocumentSnapshot, _ Claim, _ time.Time) ([]firestore.Update, error) {
	return nil, nil
}
func (mapGate) Settle(*firestore.DocumentSnapshot, Change, time.Time) ([]firestore.Update, error) {
	return nil, nil
}
func (g mapGate) SeatMap(screeningID string) *firestore.DocumentRef {
	return g.fs.Collection("seatmaps").Doc(screeningID)
}
func (mapGate) SeatCap(*firestore.DocumentSnapshot) int { return 0 }
func (mapGate) PaidBooking(_, _ *firestore.DocumentSnapshot, _ Claim, _ bool, _ time.Time) error {
	return nil
}

// A sale's map lags the seats: right after the opening it shows a hall
// that this instance has nearly filled already. A request then reads the
// seats the instance saw taken that stand in the way, in one batched read,
// and claims the one seat left at once, instead of a lost claim on each
// taken seat in turn (which ran out of claims here: 29 taken seats before
// the free one, one learned a claim).
func TestHoldBestReadsTheSeatsTheInstanceSawTakenInOneRead(t *testing.T) {
	ctx := context.Background()
	stats := &rpcstats.Stats{}
	fs := countedClient(t, stats)
	sc := putHall(t, fs, 3, 10)
	svc := New(fs, WithGate(mapGate{fs}))
	t.Cleanup(svc.Close)
	other := New(fs, WithGate(mapGate{fs}))
	t.Cleanup(other.Close)
	// The instance holds the whole hall; the last seat best available
	// would try is released through another instance, so this one still
	// remembers it taken.
	all := (Hall{Rows: sc.Rows, SeatsPerRow: sc.SeatsPerRow}).SeatIDs(Block(seq(30)))
	order := BestBlocks(storedHall(t, fs, sc), nil, 1, true)
	last := (Hall{Rows: sc.Rows, SeatsPerRow: sc.SeatsPerRow}).SeatIDs(order[len(order)-1])[0]
	var lastHold string
	for i := 0; i < len(all); i += MaxSeats {
		seats := all[i:min(i+MaxSeats, len(all))]
		h, _, err := svc.Hold(ctx, "e", Request{UID: "o", ScreeningID: "s1", Seats: seats, RequestID: "o" + seats[0]}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, seat := range seats {
			if seat == last {
				lastHold = h.ID
			}
		}
	}
	if _, err := other.ReleaseHold(ctx, "o", lastHold); err != nil {
		t.Fatal(err)
	}
	// Hold the ten seats of the released hold but the last seat again,
	// through the other instance too.
	var again []string
	for _, seat := range all {
		if strings.HasPrefix(seat, last[:1]) && seat != last {
			again = append(again, seat)
		}
	}
	if _, _, err := other.Hold(ctx, "e", Request{UID: "p", ScreeningID: "s1", Seats: again, RequestID: "again"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The map as published before any of it: all free.
	if _, err := fs.Doc("seatmaps/s1").Set(ctx, map[string]any{"seats": strings.Repeat(".", 30)}); err != nil {
		t.Fatal(err)
	}
	before := stats.Snapshot()
	h, created, err := svc.HoldBest(ctx, "e", BestRequest{UID: "u", ScreeningID: "s1", Count: 1, RequestID: "r"}, time.Minute)
	cost := stats.Snapshot().Sub(before)
	t.Logf("held %v; cost %v", h.Seats, cost)
	if err != nil || !created || len(h.Seats) != 1 || h.Seats[0] != last {
		t.Fatalf("HoldBest: %v created %v, %v; want %s, the one seat left", h.Seats, created, err, last)
	}
	if cost.RPCs["BatchGetDocuments"] != 2 || cost.RPCs["Commit"] != 1 || cost.Calls() != 3 {
		t.Fatalf("a best hold of the last seat cost %v: want the first read, one read of the seats seen taken, and one commit", cost)
	}
	checkSeats(t, fs)
}

// countedClient is a client of the test's project whose RPCs stats counts.
func countedClient(t *testing.T, stats *rpcstats.Stats) *firestore.Client {
	t.Helper()
	fs, err := rpcstats.NewClient(context.Background(), firelocktest.ProjectID(t), stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// seq is 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// A burst of requests that all find only seats the instance saw taken
// read them once between them, not once each: ten requests for one seat
// of a hall of 30 that this instance filled a moment ago, on a map that
// still shows it empty, are all refused on about one read of its seats.
func TestHoldBestRequestsShareTheCheckOfSeatsSeenTaken(t *testing.T) {
	ctx := context.Background()
	stats := &rpcstats.Stats{}
	fs := countedClient(t, stats)
	sc := putHall(t, fs, 3, 10)
	svc := New(fs, WithGate(mapGate{fs}))
	t.Cleanup(svc.Close)
	all := (Hall{Rows: sc.Rows, SeatsPerRow: sc.SeatsPerRow}).SeatIDs(Block(seq(30)))
	for i := 0; i < len(all); i += MaxSeats {
		seats := all[i : i+MaxSeats]
		if _, _, err := svc.Hold(ctx, "e", Request{UID: "o", ScreeningID: "s1", Seats: seats, RequestID: "o" + seats[0]}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fs.Doc("seatmaps/s1").Set(ctx, map[string]any{"seats": strings.Repeat(".", 30)}); err != nil {
		t.Fatal(err)
	}
	before := stats.Snapshot()
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for i := range 10 {
		wg.Go(func() {
			_, _, err := svc.HoldBest(ctx, "e", BestRequest{UID: fmt.Sprint("u", i), ScreeningID: "s1", Count: 1, RequestID: "r"}, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrNoSeatsTogether) {
				refused++
			} else {
				t.Errorf("u%d: %v, want no_seats_together", i, err)
			}
		})
	}
	wg.Wait()
	cost := stats.Snapshot().Sub(before)
	t.Logf("%d refused; %v", refused, cost)
	// Each request's own reads: its first read (4 documents) and its own
	// hold before the refusal (1). The seats are 30 documents a read: read
	// once each, they would be 300.
	if own := 10 * (4 + 1); cost.Reads-own >= 100 {
		t.Fatalf("%d documents read, %d of them beyond the requests' own reads: the seats seen taken were not read once between them", cost.Reads, cost.Reads-own)
	}
	checkSeats(t, fs)
}
