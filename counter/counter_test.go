package counter_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/firelocktest"
)

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }

func shardSum(t *testing.T, c *firestore.Client, id string) (sum int64, shards int) {
	t.Helper()
	snaps, err := c.Collection(counter.Collection).Doc(id).Collection("shards").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		sum += s.Data()["count"].(int64)
	}
	return sum, len(snaps)
}

func TestConcurrentIncrementsAreExact(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "tickets", 10)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 40 {
				if err := ctr.Increment(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := ctr.Count(ctx)
	if err != nil || got != 2000 {
		t.Fatalf("Count = %d, %v; want 2000", got, err)
	}
	if sum, shards := shardSum(t, c, "tickets"); sum != 2000 || shards != 10 {
		t.Fatalf("shards hold %d in %d documents, want 2000 in 10", sum, shards)
	}
}

func TestCreateWritesContractShape(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	if _, err := counter.Create(ctx, c, "c", 3); err != nil {
		t.Fatal(err)
	}
	s, err := c.Doc("counters/c").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Data()["numShards"] != int64(3) {
		t.Fatalf("counter document %v, want numShards 3", s.Data())
	}
	for _, id := range []string{"0", "1", "2"} {
		s, err := c.Doc("counters/c/shards/" + id).Get(ctx)
		if err != nil || s.Data()["count"] != int64(0) || len(s.Data()) != 1 {
			t.Fatalf("shard %s: %v %v, want {count: 0}", id, s.Data(), err)
		}
	}
}

func TestCreateIsIdempotentForSameShardCount(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "c", 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.Increment(ctx, 7); err != nil {
		t.Fatal(err)
	}
	again, err := counter.Create(ctx, c, "c", 4)
	if err != nil {
		t.Fatalf("same shard count: %v", err)
	}
	if n, _ := again.Count(ctx); n != 7 {
		t.Fatalf("re-create reset the count to %d", n)
	}
	if _, err := counter.Create(ctx, c, "c", 5); !errors.Is(err, counter.ErrExists) {
		t.Fatalf("other shard count: err = %v, want ErrExists", err)
	}
}

func TestCountsSurviveShardGrowth(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "c", 2)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := counter.Open(ctx, c, "c") // a handle that keeps the old shard count
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if err := ctr.Increment(ctx, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctr.Grow(ctx, 20); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range []*counter.Counter{ctr, stale} {
		wg.Go(func() {
			for range 25 {
				if err := h.Increment(ctx, 2); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, err := ctr.Count(ctx); err != nil || got != 90+100 {
		t.Fatalf("Count = %d, %v; want 190", got, err)
	}
	if _, shards := shardSum(t, c, "c"); shards != 20 {
		t.Fatalf("%d shards, want 20", shards)
	}
	if err := ctr.Grow(ctx, 20); !errors.Is(err, counter.ErrInvalidInput) {
		t.Fatalf("grow to the same size: err = %v, want ErrInvalidInput", err)
	}
}

func TestRollupEqualsSumUnderConcurrentRollups(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "c", 8)
	if err != nil {
		t.Fatal(err)
	}
	// Writers and rollups at once.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 20 {
				if err := ctr.Increment(ctx, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for range 6 {
		wg.Go(func() {
			for range 3 {
				if _, err := ctr.Rollup(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Writers done: concurrent rollups must all land on the exact sum.
	for range 8 {
		wg.Go(func() {
			if n, err := ctr.Rollup(ctx); err != nil || n != 200 {
				t.Errorf("Rollup = %d, %v; want 200", n, err)
			}
		})
	}
	wg.Wait()
	s, err := c.Doc("counters/c").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Data()["total"] != int64(200) || s.Data()["rolledUpAt"] == nil {
		t.Fatalf("counter document %v, want total 200 and rolledUpAt", s.Data())
	}
	if sum, _ := shardSum(t, c, "c"); sum != 200 {
		t.Fatalf("shards sum to %d", sum)
	}
}

func TestRollupAllRollsEveryCounter(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c"} {
		ctr, err := counter.Create(ctx, c, id, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := ctr.Increment(ctx, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := counter.RollupAll(ctx, c)
	if err != nil || n != 3 {
		t.Fatalf("RollupAll = %d, %v", n, err)
	}
	for i, id := range []string{"a", "b", "c"} {
		s, _ := c.Doc("counters/" + id).Get(ctx)
		if s.Data()["total"] != int64(i+1) {
			t.Fatalf("%s total %v, want %d", id, s.Data()["total"], i+1)
		}
	}
}

// Shards left under a deleted counter document must not fail every hourly
// rollup: the stray counter is skipped (and logged), the others roll up.
func TestRollupAllSkipsStrayCounters(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "real", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.Increment(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Doc("counters/stray/shards/0").Set(ctx, map[string]any{"count": 3}); err != nil {
		t.Fatal(err)
	}
	n, err := counter.RollupAll(ctx, c)
	if err != nil || n != 1 {
		t.Fatalf("RollupAll = %d, %v; want 1, nil", n, err)
	}
	if s, _ := c.Doc("counters/real").Get(ctx); s.Data()["total"] != int64(5) {
		t.Fatalf("real total %v, want 5", s.Data()["total"])
	}
	if s, err := c.Doc("counters/stray").Get(ctx); err == nil && s.Exists() {
		t.Fatal("RollupAll created the stray counter's document")
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		id     string
		shards int
	}{
		"zero shards":     {"z", 0},
		"negative shards": {"n", -3},
		"too many shards": {"m", counter.MaxShards + 1},
		"empty id":        {"", 2},
		"slash in id":     {"a/b", 2},
		"reserved id":     {"__x__", 2},
		"over-long id":    {strings.Repeat("x", 1501), 2},
	} {
		if _, err := counter.Create(ctx, c, tc.id, tc.shards); !errors.Is(err, counter.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := counter.Open(ctx, c, "missing"); !errors.Is(err, counter.ErrNotFound) {
		t.Fatalf("open unknown: %v", err)
	}
	refs, err := c.Collection(counter.Collection).DocumentRefs(ctx).GetAll()
	if err != nil || len(refs) != 0 {
		t.Fatalf("bad input wrote %d counters (%v)", len(refs), err)
	}
}

func TestUnknownCounterIncrementWritesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "gone", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Delete it behind the handle's back.
	for _, p := range []string{"counters/gone/shards/0", "counters/gone/shards/1", "counters/gone"} {
		if _, err := c.Doc(p).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctr.Increment(ctx, 1); !errors.Is(err, counter.ErrNotFound) {
		t.Fatalf("increment: err = %v, want ErrNotFound", err)
	}
	if _, err := ctr.Count(ctx); !errors.Is(err, counter.ErrNotFound) {
		t.Fatalf("count: err = %v, want ErrNotFound", err)
	}
	if _, err := ctr.Rollup(ctx); !errors.Is(err, counter.ErrNotFound) {
		t.Fatalf("rollup: err = %v, want ErrNotFound", err)
	}
	if _, n := shardSum(t, c, "gone"); n != 0 {
		t.Fatalf("increment recreated %d shards", n)
	}
}

// rolledUpAt is the time the total is exact as of: the shards read at that
// time sum to the total, also while increments keep landing.
func TestRollupTotalIsExactAsOfRolledUpAt(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, c, "c", 4)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := ctr.Increment(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		n, err := ctr.Rollup(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Doc("counters/c").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := s.Data()["rolledUpAt"].(time.Time)
		if s.Data()["total"] != n || at.IsZero() {
			t.Fatalf("counter document %v after Rollup returned %d", s.Data(), n)
		}
		shards, err := c.Collection("counters/c/shards").WithReadOptions(firestore.ReadTime(at)).Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, sh := range shards {
			sum += sh.Data()["count"].(int64)
		}
		if sum != n {
			t.Fatalf("total %d, but the shards as of rolledUpAt %v sum to %d", n, at, sum)
		}
	}
}

// A counter lives in the collection its user names: Create, Open,
// Increment, Count, Rollup and RollupAll all work there, and leave the
// default collection alone.
func TestCountersLiveWhereTheUserSays(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	in := counter.WithCollection("tenants/t1/counters")
	ctr, err := counter.Create(ctx, c, "likes", 3, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.Increment(ctx, 2); err != nil {
		t.Fatal(err)
	}
	opened, err := counter.Open(ctx, c, "likes", in)
	if err != nil || opened.NumShards() != 3 {
		t.Fatalf("Open: %v shards, %v", opened, err)
	}
	if _, err := counter.Open(ctx, c, "likes"); !errors.Is(err, counter.ErrNotFound) {
		t.Fatalf("Open in the default collection: %v, want ErrNotFound", err)
	}
	if n, err := counter.RollupAll(ctx, c, in); n != 1 || err != nil {
		t.Fatalf("RollupAll: %d %v, want 1", n, err)
	}
	s, err := c.Doc("tenants/t1/counters/likes").Get(ctx)
	if err != nil || s.Data()[counter.FieldTotal] != int64(2) {
		t.Fatalf("the counter document: %v %v, want total 2", s.Data(), err)
	}
	if n := countDocs(t, c, counter.Collection); n != 0 {
		t.Fatalf("%d documents in %s", n, counter.Collection)
	}
	if _, err := counter.Create(ctx, c, "x", 1, counter.WithCollection("a/b")); !errors.Is(err, counter.ErrInvalidInput) {
		t.Fatalf("a document path for a collection: %v, want ErrInvalidInput", err)
	}
}

func countDocs(t *testing.T, c *firestore.Client, path string) int {
	t.Helper()
	refs, err := c.Collection(path).DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return len(refs)
}
