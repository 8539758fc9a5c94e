package lock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
)

// Acquire with a context that has no deadline does not hang on one
// unanswered Commit (issue #29.8: on a loaded emulator a grant's Commit went
// unanswered for four minutes while a second caller got the key). Every RPC
// the lock sends ends after about a lease; an unanswered grant is settled
// as ambiguous and tried again, and the caller gets the key once the other
// holder lets go, with a higher token.
func TestAcquireDoesNotHangOnAnUnansweredCommit(t *testing.T) {
	const lease = 2 * time.Second
	p, l, direct := proxied(t, lock.WithLeaseDuration(lease))
	if _, err := l.TryAcquire(context.Background(), "warm"); err != nil { // connections up, client verified
		t.Fatal(err)
	}
	if err := p.Blackhole(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		lease *lock.Lease
		err   error
	}
	got := make(chan result, 1)
	go func() {
		ls, err := l.Acquire(context.Background(), "k") // no deadline
		got <- result{ls, err}
	}()
	// Meanwhile another caller takes the key and keeps it a while.
	time.Sleep(300 * time.Millisecond)
	other, err := newLocker(t, direct, lock.WithLeaseDuration(lease)).TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatalf("the second caller: %v", err)
	}
	_, stop := other.KeepAlive(context.Background())
	time.Sleep(lease / 2)
	p.Heal()
	time.Sleep(lease)
	stop()
	if err := other.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("Acquire: %v", r.err)
		}
		if r.lease.Token() <= other.Token() {
			t.Fatalf("the first caller's token %d is not above the second caller's %d", r.lease.Token(), other.Token())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Acquire without a deadline still blocked 30 s after its Commit went unanswered")
	}
}

