package lock_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// countUnderLock runs workers x iterations unguarded read-modify-writes of
// one counter, each inside an acquisition of "counter" through lockerFor(w),
// and returns the final count: exact only if acquisitions exclude each other.
func countUnderLock(t *testing.T, c *firestore.Client, workers, iterations int, lockerFor func(w int) *lock.Locker) int64 {
	t.Helper()
	ctx := context.Background()
	data := c.Collection("data").Doc("counter")
	if _, err := data.Set(ctx, map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		l := lockerFor(w)
		wg.Go(func() {
			for range iterations {
				err := l.WithLock(ctx, "counter", func(ctx context.Context, _ *lock.Lease) error {
					s, err := data.Get(ctx)
					if err != nil {
						return err
					}
					_, err = data.Set(ctx, map[string]any{"n": s.Data()["n"].(int64) + 1})
					return err
				})
				if err != nil {
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
	return s.Data()["n"].(int64)
}

// One Locker shared by goroutines (the README's pattern: one per process,
// WithLock per request) must exclude its own acquisitions from each other.
func TestSharedLockerExcludesItsGoroutines(t *testing.T) {
	t.Parallel() // its own project; judged on the counter, not on time
	c := firelocktest.NewClient(t)
	const workers, iterations = 32, 10
	shared := newLocker(t, c)
	if got := countUnderLock(t, c, workers, iterations, func(int) *lock.Locker { return shared }); got != workers*iterations {
		t.Fatalf("counter = %d, want %d: two acquisitions of one Locker overlapped", got, workers*iterations)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d lease documents left after every release", n)
	}
}

// Lockers with the same owner (WithOwner: one execution, several handles)
// exclude each other unless the caller asks for reentrancy.
func TestSameOwnerLockersExcludeEachOther(t *testing.T) {
	t.Parallel() // its own project; judged on the counter, not on time
	c := firelocktest.NewClient(t)
	owner := newLocker(t, c).Owner()
	const workers, iterations = 8, 10
	if got := countUnderLock(t, c, workers, iterations, func(int) *lock.Locker {
		return newLocker(t, c, lock.WithOwner(owner))
	}); got != workers*iterations {
		t.Fatalf("counter = %d, want %d", got, workers*iterations)
	}
}

func TestSameOwnerCannotShortenALease(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	long := newLocker(t, c, lock.WithLeaseDuration(30*time.Second))
	short := newLocker(t, c, lock.WithOwner(long.Owner()), lock.WithLeaseDuration(time.Second))
	first, err := long.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("second acquisition without Reentrant: err = %v, want ErrHeld", err)
	}
	inner, err := short.TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatalf("reentrant acquisition: %v", err)
	}
	if got := leaseOf(t, c, "k")[lock.FieldLeaseSeconds]; got != int64(30) {
		t.Fatalf("leaseSeconds = %v after a reentrant acquire with a 1s lease, want 30", got)
	}
	if err := inner.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got := leaseOf(t, c, "k")[lock.FieldLeaseSeconds]; got != int64(30) {
		t.Fatalf("leaseSeconds = %v after the shorter holder renewed, want 30", got)
	}
	waitLeaseEnd(time.Second)
	if err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		return first.Guard(tx)
	}); err != nil {
		t.Fatalf("the first holder lost its lease to a shorter reentrant one: %v", err)
	}
}

// Reentrancy is a hold count: every release but the last keeps the lease.
func TestReentrantReleasesCountDown(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c)
	outer, err := l.TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatalf("reentrant acquire: %v", err)
	}
	if _, err := newLocker(t, c).TryAcquire(ctx, "k", lock.Reentrant()); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("another owner, reentrant: err = %v, want ErrHeld", err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, c, coll); n != 1 {
		t.Fatalf("%d lease documents after the first of two releases, want 1", n)
	}
	if err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		return inner.Guard(tx)
	}); err != nil {
		t.Fatalf("inner holder after the outer released: %v", err)
	}
	if err := c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		return outer.Guard(tx)
	}); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("released outer holder guards: err = %v, want ErrNotHeld", err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d lease documents after the last release", n)
	}
}

