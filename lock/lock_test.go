package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
)

// TestMain runs the parallel tests (each on its own project: contention
// judged on a counter, calls left unanswered by a fault proxy) eight at a
// time. Tests that time leases and renewals, plant bugs or point the
// emulator's host elsewhere stay sequential.
func TestMain(m *testing.M) {
	firelocktest.SideBySide(8)
	os.Exit(firelocktest.Main(m))
}

const coll = "locks"

func newLocker(t testing.TB, c *firestore.Client, opts ...lock.Option) *lock.Locker {
	t.Helper()
	opts = append([]lock.Option{lock.WithBackoff(2*time.Millisecond, 100*time.Millisecond)}, opts...)
	l, err := lock.New(c, coll, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// warmUp takes a key with l and gives it back, so that its commit client's
// first commit, which proves the client (commit.go), is behind it before
// a test slows or drops the answers.
//
// The warm-up is not what a test asserts: on a loaded machine the first
// commit (a new connection, a cold emulator) can come back after a short
// lease has ended, and the grant is then refused as ErrUnanswered and
// released. It is tried again, a few times (CI 11-29: a 3 s lease's
// warm-up answered 4 s late failed a case that had not started).
func warmUp(t testing.TB, l *lock.Locker) {
	t.Helper()
	ctx := context.Background()
	warm, err := l.TryAcquire(ctx, "warm-up")
	for try := 1; try < 4 && errors.Is(err, lock.ErrUnanswered); try++ {
		t.Logf("warm-up %d: %v; again", try, err)
		warm, err = l.TryAcquire(ctx, "warm-up")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func countDocs(t *testing.T, c *firestore.Client, path string) int {
	t.Helper()
	snaps, err := c.Collection(path).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return len(snaps)
}

func leaseOf(t *testing.T, c *firestore.Client, key string) map[string]any {
	t.Helper()
	s, err := c.Collection(coll).Doc(key).Get(context.Background())
	if err != nil {
		t.Fatalf("read lease %s: %v", key, err)
	}
	return s.Data()
}

// waitLeaseEnd sleeps past a lease of d granted just now (plus slack for
// the emulator's clock granularity).
func waitLeaseEnd(d time.Duration) { time.Sleep(d + 150*time.Millisecond) }

func TestMutualExclusionInvariant(t *testing.T) {
	t.Parallel() // its own project; judged on the counter, not on time
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	const workers, iterations = 32, 20
	data := c.Collection("data").Doc("counter")
	if _, err := data.Set(ctx, map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		l := newLocker(t, c) // one owner per worker
		wg.Go(func() {
			for range iterations {
				lease, err := l.Acquire(ctx, "counter")
				if err != nil {
					errs <- err
					return
				}
				// Unguarded read-modify-write: only the lock keeps it exact.
				s, err := data.Get(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := s.Data()["n"].(int64)
				if _, err := data.Set(ctx, map[string]any{"n": n + 1}); err != nil {
					errs <- err
					return
				}
				if err := lease.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := data.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Data()["n"].(int64); got != workers*iterations {
		t.Fatalf("counter = %d, want %d: two holders overlapped", got, workers*iterations)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d lease documents left after every release", n)
	}
}

func TestGrantWritesContractFields(t *testing.T) {
	c := firelocktest.NewClient(t)
	l := newLocker(t, c, lock.WithLeaseDuration(45*time.Second))
	lease, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	d := leaseOf(t, c, "k")
	if d["owner"] != l.Owner() {
		t.Errorf("owner = %v, want %s", d["owner"], l.Owner())
	}
	acq, ren := d["acquiredAt"].(time.Time), d["renewedAt"].(time.Time)
	if !acq.Equal(ren) || !acq.Equal(lease.AcquiredAt()) {
		t.Errorf("acquiredAt %v, renewedAt %v, lease.AcquiredAt %v: want all equal (server commit time)", acq, ren, lease.AcquiredAt())
	}
	if lease.Token() < acq.UnixMicro() {
		t.Errorf("token %d, want the grant's commit time, not before acquiredAt %d", lease.Token(), acq.UnixMicro())
	}
	if d["leaseSeconds"] != int64(45) {
		t.Errorf("leaseSeconds = %#v, want int64 45", d["leaseSeconds"])
	}
	if exp := d["expireAt"].(time.Time); exp.Before(ren.Add(45*time.Second + 23*time.Hour)) {
		t.Errorf("expireAt %v is not a wide margin after the lease end %v", exp, ren.Add(45*time.Second))
	}
	if holds, _ := d[lock.FieldHolds].([]any); len(holds) != 1 {
		t.Errorf("holds = %#v, want this one acquisition", d[lock.FieldHolds])
	}
	if len(d) != 6 {
		t.Errorf("lease document has fields %v, want the five of CONTRACT §1 and holds", d)
	}
	if len(l.Owner()) != 21 {
		t.Errorf("default owner %q is not a 21-character nanoid", l.Owner())
	}
}

func TestHeldLockAnswersWithHolderAndEnd(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a, b := newLocker(t, c), newLocker(t, c)
	lease, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.TryAcquire(ctx, "k")
	var held *lock.HeldError
	if !errors.Is(err, lock.ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("err = %v, want a *HeldError", err)
	}
	h := held.Holders[0]
	if h.Key != "k" || h.Owner != a.Owner() || !h.Until.Equal(lease.AcquiredAt().Add(lock.DefaultLeaseDuration)) {
		t.Fatalf("holder = %+v, want k by %s until %v", h, a.Owner(), lease.AcquiredAt().Add(lock.DefaultLeaseDuration))
	}
	if h.Remaining <= 0 || h.Remaining > lock.DefaultLeaseDuration {
		t.Fatalf("remaining %v out of range", h.Remaining)
	}
	if !strings.Contains(err.Error(), a.Owner()) {
		t.Fatalf("message %q does not name the holder", err)
	}
}

func TestTakeoverOnlyAfterLeaseEnds(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	b := newLocker(t, c)
	old, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("takeover of a live lease: err = %v, want ErrHeld", err)
	}
	waitLeaseEnd(time.Second)
	// Many contenders for the ended lease: exactly one wins.
	var wins atomic.Int32
	var winner atomic.Pointer[lock.Lease]
	var wg sync.WaitGroup
	for range 8 {
		l := newLocker(t, c)
		wg.Go(func() {
			lease, err := l.TryAcquire(ctx, "k")
			switch {
			case err == nil:
				wins.Add(1)
				winner.Store(lease)
			case !errors.Is(err, lock.ErrHeld):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d contenders took over the ended lease, want exactly 1", wins.Load())
	}
	if winner.Load().Token() <= old.Token() {
		t.Fatalf("takeover token %d not above the old %d", winner.Load().Token(), old.Token())
	}
	if err := old.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale release: err = %v, want ErrNotHeld", err)
	}
	if got := leaseOf(t, c, "k")["owner"]; got != winner.Load().Owner() {
		t.Fatalf("after the stale release the lease names %v, want the new holder", got)
	}
	select {
	case <-old.Done():
	default:
		t.Fatal("the stale lease's Done is still open after it was found lost")
	}
}

func TestStaleHolderGuardedWriteFails(t *testing.T) {
	t.Parallel() // its own project; it waits leases out, which a loaded machine only lengthens
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	b := newLocker(t, c)
	data := c.Collection("data").Doc("d")
	stale, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	fresh, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	guardedWrite := func(l *lock.Lease, v string) error {
		return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := l.Guard(tx); err != nil {
				return err
			}
			return tx.Set(data, map[string]any{"by": v, "token": l.Token()})
		})
	}
	if err := guardedWrite(stale, "stale"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale guarded write: err = %v, want ErrNotHeld", err)
	}
	if _, err := data.Get(ctx); err == nil {
		t.Fatal("the stale holder's guarded write landed")
	}
	if err := guardedWrite(fresh, "fresh"); err != nil {
		t.Fatalf("holder's guarded write: %v", err)
	}
	// A guarded write on a lease that ended but was not taken over fails too.
	short := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	l2, err := short.TryAcquire(ctx, "k2")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	if err := guardedWrite(l2, "ended"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("guarded write after the lease ended: err = %v, want ErrNotHeld", err)
	}
}

func TestTokenStrictlyIncreasesAcrossGrants(t *testing.T) {
	t.Parallel() // its own project; it waits leases out, which a loaded machine only lengthens
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	var last int64
	for i := range 12 {
		// Acquire, not TryAcquire: a try a loaded emulator leaves
		// unanswered past its 1-s bound (CI, 2026-11-29 14:42) is tried
		// again, and what it may have left waits out its lease.
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		lease, err := l.Acquire(actx, "k")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if lease.Token() <= last {
			t.Fatalf("grant %d: token %d not above %d", i, lease.Token(), last)
		}
		last = lease.Token()
		if i%4 == 3 { // now and then a takeover instead of a release
			waitLeaseEnd(time.Second)
			continue
		}
		if err := lease.Release(ctx); err != nil {
			// A loaded emulator can leave a release of a 1-s lease
			// unanswered past its bound (CI, 2026-11-29): the lease then
			// ends by itself, and the next grant is a takeover.
			if !errors.Is(err, lock.ErrUnanswered) {
				t.Fatal(err)
			}
			t.Logf("grant %d: %v", i, err)
			waitLeaseEnd(time.Second)
		}
	}
}

func TestRenewKeepsLeasePastItsLength(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(2*time.Second))
	b := newLocker(t, c)
	lease, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		time.Sleep(1200 * time.Millisecond)
		before := lease.RenewedAt()
		if err := lease.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if !lease.RenewedAt().After(before) {
			t.Fatal("renew did not move renewedAt")
		}
	}
	// 3.6s after a 2s grant: still held thanks to the renewals.
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("err = %v, want ErrHeld after renewals", err)
	}
	d := leaseOf(t, c, "k")
	if !d["acquiredAt"].(time.Time).Equal(lease.AcquiredAt()) || d["owner"] != a.Owner() {
		t.Fatalf("renew changed owner or acquiredAt: %v", d)
	}
}

func TestKeepAliveHoldsLongWork(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(3*time.Second))
	b := newLocker(t, c)
	lease, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := lease.KeepAlive(ctx)
	time.Sleep(7 * time.Second) // more than twice the lease
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("err = %v, want ErrHeld while kept alive", err)
	}
	if kctx.Err() != nil {
		t.Fatalf("keep-alive context ended: %v", context.Cause(kctx))
	}
	stop()
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLostLeaseClosesDone(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a := newLocker(t, c, lock.WithLeaseDuration(3*time.Second))
	lease, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := lease.KeepAlive(ctx)
	defer stop()
	// An operator (or a sweep) deletes the lease and somebody else grabs it.
	if _, err := c.Collection(coll).Doc("k").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := newLocker(t, c).TryAcquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done still open 5s after the lease was taken")
	}
	<-kctx.Done()
	if !errors.Is(context.Cause(kctx), lock.ErrNotHeld) || !errors.Is(lease.Err(), lock.ErrNotHeld) {
		t.Fatalf("cause %v, Err %v: want ErrNotHeld", context.Cause(kctx), lease.Err())
	}
}

func TestReleaseByNonOwnerChangesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a, b := newLocker(t, c), newLocker(t, c)
	lease, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	before := leaseOf(t, c, "k")
	if n, err := b.ReleaseAll(ctx); err != nil || n != 0 {
		t.Fatalf("another owner's ReleaseAll deleted %d (err %v), want 0", n, err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatal(err)
	}
	after := leaseOf(t, c, "k")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("lease changed: %v -> %v", before, after)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReentrantAcquireJoinsTheLiveLease(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := newLocker(t, c)
	again := newLocker(t, c, lock.WithOwner(a.Owner())) // same execution, another handle
	first, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	second, err := again.Acquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatalf("reentrant acquire: %v", err)
	}
	if !second.AcquiredAt().Equal(first.AcquiredAt()) {
		t.Fatalf("reentrant acquire is grant %v, want the live grant %v", second.AcquiredAt(), first.AcquiredAt())
	}
	if second.Token() <= first.Token() {
		t.Fatalf("reentrant token %d not above the grant's %d", second.Token(), first.Token())
	}
	if _, err := newLocker(t, c).TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("other owner: err = %v, want ErrHeld", err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d documents after both releases", n)
	}
}

func TestAcquireAllIsAllOrNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a, b := newLocker(t, c), newLocker(t, c)
	if _, err := b.TryAcquire(ctx, "k3"); err != nil {
		t.Fatal(err)
	}
	_, err := a.TryAcquireAll(ctx, []string{"k1", "k2", "k3", "k4"})
	var held *lock.HeldError
	if !errors.As(err, &held) || fmt.Sprint(held.Keys()) != "[k3]" {
		t.Fatalf("err = %v, want ErrHeld naming k3", err)
	}
	if n := countDocs(t, c, coll); n != 1 {
		t.Fatalf("%d lease documents after a refused set, want only b's", n)
	}
	// Ended leases in the set are taken over in the same commit.
	short := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	if _, err := short.TryAcquire(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	ls, err := a.TryAcquireAll(ctx, []string{"k1", "k2", "k4"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ls.Keys()) != "[k1 k2 k4]" {
		t.Fatalf("keys %v", ls.Keys())
	}
	for _, k := range ls.Keys() {
		if leaseOf(t, c, k)["owner"] != a.Owner() {
			t.Fatalf("%s not held by a", k)
		}
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, c, coll); n != 1 {
		t.Fatalf("%d lease documents after release, want only b's", n)
	}
}

// Overlapping sets under real concurrency: no key is ever held by two
// workers, and nothing is left behind.
func TestAcquireAllConcurrentSetsNeverOverlap(t *testing.T) {
	t.Parallel() // its own project; judged on what overlapped, not on time
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	keys := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
	var mu sync.Mutex
	holder := map[string]int{}
	var grants atomic.Int32
	var wg sync.WaitGroup
	for w := range 16 {
		l := newLocker(t, c)
		wg.Go(func() {
			for range 10 {
				perm := rand.Perm(len(keys))[:3]
				set := []string{keys[perm[0]], keys[perm[1]], keys[perm[2]]}
				ls, err := l.AcquireAll(ctx, set)
				if err != nil {
					t.Error(err)
					return
				}
				grants.Add(1)
				mu.Lock()
				for _, k := range set {
					if h, ok := holder[k]; ok {
						t.Errorf("%s granted to worker %d while worker %d holds it", k, w, h)
					}
					holder[k] = w
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				for _, k := range set {
					delete(holder, k)
				}
				mu.Unlock()
				if err := ls.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if grants.Load() != 160 {
		t.Fatalf("%d grants, want 160", grants.Load())
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d stray lease documents", n)
	}
}

func TestReleaseAllDeletesOnlyOwnLeases(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	a, b := newLocker(t, c), newLocker(t, c)
	for i := range 25 {
		if _, err := a.TryAcquire(ctx, fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.TryAcquire(ctx, "b0"); err != nil {
		t.Fatal(err)
	}
	n, err := a.ReleaseAll(ctx)
	if err != nil || n != 25 {
		t.Fatalf("ReleaseAll = %d, %v; want 25", n, err)
	}
	if n := countDocs(t, c, coll); n != 1 {
		t.Fatalf("%d documents left, want b's one", n)
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	c := firelocktest.NewClient(t)
	a, b := newLocker(t, c), newLocker(t, c)
	if _, err := b.TryAcquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := a.Acquire(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("Acquire returned %v after its context ended", waited)
	}
	if leaseOf(t, c, "k")["owner"] != b.Owner() {
		t.Fatal("the waiting acquire changed the lease")
	}
}

func TestInvalidKeysWriteNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	l := newLocker(t, c)
	cases := map[string][]string{
		"empty":        {""},
		"slash":        {"a/b"},
		"too long":     {strings.Repeat("x", lock.MaxKeyBytes+1)},
		"reserved":     {"__lock__"},
		"dot":          {"."},
		"dot dot":      {".."},
		"not utf8":     {"\xff\xfe"},
		"duplicate":    {"a", "b", "a"},
		"one bad":      {"ok1", "ok2", "bad/key"},
		"no keys":      {},
		"too many":     make([]string, lock.MaxKeys+1),
		"bad among ok": {"x", "__y__"},
	}
	for name, keys := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := l.TryAcquireAll(context.Background(), keys)
			if !errors.Is(err, lock.ErrInvalidKey) {
				t.Fatalf("err = %v, want ErrInvalidKey", err)
			}
		})
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d documents written for bad keys", n)
	}
}

func TestWithLockRunsReleasesAndReturnsFnError(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c)
	boom := errors.New("boom")
	var ran bool
	err := l.WithLock(ctx, "k", func(ctx context.Context, lease *lock.Lease) error {
		ran = true
		if leaseOf(t, c, "k")["owner"] != l.Owner() {
			t.Error("fn runs without the lease")
		}
		return boom
	})
	if !ran || !errors.Is(err, boom) {
		t.Fatalf("ran %v, err %v: want fn's error", ran, err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d documents after WithLock", n)
	}
}

func TestWithCheckRefusesWithoutWriting(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	short := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	if _, err := short.TryAcquire(ctx, "k", lock.WithFields(map[string]any{"state": "done"})); err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	before := leaseOf(t, c, "k")
	errDone := errors.New("done already")
	_, err := newLocker(t, c).TryAcquire(ctx, "k", lock.WithCheck(func(s *firestore.DocumentSnapshot) error {
		if s.Data()["state"] == "done" {
			return errDone
		}
		return nil
	}))
	if !errors.Is(err, errDone) {
		t.Fatalf("err = %v, want the check's error", err)
	}
	if fmt.Sprint(before) != fmt.Sprint(leaseOf(t, c, "k")) {
		t.Fatal("a refused check wrote")
	}
}

func TestSixteenWayRaceHasOneWinner(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	lockers := make([]*lock.Locker, 16)
	for i := range lockers {
		lockers[i] = newLocker(t, c)
	}
	for round := range 5 {
		key := fmt.Sprintf("race%d", round)
		var wins, held atomic.Int32
		var wg sync.WaitGroup
		for _, l := range lockers {
			wg.Go(func() {
				_, err := l.TryAcquire(ctx, key)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, lock.ErrHeld):
					held.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || held.Load() != 15 {
			t.Fatalf("round %d: %d winners, %d ErrHeld; want 1 and 15", round, wins.Load(), held.Load())
		}
	}
}

func TestBadOptionsRejected(t *testing.T) {
	c := firelocktest.NewClient(t)
	for name, opt := range map[string]lock.Option{
		"zero lease":       lock.WithLeaseDuration(0),
		"fractional lease": lock.WithLeaseDuration(1500 * time.Millisecond),
		"huge lease":       lock.WithLeaseDuration(2 * time.Hour),
		"empty owner":      lock.WithOwner(""),
		"small ttl margin": lock.WithTTLMargin(time.Minute),
		"bad backoff":      lock.WithBackoff(time.Second, time.Millisecond),
	} {
		if _, err := lock.New(c, coll, opt); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestEndedContextIsReportedAsSuch(t *testing.T) {
	c := firelocktest.NewClient(t)
	l := newLocker(t, c)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := l.TryAcquire(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want errors.Is context.DeadlineExceeded", err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d documents written", n)
	}
}

func TestGuardWithReadsAndReleaseInCommitsWithTheWrites(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c)
	ls, err := l.TryAcquireAll(ctx, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	data := c.Doc("data/d")
	if _, err := data.Set(ctx, map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	err = c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := ls.GuardWith(tx, data)
		if err != nil {
			return err
		}
		if len(snaps) != 1 || snaps[0].Data()["v"] != int64(1) {
			t.Errorf("GuardWith returned %v", snaps)
		}
		if err := tx.Set(data, map[string]any{"v": 2}); err != nil {
			return err
		}
		return ls.ReleaseIn(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d leases left after ReleaseIn committed", n)
	}
	if s, _ := data.Get(ctx); s.Data()["v"] != int64(2) {
		t.Fatal("the guarded write did not land")
	}
	// The leases are gone, so guarding with them again fails.
	err = c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		_, err := ls.GuardWith(tx, data)
		return err
	})
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("guard after release: err = %v, want ErrNotHeld", err)
	}
}

// doomedLocker is a Locker on a Firestore emulator of its own, which the
// test can stop to make every RPC fail.
func doomedLocker(t *testing.T, lease time.Duration) (*lock.Locker, func()) {
	t.Helper()
	orig := os.Getenv("FIRESTORE_EMULATOR_HOST")
	os.Unsetenv("FIRESTORE_EMULATOR_HOST")
	doomed, err := emulators.Start(context.Background(), emulators.Firestore)
	if err != nil {
		os.Setenv("FIRESTORE_EMULATOR_HOST", orig)
		t.Fatal(err)
	}
	c := firelocktest.NewClient(t) // on the doomed emulator
	l := newLocker(t, c, lock.WithLeaseDuration(lease))
	os.Setenv("FIRESTORE_EMULATOR_HOST", orig)
	kill := func() { doomed.Stop(); os.Setenv("FIRESTORE_EMULATOR_HOST", orig) }
	t.Cleanup(kill)
	return l, kill
}

// When renewals keep failing (here: the Firestore emulator the lease lives
// on goes away), KeepAlive gives up before the lease could end on the
// server: the context is cancelled and Done closes with ErrNotHeld.
func TestKeepAliveGivesUpWhenRenewalsFail(t *testing.T) {
	l, kill := doomedLocker(t, 2*time.Second)
	lease, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	kctx, stop := lease.KeepAlive(context.Background())
	defer stop()
	kill()
	select {
	case <-lease.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done still open 5s after renewals started failing")
	}
	if gaveUp := time.Since(granted); gaveUp >= 2*time.Second {
		t.Fatalf("gave up %v after the grant: not before the 2s lease could end", gaveUp)
	}
	<-kctx.Done()
	if !errors.Is(context.Cause(kctx), lock.ErrNotHeld) {
		t.Fatalf("cause %v, want ErrNotHeld", context.Cause(kctx))
	}
}

// A renewal that cannot tell what happened (Firestore unreachable, and so
// is the read-back) reports an error but does not declare the lease lost.
func TestRenewFailureIsNotTakenForALostLease(t *testing.T) {
	l, kill := doomedLocker(t, 30*time.Second)
	lease, err := l.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = lease.Renew(ctx)
	if err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("err = %v, want an error that is not ErrNotHeld", err)
	}
	select {
	case <-lease.Done():
		t.Fatal("Done closed on an ambiguous failure")
	default:
	}
}