// TryAcquire with a context that has no deadline returns when its Commit
// (and the read that settles it) go unanswered: ErrUnanswered after about
// a lease and the settling, and nothing left to block the key.
func TestTryAcquireReturnsWhenItsCommitGoesUnanswered(t *testing.T) {
	t.Parallel() // its own project and proxy; it mostly waits on an unanswered call
	const lease = 2 * time.Second
	p, l, direct := proxied(t, lock.WithLeaseDuration(lease))
	if _, err := l.TryAcquire(context.Background(), "warm"); err != nil {
		t.Fatal(err)
	}
	if err := p.Blackhole(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.TryAcquire(context.Background(), "k")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, lock.ErrUnanswered) {
			t.Fatalf("TryAcquire through a black hole: %v, want ErrUnanswered", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("TryAcquire without a deadline still blocked 30 s after its Commit went unanswered")
	}
	p.Heal()
	if _, err := newLocker(t, direct).TryAcquire(context.Background(), "k"); err != nil {
		t.Fatalf("the key after the unanswered grant: %v", err)
	}
}

// Renew and Release with contexts that have no deadline return after about
// a lease when their RPCs go unanswered, instead of hanging.
func TestRenewAndReleaseDoNotHangOnUnansweredRPCs(t *testing.T) {
	t.Parallel() // its own projects and proxies; it mostly waits on unanswered calls
	const lease = 2 * time.Second
	for _, op := range []string{"renew", "release"} {
		t.Run(op, func(t *testing.T) {
			p, l, _ := proxied(t, lock.WithLeaseDuration(lease))
			ls, err := l.TryAcquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Blackhole(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				if op == "renew" {
					done <- ls.Renew(context.Background())
				} else {
					done <- ls.Release(context.Background())
				}
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("%s through a black hole answered success", op)
				}
				if !errors.Is(err, lock.ErrUnanswered) && !errors.Is(err, lock.ErrNotHeld) {
					t.Logf("%s: %v", op, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s without a deadline still blocked 30 s after its RPC went unanswered", op)
			}
			p.Heal()
		})
	}
}

// A grant of several keys cut off by its caller's deadline is read back
// and removed again, in one batch conditioned on each document as read.
// Another acquisition of the same owner that joined one key (Reentrant)
// between the read and the removal failed the whole batch, and the grant
// was taken for removed: every other key stayed held for the lease, while
// the error said nothing of the grant was left.
func TestAGrantOfManyKeysCutOffIsRemovedFromEveryKey(t *testing.T) {
	p, l, direct := proxied(t, lock.WithLeaseDuration(10*time.Second))
	joiner := newLocker(t, direct, lock.WithOwner(l.Owner()), lock.WithLeaseDuration(10*time.Second))
	ctx := context.Background()
	warmUp(t, l)
	// Every answer comes 2 s late: the grant lands at once, its caller's
	// deadline ends the wait after 1 s, and the read that settles it is
	// answered 2 s after it was read, as is the removal.
	if err := p.Delay(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	joined := make(chan error, 1)
	go func() { // once the grant stands, and the settling read has been read: join key a
		ref := direct.Collection(coll).Doc("a")
		for range 100 {
			if s, err := ref.Get(ctx); err == nil && s.Data()[lock.FieldOwner] == l.Owner() {
				time.Sleep(1800 * time.Millisecond)
				lease, err := joiner.TryAcquire(ctx, "a", lock.Reentrant())
				if err == nil {
					err = lease.Release(ctx)
				}
				joined <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		joined <- errors.New("the grant was never seen standing")
	}()
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	ls, err := l.TryAcquireAll(actx, []string{"a", "b", "c"})
	p.Heal()
	if ls != nil {
		t.Fatalf("granted %v past the caller's deadline", ls.Keys())
	}
	if jerr := <-joined; jerr != nil {
		t.Fatalf("the scenario needs the join of a between the read and the removal: %v", jerr)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrUnanswered) {
		t.Errorf("TryAcquireAll: %v; want the deadline and ErrUnanswered (a grant came and went)", err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if s, err := direct.Collection(coll).Doc(k).Get(ctx); !isNotFound(err) {
			t.Errorf("key %s still held after the grant was settled (%v): %v", k, err, s.Data())
		}
	}
}

// A Locker's first commit proves that its commit client reaches the
// database its *firestore.Client reaches: a probe created through the one
// is deleted through the other. The delete's answer was lost, the client
// library sent it again, and the retry found the probe gone (its first
// attempt had deleted it): that was taken for a probe written to another
// database, ErrClientMismatch, a configuration error a caller gives up on,
// for a network fault. (Found by TestEveryGrantErrorIsClassifiableUnderFaults.)
func TestALostAnswerToTheProbesDeleteIsNoClientMismatch(t *testing.T) {
	p, _, _ := proxied(t)
	c, _ := newClientVia(t, p.Addr)
	// Commits go straight to the emulator (FIRESTORE_EMULATOR_HOST); the
	// client's reads and the probe's delete pass the proxy.
	l := newLocker(t, c)
	if _, err := c.Collection(coll).Doc("k").Get(context.Background()); !isNotFound(err) { // the client's connection up
		t.Fatal(err)
	}
	if err := p.DropAnswers(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	healed := time.AfterFunc(time.Second, p.Heal)
	defer healed.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := l.TryAcquire(ctx, "k")
	if errors.Is(err, lock.ErrClientMismatch) {
		t.Fatalf("a lost answer taken for a client mismatch: %v", err)
	}
	if err != nil {
		t.Fatalf("TryAcquire after the fault healed: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// lostAnswers is a gRPC interceptor for a Locker's commit client that
// stands in for a network fault on the commits of one key: each of the
// first `lose` commits reaches Firestore and is answered there (it lands,
// or fails its precondition), or is refused before it is sent (landed
// false), and its caller hears Unavailable either way, as when a
// connection drops. after, if set, runs once the commit that
// follows them has been answered.
type lostAnswers struct {
	key     string
	deletes bool // the commits that delete the key (releases), not those that write it
	landed  bool
	lose    int
	after   func()
	mu      sync.Mutex
	seen    int
}

func (f *lostAnswers) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	cr, ok := req.(*pb.CommitRequest)
	name := ""
	if ok && len(cr.Writes) > 0 {
		name = cr.Writes[0].GetUpdate().GetName()
		if f.deletes {
			name = cr.Writes[0].GetDelete()
		}
	}
	if !strings.HasSuffix(name, "/"+coll+"/"+f.key) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f.mu.Lock()
	f.seen++
	n := f.seen
	f.mu.Unlock()
	if n <= f.lose {
		if f.landed { // sent, and answered: the answer is lost, whatever it was
			_ = invoker(ctx, method, req, reply, cc, opts...)
		}
		return status.Error(codes.Unavailable, "connection lost (planted)")
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if n == f.lose+1 && f.after != nil {
		f.after()
	}
	return err
}

// lockerWithFaults is a Locker whose commits pass f, on the emulator with
// no proxy, and the client it reads with.
func lockerWithFaults(t *testing.T, f *lostAnswers, opts ...lock.Option) (*lock.Locker, *firestore.Client) {
	t.Helper()
	c := firelocktest.NewClient(t)
	return intercepted(t, c, f.intercept, opts...), c
}

// intercepted is a Locker of c whose commits pass intercept, on the
// emulator with no proxy.
func intercepted(t *testing.T, c *firestore.Client, intercept grpc.UnaryClientInterceptor, opts ...lock.Option) *lock.Locker {
	t.Helper()
	conn, err := grpc.NewClient(os.Getenv("FIRESTORE_EMULATOR_HOST"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulators.Admin{}),
		grpc.WithUnaryInterceptor(intercept))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return newLocker(t, c, append([]lock.Option{lock.WithClientOptions(option.WithGRPCConn(conn))}, opts...)...)
}

// A grant that landed but whose answer was lost was sent again by the
// client library; the retry failed its precondition (the grant it repeats
// stood already), and the caller's deadline passed before the read that
// would have found the grant: the call failed on its deadline alone and
// left the key held by nobody who knew it. (Found by
// TestEveryGrantErrorIsClassifiableUnderFaults.) A grant whose answer was
// lost is settled by reading it back, as the package doc says: it is the
// caller's lease, or removed.
func TestAGrantWhoseAnswerWasLostIsNotSentAgainBlind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &lostAnswers{key: "k", landed: true, lose: 1, after: cancel}
	l, c := lockerWithFaults(t, f, lock.WithLeaseDuration(time.Minute))
	warmUp(t, l)
	lease, err := l.TryAcquire(ctx, "k")
	s, gerr := c.Collection(coll).Doc("k").Get(context.Background())
	switch {
	case err == nil:
		if lease.Token() == 0 {
			t.Error("a lease without its token")
		}
		if err := lease.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	case isNotFound(gerr) || errors.Is(err, lock.ErrUnanswered) && strings.Contains(err.Error(), "could not"):
		// failed, and nothing left (or it says what it may have left)
	default:
		t.Fatalf("TryAcquire failed (%v) and left its grant standing: %v", err, s.Data())
	}
}

// A grant refused before it reached Firestore (a connection that was down)
// is tried again within the same call, as the client library did: the
// caller gets the key, not Unavailable. A try whose every commit was
// refused (the grants, and the seals that would make sure they never land
// later) says ErrUnanswered once its settle budget is spent, leaves
// nothing, and Acquire tries again.
func TestAGrantThatNeverLandedIsTriedAgain(t *testing.T) {
	f := &lostAnswers{key: "k", landed: false, lose: 2}
	l, c := lockerWithFaults(t, f, lock.WithLeaseDuration(2*time.Second))
	warmUp(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire through two refused connections: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	f.mu.Lock()
	f.seen, f.lose = 0, 1<<30 // every commit of k
	f.mu.Unlock()
	if _, err := l.TryAcquire(ctx, "k"); !errors.Is(err, lock.ErrUnanswered) {
		t.Fatalf("TryAcquire whose every commit was refused: %v, want ErrUnanswered", err)
	}
	if s, err := c.Collection(coll).Doc("k").Get(ctx); !isNotFound(err) {
		t.Fatalf("a try whose commits never landed left %v (%v)", s.Data(), err)
	}
	f.mu.Lock()
	f.lose = 0 // the connection holds again
	f.mu.Unlock()
	lease, err = l.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("Acquire once the connection held: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A release whose answer was lost, of a lease another owner had taken over
// after it ended, said nil: it read the key back, found it not naming this
// acquisition, and took that for its own delete having landed (CI's run of
// 11-29 15:30: TestMetricsCountALostLeaseOnce, a release of a 1-s lease
// unanswered within its bound). A delete conditioned on the lease as we
// wrote it cannot have landed under a document that was never deleted
// since: the release says ErrNotHeld, as when it hears its answer.
func TestAReleaseUnansweredOfALeaseTakenOverSaysNotHeld(t *testing.T) {
	ctx := context.Background()
	f := &lostAnswers{key: "k", deletes: true, landed: true, lose: 1}
	l, c := lockerWithFaults(t, f, lock.WithLeaseDuration(time.Second))
	warmUp(t, l)
	lease, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	other, err := newLocker(t, c).TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("takeover after the lease ended: %v", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release, unanswered, of a lease taken over: %v, want ErrNotHeld", err)
	}
	if s, err := c.Collection(coll).Doc("k").Get(ctx); err != nil || s.Data()[lock.FieldOwner] != other.Owner() {
		t.Fatalf("the new holder's lease: %v (%v)", s.Data(), err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// And a release whose answer was lost after it landed is done.
	f.mu.Lock()
	f.seen = 0
	f.mu.Unlock()
	lease, err = l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release whose answer was lost after it landed: %v", err)
	}
	if _, err := c.Collection(coll).Doc("k").Get(ctx); !isNotFound(err) {
		t.Fatalf("the key after the release: %v", err)
	}
}
