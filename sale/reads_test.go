package sale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
)

// statsService is a Service on a Firestore client of the test's project
// whose reads count into a fresh rpcstats.Stats.
func (e *env) statsService(opts ...Option) (*Service, *rpcstats.Stats) {
	e.t.Helper()
	stats := &rpcstats.Stats{}
	fs, err := rpcstats.NewClient(context.Background(), projectOf(e.fs), stats)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { fs.Close() })
	return New(fs, append(testOptions(e.log), opts...)...), stats
}

// The admitter reads a waiting place by query once, not once a tick until
// it is admitted (issue #51: 16 shards queried for each refill, 23 reads
// an admission in the surge). A line of 64 later joiners, a pass of a
// second and 4 passes at once: every second 4 passes end and 4 places
// are admitted. The queries' reads (the heads of the line, the passes that
// ended, the sales listed) stay within 3 an admission plus a page of
// every shard read ahead; before, each refill read up to 4 places of
// every shard.
func TestTheAdmitterReadsAWaitingPlaceOnce(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 4, 1))
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	for i := range 64 {
		e.join(fmt.Sprintf("late-%02d", i))
	}
	time.Sleep(600 * time.Millisecond) // the joins' window passes
	svc, stats := e.statsService()
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.run(a, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	admitted := e.state().Admitted
	got := stats.Snapshot()
	queried := got.ReadsBy["RunQuery"]
	t.Logf("%d admitted; %d documents read by queries (%.1f an admission); all: %v, reads by method %v", admitted, queried, float64(queried)/float64(admitted), got, got.ReadsBy)
	if admitted < 12 {
		t.Fatalf("only %d admitted in 6 s", admitted)
	}
	if bound := 3*int(admitted) + 3*Shards; queried > bound {
		t.Errorf("the queries read %d documents for %d admissions, want at most %d", queried, admitted, bound)
	}
	// The order held: nobody admitted past someone still waiting before them.
	var lastAdmitted string
	firstWaiting := "\uffff"
	for _, p := range e.places() {
		switch p.Status {
		case StatusWaiting:
			firstWaiting = min(firstWaiting, p.Order)
		default:
			lastAdmitted = max(lastAdmitted, p.Order)
		}
	}
	if lastAdmitted > firstWaiting {
		t.Fatalf("admitted through %s while %s waits", lastAdmitted, firstWaiting)
	}
}

// A join reads the screening, and the sale's public document once a
// second per instance, not the place: the place is created on the
// precondition that it does not exist (issue #51: 3.2 reads a join in the
// surge). The first join reads two documents; 20 joins at once read their
// screenings and the public document about once a second. A join again,
// and one refused, read the place and answer with it; nothing else is
// written.
func TestAJoinReadsTheScreeningOnly(t *testing.T) {
	t.Parallel() // its own project
	ctx := context.Background()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(-time.Minute), 10, 10, 60))
	// A join window long enough for a loaded machine: a join that misses
	// it tries again, and reads again.
	svc, stats := e.statsService(WithJoinWindow(10 * time.Second))
	if _, err := svc.client.Collection(booking.Screenings).Doc(e.id).Get(ctx); err != nil { // the connection, warmed
		t.Fatal(err)
	}
	reads := func(what string, f func()) int {
		t.Helper()
		before := stats.Snapshot()
		f()
		n := stats.Snapshot().Sub(before).Reads
		t.Logf("%s: %d reads", what, n)
		return n
	}
	var first, again Place
	if n := reads("a first join", func() {
		var created bool
		var err error
		if first, created, err = svc.Join(ctx, "alice", e.id); err != nil || !created {
			t.Fatalf("join: created=%v err=%v", created, err)
		}
	}); n != 2 {
		t.Errorf("a first join read %d documents, want 2", n)
	}
	const crowd = 20
	start := time.Now()
	if n := reads("20 joins at once", func() {
		var wg sync.WaitGroup
		for i := range crowd {
			wg.Go(func() {
				if _, created, err := svc.Join(ctx, fmt.Sprintf("u%02d", i), e.id); err != nil || !created {
					t.Errorf("join: created=%v err=%v", created, err)
				}
			})
		}
		wg.Wait()
	}); n > crowd+1+int(time.Since(start)/publicTTL) {
		t.Errorf("%d joins at once read %d documents in %v, want their screenings and the public document once a second", crowd, n, time.Since(start))
	}
	if n := reads("a join again", func() {
		var created bool
		var err error
		if again, created, err = svc.Join(ctx, "alice", e.id); err != nil || created || !samePlace(again, first) {
			t.Fatalf("joined again: %+v created=%v err=%v; first %+v", again, created, err, first)
		}
	}); n > 3 {
		t.Errorf("a join again read %d documents, want 3 at most", n)
	}
	// Refused (the sale closed), a user with a place still gets it; one
	// without gets the refusal.
	if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Update(ctx, []firestore.Update{{Path: FieldControl, Value: map[string]any{"closed": true}}}); err != nil {
		t.Fatal(err)
	}
	if p, created, err := svc.Join(ctx, "alice", e.id); err != nil || created || !samePlace(p, first) {
		t.Fatalf("a join again to a closed sale: %+v created=%v err=%v", p, created, err)
	}
	if _, _, err := svc.Join(ctx, "bob", e.id); !errors.Is(err, ErrClosed) {
		t.Fatalf("a new join to a closed sale: %v", err)
	}
	if n, _ := countOf(ctx, e.fs.Collection(Queue).Query, nil); n != 1+crowd {
		t.Fatalf("%d places, want %d", n, 1+crowd)
	}
}

