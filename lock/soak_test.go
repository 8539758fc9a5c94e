package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/linearize"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
)

// exclusion checks mutual exclusion as its users would notice it failing:
// critical sections of one key that overlap, an unguarded read-modify-write
// of a counter inside each that loses increments, and guarded writes that
// commit when they must not. Sections are judged conservatively, in this
// process: one opens once its grant has returned and closes before its
// release is sent, or as soon as its holder learns the lease is lost. The
// counters are read and written past the fault proxy, so that the outcome
// of every increment is known.
type exclusion struct {
	direct *firestore.Client

	mu        sync.Mutex
	open      map[string]int // sections of a key open right now
	overlaps  int            // sections that opened while another of their key was open
	completed map[string]int // sections whose increment committed
	unsure    map[string]int // increments whose outcome is unknown (the direct connection failed)
	fenced    int            // guarded writes that met a higher token than their own
	writes    atomic.Int64
}

func newExclusion(direct *firestore.Client) *exclusion {
	return &exclusion{direct: direct, open: map[string]int{}, completed: map[string]int{}, unsure: map[string]int{}}
}

// enter opens a section of key and returns its close, which may be called
// more than once.
func (e *exclusion) enter(key string) (leave func()) {
	e.mu.Lock()
	e.open[key]++
	if e.open[key] > 1 {
		e.overlaps++
	}
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			e.open[key]--
			e.mu.Unlock()
		})
	}
}

// section runs a critical section of key for a lease just granted: it
// reads the key's counter, runs body (nil: nothing), waits a little, and
// writes the counter plus one, without a transaction: exact only if no two
// sections of the key overlap. ctx ending means the lease is lost: the
// section closes then, and increments nothing more.
func (e *exclusion) section(ctx context.Context, key string, body func() error) error {
	leave := e.enter(key)
	stop := context.AfterFunc(ctx, leave)
	defer func() { stop(); leave() }()
	counter := e.direct.Collection("counters").Doc(key)
	s, err := counter.Get(ctx)
	if err != nil && !isNotFound(err) {
		return err
	}
	n, _ := s.Data()["n"].(int64)
	if body != nil {
		if err := body(); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(time.Duration(rand.IntN(10)) * time.Millisecond):
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	_, err = counter.Set(context.WithoutCancel(ctx), map[string]any{"n": n + 1})
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.unsure[key]++
		return err
	}
	e.completed[key]++
	return nil
}

// guardedWrite writes, in a transaction guarded by lease, the key's fence
// (the highest token written under it) and a record of the write, marked
// paused if its holder paused past the lease's end, so that it must never
// commit. A fence higher than the lease's own token is a stale holder's
// write: it is counted and refused.
func (e *exclusion) guardedWrite(ctx context.Context, c *firestore.Client, lease *lock.Lease, paused bool) error {
	key, op := lease.Key(), e.writes.Add(1)
	return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		fence := c.Collection("fences").Doc(key)
		snaps, err := lock.Leases{lease}.GuardWith(tx, fence)
		if err != nil {
			return err
		}
		if last, _ := snaps[0].Data()["token"].(int64); lease.Token() < last {
			e.mu.Lock()
			e.fenced++
			e.mu.Unlock()
			return fmt.Errorf("token %d below the committed %d", lease.Token(), last)
		}
		if err := tx.Set(fence, map[string]any{"token": lease.Token()}); err != nil {
			return err
		}
		return tx.Set(c.Collection("writes").Doc(fmt.Sprint(op)), map[string]any{"key": key, "token": lease.Token(), "paused": paused})
	})
}

// violations lists what went wrong, on what the sections saw and what
// Firestore holds: overlapping sections, counters that lost increments,
// stale fences, and guarded writes of paused holders that committed.
func (e *exclusion) violations(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	e.mu.Lock()
	defer e.mu.Unlock()
	var v []string
	if e.overlaps > 0 {
		v = append(v, fmt.Sprintf("%d critical sections began while another of their key was open", e.overlaps))
	}
	for key, done := range e.completed {
		s, err := e.direct.Collection("counters").Doc(key).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Data()["n"].(int64); n < int64(done) || n > int64(done+e.unsure[key]) {
			v = append(v, fmt.Sprintf("counter %s is %d after %d completed sections (%d unsure): increments lost to overlapping sections", key, n, done, e.unsure[key]))
		}
	}
	if e.fenced > 0 {
		v = append(v, fmt.Sprintf("%d guarded writes found a higher token than their own: stale holders passed Guard", e.fenced))
	}
	paused, err := e.direct.Collection("writes").Where("paused", "==", true).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(paused) > 0 {
		v = append(v, fmt.Sprintf("%d guarded writes committed after their lease had ended", len(paused)))
	}
	return v
}