// proxied returns a client and a Locker that reach the emulator through a
// fault proxy, and a client that reaches it directly (to check what
// Firestore holds whatever the proxy does).
func proxied(t *testing.T, opts ...lock.Option) (*firelocktest.Proxy, *lock.Locker, *firestore.Client) {
	t.Helper()
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	p := firelocktest.NewProxy(t, host)
	project := proxyProject(t, p)
	direct := firelocktest.NewClientFor(t, project)
	c, copts := newClientVia(t, p.Addr)
	l := newLocker(t, c, append([]lock.Option{lock.WithClientOptions(copts...)}, opts...)...)
	return p, l, direct
}

// proxiedProjects is the project of each proxied test, by its proxy's
// address: tests that run in parallel each reach their own.
var (
	proxiedMu       sync.Mutex
	proxiedProjects = map[string]string{}
)

// proxyProject gives p's test a fresh project, which clients made by
// newClientVia(t, p.Addr) reach.
func proxyProject(t *testing.T, p *firelocktest.Proxy) string {
	t.Helper()
	project := firelocktest.ProjectID(t)
	proxiedMu.Lock()
	defer proxiedMu.Unlock()
	proxiedProjects[p.Addr] = project
	return project
}

func newClientVia(t *testing.T, addr string) (*firestore.Client, []option.ClientOption) {
	t.Helper()
	proxiedMu.Lock()
	project, ok := proxiedProjects[addr]
	proxiedMu.Unlock()
	if !ok {
		t.Fatalf("no project for the proxy at %s: call proxied or proxyProject first", addr)
	}
	return firelocktest.NewClientVia(t, addr, project)
}