func samePlace(x, y Place) bool {
	return x.ID == y.ID && x.UID == y.UID && x.Status == y.Status && x.Order == y.Order && x.JoinedAt.Equal(y.JoinedAt)
}

// The ranking gives each early joiner's place its order without reading
// the place (its draw says it exists and has none; issue #51: a read each,
// 1,000 for the surge's early joiners). 300 early joiners, ranked by
// one-pass runs (a page each: 100, then the rest), one admitted: the runs'
// batched reads (the lease's take, the step's documents, the seat map, the
// place admitted: about 15 a pass) stay under a quarter of the places
// ranked.
func TestTheRankingReadsNoPlace(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	const n = 300
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < n; i += 10 {
				e.join(fmt.Sprintf("early-%03d", i))
			}
		})
	}
	wg.Wait()
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	time.Sleep(600 * time.Millisecond) // the join window after the opening
	svc, stats := e.statsService()
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	over := func() bool {
		snap, err := e.fs.Collection(Rankings).Doc(e.id).Get(context.Background())
		return err == nil && snap.Data()["done"] == true
	}
	for pass := 0; !over(); pass++ {
		if pass == 5 {
			t.Fatalf("the ranking is not over after %d passes", pass)
		}
		if err := a.Run(context.Background(), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if rs := e.ranking(); !rs.Done || rs.Ranked != n {
		t.Fatalf("ranking: %+v", rs)
	}
	for _, p := range e.places() {
		if !strings.HasPrefix(p.Order, earlyPrefix) || strings.HasPrefix(p.Order, stragglerPrefix) {
			t.Fatalf("not ranked: %+v", p)
		}
	}
	got := stats.Snapshot()
	t.Logf("%v; reads by method %v", got, got.ReadsBy)
	if gets := got.ReadsBy["BatchGetDocuments"]; gets >= n/4 {
		t.Errorf("the runs' batched reads read %d documents for %d places ranked, want fewer than %d", gets, n, n/4)
	}
}

// A draw whose place is missing (nothing deletes places; a draw is still
// no proof) does not stop the ranking: the page is ranked again reading
// its places, and the missing one is skipped.
func TestADrawWithoutItsPlaceDoesNotStopTheRanking(t *testing.T) {
	t.Parallel() // its own project; it mostly waits
	ctx := context.Background()
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 100, 60))
	for i := range 5 {
		e.join(fmt.Sprintf("early-%d", i))
	}
	if _, err := e.fs.Collection(Draws).Doc(QueueID(e.id, "ghost")).Create(ctx, map[string]any{"screeningId": e.id, "draw": "00"}); err != nil {
		t.Fatal(err)
	}
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	// 5 s: the admitter takes its lease and ranks in its first ticks; CI's
	// loaded run of 11-29 13:20 had not written the ranking after 1.5 s.
	if err := e.run(e.admitter(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if rs := e.ranking(); !rs.Done || rs.Ranked != 5 {
		t.Fatalf("ranking: %+v", rs)
	}
	for _, p := range e.places() {
		if p.Status != StatusAdmitted || !strings.HasPrefix(p.Order, earlyPrefix) {
			t.Fatalf("not ranked and admitted: %+v", p)
		}
	}
	if n, _ := countOf(ctx, e.fs.Collection(Queue).Query, nil); n != 5 {
		t.Fatalf("%d places, want 5", n)
	}
}