// soakStats is what TestLockUnderFaults reports (and the README quotes).
type soakStats struct {
	sections, completed, failed, paused, pausedRefused, faults, leftover int
}

// Workers (half of them sharing one Locker) take two keys through a fault
// proxy (answers dropped, delayed, connections reset, at random): most with
// WithLock, KeepAlive, an unguarded read-modify-write and a guarded write;
// some pause past their lease and then try a guarded write and a release,
// as a process does after a long GC pause. Mutual exclusion is checked on
// what the sections saw and what Firestore holds (exclusion), and every
// lease left behind ends within one lease. make soak runs it for minutes
// (FIRELOCK_SOAK).
func TestLockUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault soak")
	}
	stats, violations := soak(t, linearize.Duration(t, 20*time.Second))
	for _, v := range violations {
		t.Error(v)
	}
	if stats.faults == 0 || stats.completed == 0 || stats.failed == 0 || stats.paused == 0 {
		t.Fatalf("the soak exercised too little: %+v", stats)
	}
}

// soak runs TestLockUnderFaults's workers for run and returns what they
// did and the violations found.
func soak(t *testing.T, run time.Duration) (soakStats, []string) {
	const (
		workers = 6
		lease   = 2 * time.Second
	)
	p, _, direct := proxied(t)
	keys := []string{"a", "b"}
	e := newExclusion(direct)
	var stats soakStats
	var mu sync.Mutex
	count := func(f func(*soakStats)) { mu.Lock(); f(&stats); mu.Unlock() }

	stop := make(chan struct{})
	chaosDone := p.InjectAtRandom(t, rand.New(rand.NewPCG(rand.Uint64(), 0)), stop, nil)
	var wg sync.WaitGroup
	deadline := time.Now().Add(run)
	// Half the workers share one Locker (one execution, many goroutines),
	// the others have one each.
	sc, sopts := emulatorsClientVia(t, p)
	shared := newLocker(t, sc, lock.WithLeaseDuration(lease), lock.WithClientOptions(sopts...))
	for w := range workers {
		c, l := sc, shared
		if w%2 == 1 {
			var copts []option.ClientOption
			c, copts = emulatorsClientVia(t, p)
			l = newLocker(t, c, lock.WithLeaseDuration(lease), lock.WithClientOptions(copts...))
		}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				key := keys[rand.IntN(len(keys))]
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				if rand.IntN(10) == 0 {
					refused, err := pausedHolder(ctx, e, c, l, key)
					count(func(s *soakStats) {
						if err == nil {
							s.paused++
							if refused {
								s.pausedRefused++
							}
						}
					})
					cancel()
					continue
				}
				err := l.WithLock(ctx, key, func(ctx context.Context, lease *lock.Lease) error {
					return e.section(ctx, key, func() error { return e.guardedWrite(ctx, c, lease, false) })
				})
				cancel()
				count(func(s *soakStats) {
					s.sections++
					if err == nil {
						s.completed++
					} else {
						s.failed++
					}
				})
			}
		})
	}
	wg.Wait()
	close(stop)
	<-chaosDone
	stats.faults = p.Faults()

	ctx := context.Background()
	snaps, err := direct.Collection(coll).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	stats.leftover = len(snaps)
	for _, s := range snaps {
		renewed, ok1 := s.Data()[lock.FieldRenewedAt].(time.Time)
		secs, ok2 := s.Data()[lock.FieldLeaseSeconds].(int64)
		if !ok1 || !ok2 {
			t.Errorf("document %s left in the lock collection is not a lease: %v", s.Ref.ID, s.Data())
			continue
		}
		end := renewed.Add(time.Duration(secs) * time.Second)
		if end.Sub(s.ReadTime) > lease {
			t.Errorf("lease %s left behind ends %v after the run, more than one lease", s.Ref.ID, end.Sub(s.ReadTime))
		}
	}
	waitLeaseEnd(lease)
	fresh := newLocker(t, direct)
	for _, k := range keys {
		freeAfterTheRun(t, fresh, k)
	}
	violations := e.violations(t)
	t.Logf("faults injected %d; critical sections %d (%d completed, %d failed); paused holders %d (guarded write refused %d); "+
		"counter increments %d, overlapping sections %d; leases left at the end %d (all ended within one lease); violations %d",
		stats.faults, stats.sections, stats.completed, stats.failed, stats.paused, stats.pausedRefused,
		sum(e.completed), e.overlaps, stats.leftover, len(violations))
	return stats, violations
}