// A grant whose answer is lost (it committed, the caller never heard) is
// settled: handed back as a lease, or removed. It never blocks the key.
func TestLostGrantAnswerLeavesNoOrphan(t *testing.T) {
	p, l, direct := proxied(t, lock.WithLeaseDuration(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.DropAnswers(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	healed := time.AfterFunc(1500*time.Millisecond, p.Heal)
	defer healed.Stop()
	lease, err := l.TryAcquire(ctx, "k")
	if err == nil {
		t.Fatalf("TryAcquire succeeded after its deadline with every answer dropped")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if lease != nil {
		t.Fatal("a failed TryAcquire returned a lease")
	}
	s, rerr := direct.Collection(coll).Doc("k").Get(context.Background())
	if rerr == nil && s.Exists() {
		t.Fatalf("the failed grant left a lease behind: %v", s.Data())
	}
	// And so the key is free for the next caller, at once.
	if _, err := newLocker(t, direct).TryAcquire(context.Background(), "k"); err != nil {
		t.Fatalf("next caller: %v", err)
	}
}

// The lock's commits go to the database the given client talks to: a
// client made for one emulator keeps its grants there, even when the
// environment names another emulator by the time a Locker is made.
func TestCommitsFollowTheGivenClient(t *testing.T) {
	ctx := context.Background()
	project := firelocktest.ProjectID(t)
	here := firelocktest.NewClientFor(t, project)
	first := newLocker(t, here)

	orig := os.Getenv("FIRESTORE_EMULATOR_HOST")
	os.Unsetenv("FIRESTORE_EMULATOR_HOST")
	other, err := emulators.Start(ctx, emulators.Firestore)
	if err != nil {
		os.Setenv("FIRESTORE_EMULATOR_HOST", orig)
		t.Fatal(err)
	}
	defer func() { other.Stop(); os.Setenv("FIRESTORE_EMULATOR_HOST", orig) }()

	second, err := lock.New(here, coll) // env now names the other emulator
	if err == nil {
		if _, err := first.TryAcquire(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		_, err = second.TryAcquire(ctx, "k")
	}
	switch {
	case errors.Is(err, lock.ErrClientMismatch):
	case err == nil:
		t.Fatal("two Lockers on one client granted the same key twice")
	default:
		t.Fatalf("err = %v, want ErrClientMismatch", err)
	}
	// Told the client's own options, the Locker commits where the client reads.
	third, err := lock.New(here, coll, lock.WithClientOptions(option.WithGRPCConn(dialAdmin(t, orig))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := third.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("third Locker: err = %v, want ErrHeld (the first holds k in the client's database)", err)
	}
}

func TestNamedDatabase(t *testing.T) {
	ctx := context.Background()
	project := firelocktest.ProjectID(t)
	named, err := firestore.NewClientWithDatabase(ctx, project, "tickets")
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	def := firelocktest.NewClientFor(t, project)
	l := newLocker(t, named)
	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := named.Collection(coll).Doc("k").Get(ctx); err != nil || !s.Exists() {
		t.Fatalf("the lease is not in the named database: %v", err)
	}
	if s, err := def.Collection(coll).Doc("k").Get(ctx); err == nil && s.Exists() {
		t.Fatal("the lease landed in the default database")
	}
	if err := named.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		return lease.Guard(tx)
	}); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A grant that starts first and commits last (held up here by a transaction
// that has read one of its keys) still gets a later token than the grant
// that committed before it.
func TestTokenIncreasesInCommitOrderWithASlowGrant(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	slow, fast := newLocker(t, c), newLocker(t, c)
	blocker := c.Collection(coll).Doc("blocker")

	inTx := make(chan struct{})
	finish := make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		var once sync.Once
		txDone <- c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if _, err := tx.Get(blocker); err != nil && !isNotFound(err) {
				return err
			}
			once.Do(func() { close(inTx) })
			<-finish
			return tx.Set(c.Collection("data").Doc("x"), map[string]any{"n": 1})
		})
	}()
	<-inTx

	type result struct {
		ls  lock.Leases
		err error
	}
	slowDone := make(chan result, 1)
	go func() {
		ls, err := slow.TryAcquireAll(ctx, []string{"k", "blocker"})
		slowDone <- result{ls, err}
	}()
	time.Sleep(300 * time.Millisecond) // the slow grant is now waiting on the blocker's lock

	var quick *lock.Lease
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		quick, err = fast.TryAcquire(tctx, "k")
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		close(finish)
		t.Fatalf("fast grant: %v", err)
	}
	if err := quick.Release(ctx); err != nil {
		t.Fatal(err)
	}
	close(finish)
	if err := <-txDone; err != nil {
		t.Logf("blocking transaction: %v", err)
	}
	r := <-slowDone
	if r.err != nil {
		t.Fatalf("the slow grant failed (%v): the test could not build a grant that commits last", r.err)
	}
	if r.ls[0].Token() <= quick.Token() {
		t.Fatalf("slow grant committed after the fast one but has token %d <= %d", r.ls[0].Token(), quick.Token())
	}
}

func dialAdmin(t *testing.T, host string) *grpc.ClientConn {
	conn, err := grpc.NewClient(host, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulators.Admin{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// ReleaseInBatch fences a batch: it commits, releasing the lease with the
// writes, only while the lease document is exactly as this acquisition
// left it; a lease with no time left is refused before anything is sent.
func TestReleaseInBatchFencesTheBatch(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	l := newLocker(t, c)
	data := c.Collection("data").Doc("x")

	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	b := c.Batch()
	if err := (lock.Leases{lease}).ReleaseInBatch(b); err != nil {
		t.Fatal(err)
	}
	b.Set(data, map[string]any{"n": 1})
	if _, err := b.Commit(ctx); err != nil {
		t.Fatalf("intact lease: %v", err)
	}
	if n := countDocs(t, c, coll); n != 0 {
		t.Fatalf("%d lease documents after the batch released the lease", n)
	}

	// The lease document changed since (here: another holder of the same
	// owner joined): the batch fails and writes nothing.
	stale, err := l.TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, "k", lock.Reentrant()); err != nil {
		t.Fatal(err)
	}
	b = c.Batch()
	if err := (lock.Leases{stale}).ReleaseInBatch(b); err != nil {
		t.Fatal(err)
	}
	b.Set(data, map[string]any{"n": 2})
	if _, err := b.Commit(ctx); err == nil {
		t.Fatal("a batch fenced by a lease whose document changed committed")
	}
	if s, _ := data.Get(ctx); s.Data()["n"] != int64(1) {
		t.Fatalf("data %v: the failed batch wrote", s.Data())
	}

	// A lease with no time left is refused before anything is sent.
	short := newLocker(t, c, lock.WithLeaseDuration(time.Second))
	ended, err := short.TryAcquire(ctx, "short")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	if err := (lock.Leases{ended}).ReleaseInBatch(c.Batch()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ended lease: err = %v, want ErrNotHeld", err)
	}
}
