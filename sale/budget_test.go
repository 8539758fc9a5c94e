package sale

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// A busy admitter writes its sale's admission state, saleStates/{id}, at
// most 10 times in any 10 s, and its ranking as seldom (CONTRACT §7: about
// a write a second per document, sustained; issue #48.10: a 2,000-user
// surge wrote saleStates 11 times in 10 s). Busy: people join all the time,
// so that every step has someone to admit, and an operator changes the
// sale every 250 ms, each change waking the admitter at once, on the
// contract's ticks. The writes are counted as Firestore applied them: the
// commits that succeeded, at their commit times.
func TestABusyAdmitterWritesEachDocumentAtMostTenTimesInTenSeconds(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(-time.Minute), 6000, 1000, 600))
	var mu sync.Mutex
	writes := map[string][]time.Time{}
	stats := &rpcstats.Stats{OnWrite: func(doc string, at time.Time) {
		if _, rest, ok := strings.Cut(doc, "/documents/"); ok && (strings.HasPrefix(rest, States+"/") || strings.HasPrefix(rest, Rankings+"/")) {
			mu.Lock()
			writes[rest] = append(writes[rest], at)
			mu.Unlock()
		}
	}}
	fs, err := rpcstats.NewClient(context.Background(), projectOf(e.fs), stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	a, err := New(fs, WithLogger(slog.New(slog.NewJSONHandler(e.log, nil)))).Admitter() // the contract's windows and ticks
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var busy sync.WaitGroup
	busy.Go(func() { // people join all the time
		for i := 0; ctx.Err() == nil; i++ {
			if _, _, err := e.svc.Join(ctx, fmt.Sprintf("j%04d", i), e.id); err != nil && ctx.Err() == nil {
				t.Errorf("join: %v", err)
				return
			}
			time.Sleep(40 * time.Millisecond)
		}
	})
	busy.Go(func() { // an operator tunes the sale: each change wakes the admitter
		ref := e.fs.Collection(booking.Screenings).Doc(e.id)
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := ref.Update(ctx, []firestore.Update{{Path: "sale.maxActive", Value: 1000 + i%2}}); err != nil && ctx.Err() == nil {
				t.Errorf("tune: %v", err)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	err = e.run(a, 13*time.Second)
	cancel()
	busy.Wait()
	if err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	state := writes[States+"/"+e.id]
	if len(state) < 5 || e.state().Admitted < 50 {
		t.Fatalf("the admitter wrote its state %d times and admitted %d: not busy", len(state), e.state().Admitted)
	}
	for doc, ts := range writes {
		slices.SortFunc(ts, time.Time.Compare)
		if n, from := mostInWindow(ts, 10*time.Second); n > 10 {
			t.Errorf("%s took %d writes in the 10 s from %s (%d in all)", doc, n, from.Format("15:04:05.000"), len(ts))
		} else {
			t.Logf("%s: at most %d writes in any 10 s (%d in all)", doc, n, len(ts))
		}
	}
}

// mostInWindow is the most of sorted that lie within any window w (at
// most w apart, exclusive), and where that window starts.
func mostInWindow(sorted []time.Time, w time.Duration) (int, time.Time) {
	best, from, j := 0, time.Time{}, 0
	for i := range sorted {
		for sorted[i].Sub(sorted[j]) >= w {
			j++
		}
		if n := i - j + 1; n > best {
			best, from = n, sorted[j]
		}
	}
	return best, from
}