// pausedHolder takes key, runs a critical section, pauses past the lease's
// end without renewing it, and then tries a guarded write, which must be
// refused, and a release. It reports whether the write was refused.
func pausedHolder(ctx context.Context, e *exclusion, c *firestore.Client, l *lock.Locker, key string) (refused bool, err error) {
	lease, err := l.Acquire(ctx, key)
	if err != nil {
		return false, err
	}
	if err := e.section(ctx, key, nil); err != nil {
		lease.Release(ctx)
		return false, err
	}
	time.Sleep(lease.Duration() + 300*time.Millisecond)
	after, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	werr := e.guardedWrite(after, c, lease, true)
	lease.Release(after)
	return errors.Is(werr, lock.ErrNotHeld), nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// The soak's checks prove themselves: each planted bug, in a short
// scenario without faults, turns them red; the same scenario without the
// bug leaves them green.
func TestSoakChecksCatchPlantedBugs(t *testing.T) {
	scenarios := []struct {
		bug lock.Bug
		run func(t *testing.T, e *exclusion, c *firestore.Client)
	}{
		{lock.BugTakeoverIgnoresEnd, func(t *testing.T, e *exclusion, c *firestore.Client) {
			ctx := context.Background()
			a, b := newLocker(t, c, lock.WithLeaseDuration(5*time.Second)), newLocker(t, c)
			la := mustAcquire(t, a, "k")
			e.section(ctx, "k", func() error { // a second holder arrives while the first works
				if lb, err := b.TryAcquire(ctx, "k"); err == nil {
					e.section(ctx, "k", nil)
					lb.Release(ctx)
				}
				return nil
			})
			la.Release(ctx)
		}},
		{lock.BugGuardChecksNothing, func(t *testing.T, e *exclusion, c *firestore.Client) {
			ctx := context.Background()
			a, b := newLocker(t, c, lock.WithLeaseDuration(time.Second)), newLocker(t, c, lock.WithLeaseDuration(5*time.Second))
			la := mustAcquire(t, a, "k")
			time.Sleep(la.Duration() + 300*time.Millisecond) // paused past its end
			e.guardedWrite(ctx, c, la, true)
			lb := mustAcquire(t, b, "k")
			e.section(ctx, "k", func() error { return e.guardedWrite(ctx, c, lb, false) })
			e.guardedWrite(ctx, c, la, true) // still paused, after the next holder wrote
			lb.Release(ctx)
		}},
		{lock.BugReleaseUnconditional, func(t *testing.T, e *exclusion, c *firestore.Client) {
			ctx := context.Background()
			a, b, d := newLocker(t, c, lock.WithLeaseDuration(time.Second)), newLocker(t, c, lock.WithLeaseDuration(5*time.Second)), newLocker(t, c)
			la := mustAcquire(t, a, "k")
			time.Sleep(la.Duration() + 300*time.Millisecond) // paused past its end
			lb := mustAcquire(t, b, "k")
			e.section(ctx, "k", func() error {
				la.Release(ctx) // the paused holder releases what it no longer holds
				if ld, err := d.TryAcquire(ctx, "k"); err == nil {
					e.section(ctx, "k", nil)
					ld.Release(ctx)
				}
				return nil
			})
			lb.Release(ctx)
		}},
	}
	for _, sc := range scenarios {
		for _, planted := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s planted %v", sc.bug, planted), func(t *testing.T) {
				if planted {
					sc.bug.Plant(t)
				}
				c := firelocktest.NewClient(t)
				e := newExclusion(c)
				sc.run(t, e, c)
				v := e.violations(t)
				switch {
				case planted && len(v) == 0:
					t.Fatalf("with %s planted the soak's checks found nothing", sc.bug)
				case !planted && len(v) > 0:
					t.Fatalf("without a planted bug: %v", v)
				}
				t.Logf("violations: %v", v)
			})
		}
	}
}

func mustAcquire(t *testing.T, l *lock.Locker, key string) *lock.Lease {
	t.Helper()
	lease, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}
