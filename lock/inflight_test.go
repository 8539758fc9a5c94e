package lock_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
)

// committingVia is a Locker whose commits (grants, renewals, releases) pass
// a fault proxy while its reads go to the emulator directly, as when one
// connection of a process fails and another does not; and the direct
// client.
func committingVia(t *testing.T, opts ...lock.Option) (*firelocktest.Proxy, *lock.Locker, *firestore.Client) {
	t.Helper()
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	project := proxyProject(t, p)
	direct := firelocktest.NewClientFor(t, project)
	_, copts := newClientVia(t, p.Addr)
	l := newLocker(t, direct, append([]lock.Option{lock.WithClientOptions(copts...)}, opts...)...)
	return p, l, direct
}

// leftBehind fails t if the call's error (err) does not account for a
// lease document left on key: a failed call leaves nothing (or a seal,
// nobody's lease), or says that it could not settle what it sent
// (ErrUnanswered, "could not").
func leftBehind(t *testing.T, c *firestore.Client, key string, ls lock.Leases, err error) {
	t.Helper()
	if err == nil {
		if rerr := ls.Release(context.Background()); rerr != nil {
			t.Fatal(rerr)
		}
		return
	}
	t.Logf("the call failed: %v", err)
	s, gerr := c.Collection(coll).Doc(key).Get(context.Background())
	switch {
	case isNotFound(gerr):
	case gerr != nil:
		t.Fatal(gerr)
	case s.Data()[lock.FieldOwner] == lock.SealOwner:
		// a seal: an ended lease of nobody's, no lease
	case errors.Is(err, lock.ErrUnanswered) && strings.Contains(err.Error(), "could not"):
		t.Logf("left, and said so: %v", err)
	default:
		t.Fatalf("the call failed (%v) and left a lease standing: %v", err, s.Data())
	}
}

// A grant that the caller's deadline cut off while it was still on its
// way (a slow network: the request reaches Firestore after the caller gave
// up, and after the read that settles it) must not be left standing behind
// an error that says nothing of it. The read-back that settles an
// ambiguous grant found nothing, and the grant landed after it.
func TestAGrantStillOnItsWayWhenItIsSettledIsNotLeftBehind(t *testing.T) {
	for _, acquire := range []string{"TryAcquire", "Acquire"} {
		t.Run(acquire, func(t *testing.T) {
			p, l, direct := committingVia(t, lock.WithLeaseDuration(time.Minute))
			warmUp(t, l)
			const delay = 1500 * time.Millisecond
			if err := p.DelayRequests(delay); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			var ls lock.Leases
			var err error
			if acquire == "TryAcquire" {
				ls, err = l.TryAcquireAll(ctx, []string{"k"})
			} else {
				ls, err = l.AcquireAll(ctx, []string{"k"})
			}
			cancel()
			// Let whatever was sent reach the emulator (held back by the
			// delay, from its send on), then look.
			time.Sleep(2 * delay)
			p.Heal()
			leftBehind(t, direct, "k", ls, err)
		})
	}
}

// A brief reset of the commit connection (the reads' connection fine) used
// to be ridden out by the client library's retry of the commit; a grant is
// no longer sent again blind, and must still not turn a reset that heals
// in a moment into a failed TryAcquire.
func TestATryAcquireRidesOutABriefResetOfItsCommitConnection(t *testing.T) {
	p, l, direct := committingVia(t)
	warmUp(t, l)
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	healed := time.AfterFunc(300*time.Millisecond, p.Heal)
	defer healed.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ls, err := l.TryAcquireAll(ctx, []string{"k"})
	if err != nil {
		t.Errorf("TryAcquire through a 300-ms reset: %v", err)
	}
	leftBehind(t, direct, "k", ls, err)
}

// lateCommit is a gRPC interceptor for a Locker's commit client that holds
// the nth commit whose first write is to key on its way: its caller waits
// until its context ends and hears so, and the commit reaches Firestore
// only once the test lets it go (land), after the call has settled it, as
// a request stuck in a slow network does.
type lateCommit struct {
	key  string
	nth  int
	mu   sync.Mutex
	seen int
	held sync.WaitGroup
	go_  chan struct{}
	err  error // what Firestore answered the held commit
}

func (f *lateCommit) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	cr, ok := req.(*pb.CommitRequest)
	if !ok || len(cr.Writes) == 0 || !strings.HasSuffix(cr.Writes[0].GetUpdate().GetName(), "/"+coll+"/"+f.key) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f.mu.Lock()
	f.seen++
	n := f.seen
	f.mu.Unlock()
	if n != f.nth {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f.held.Add(1)
	go func() {
		defer f.held.Done()
		<-f.go_
		f.err = invoker(context.Background(), method, req, new(pb.CommitResponse), cc, opts...)
	}()
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}

// land lets the held commit go, and waits for Firestore's answer to it.
func (f *lateCommit) land() error {
	close(f.go_)
	f.held.Wait()
	return f.err
}

// A grant held on its way until after its caller's deadline and the read
// that settled it (a takeover of an ended lease, a reentrant join, a grant
// of two keys) must not land behind an error that says nothing of it: no
// document may name the acquisition afterwards, unless the error says it
// could not be settled.
func TestALateTakeoverOrJoinIsNotLeftBehind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keys      []string
		reentrant bool
	}{
		{name: "takeover of an ended lease", keys: []string{"b"}},
		{name: "two keys, one of them a takeover", keys: []string{"a", "b"}},
		{name: "reentrant join", keys: []string{"b"}, reentrant: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := firelocktest.NewClient(t)
			f := &lateCommit{key: tc.keys[0], nth: 2, go_: make(chan struct{})}
			l := intercepted(t, c, f.intercept, lock.WithLeaseDuration(time.Minute))
			warmUp(t, l)
			// b: an ended lease of another owner, or (reentrant) a live
			// one of l's own owner; the fast path's create fails on it and
			// the try's second commit, held on its way, writes over it.
			var opts []lock.AcquireOption
			var outer *lock.Lease
			var err error
			if tc.reentrant {
				opts = append(opts, lock.Reentrant())
				if outer, err = newLocker(t, c, lock.WithOwner(l.Owner()), lock.WithLeaseDuration(time.Minute)).TryAcquire(ctx, "b", lock.Reentrant()); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := newLocker(t, c, lock.WithLeaseDuration(time.Second)).TryAcquire(ctx, "b"); err != nil {
					t.Fatal(err)
				}
				waitLeaseEnd(time.Second)
			}
			actx, cancel := context.WithTimeout(ctx, time.Second)
			ls, err := l.TryAcquireAll(actx, tc.keys, opts...)
			cancel()
			if err == nil {
				t.Fatalf("granted %v with its commit held past the deadline", ls.Keys())
			}
			t.Logf("the call failed: %v", err)
			lerr := f.land()
			t.Logf("the held commit, let go: %v", lerr)
			said := errors.Is(err, lock.ErrUnanswered) && strings.Contains(err.Error(), "could not")
			for _, k := range tc.keys {
				s, gerr := c.Collection(coll).Doc(k).Get(ctx)
				if isNotFound(gerr) {
					continue
				}
				if gerr != nil {
					t.Fatal(gerr)
				}
				holds, _ := s.Data()[lock.FieldHolds].([]any)
				owner := s.Data()[lock.FieldOwner]
				switch {
				case owner == lock.SealOwner:
				case tc.reentrant && owner == l.Owner() && len(holds) == 1:
					// the outer lease alone
				case owner != l.Owner():
				case said:
					t.Logf("%s left, and said so", k)
				default:
					t.Errorf("key %s: the call failed (%v) and its grant stands: %v", k, err, s.Data())
				}
			}
			if outer != nil {
				if err := outer.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if s, gerr := c.Collection(coll).Doc("b").Get(ctx); !isNotFound(gerr) {
					t.Errorf("the outer lease released, its document stands (%v): %v", gerr, s.Data())
				}
			}
		})
	}
}

// rpcLog records the methods of every RPC on a connection.
type rpcLog struct {
	mu      sync.Mutex
	methods []string
}

func (r *rpcLog) add(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.methods = append(r.methods, method[strings.LastIndex(method, "/")+1:])
}

func (r *rpcLog) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.methods
	r.methods = nil
	return m
}

// A grant of a free key is still one Commit RPC, and nothing else, with
// grants no longer sent again by the client library (and sealed when
// their answer is lost): the seal is for the fault path only.
func TestAFreeKeyIsStillOneCommit(t *testing.T) {
	ctx := context.Background()
	var log rpcLog
	conn, err := grpc.NewClient(os.Getenv("FIRESTORE_EMULATOR_HOST"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulators.Admin{}),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			log.add(method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			log.add(method)
			return streamer(ctx, desc, cc, method, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	opts := []option.ClientOption{option.WithGRPCConn(conn)}
	c, err := firestore.NewClient(ctx, firelocktest.ProjectID(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	l := newLocker(t, c, lock.WithClientOptions(opts...))
	warmUp(t, l)
	log.take()
	for _, acquire := range []func(context.Context, string, ...lock.AcquireOption) (*lock.Lease, error){l.TryAcquire, l.Acquire} {
		lease, err := acquire(ctx, "free")
		if err != nil {
			t.Fatal(err)
		}
		if got := log.take(); !slices.Equal(got, []string{"Commit"}) {
			t.Errorf("the grant of a free key sent %v, want one Commit", got)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := log.take(); !slices.Equal(got, []string{"Commit"}) {
			t.Errorf("the release sent %v, want one Commit", got)
		}
	}
}

// A seal is the lock's own document, no lease: WithCheck, which judges
// the lease documents an acquisition finds (a job's done mark), is not
// asked about it, and the next grant takes it over.
func TestASealIsNoLeaseForWithCheck(t *testing.T) {
	ctx := context.Background()
	c := firelocktest.NewClient(t)
	l := newLocker(t, c)
	long := time.Unix(0, 0)
	if _, err := c.Collection(coll).Doc("k").Create(ctx, map[string]any{lock.FieldOwner: lock.SealOwner,
		lock.FieldAcquiredAt: long, lock.FieldRenewedAt: long, lock.FieldLeaseSeconds: int64(1), lock.FieldExpireAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctx, "k", lock.WithCheck(func(s *firestore.DocumentSnapshot) error {
		return errors.New("checked a seal")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A Reentrant join whose answer was lost, settled by reading it back, has
// the token of its own write, later than the grant's, as Token promises
// (and as a join that heard its answer has).
func TestAJoinSettledByReadingBackHasItsOwnToken(t *testing.T) {
	ctx := context.Background()
	// The first commit of k (the fast path's create) fails on the outer
	// lease; the second, the join, lands and its answer is lost.
	f := &lostAnswers{key: "k", landed: true, lose: 2}
	l, c := lockerWithFaults(t, f, lock.WithLeaseDuration(time.Minute))
	warmUp(t, l)
	outer, err := newLocker(t, c, lock.WithOwner(l.Owner()), lock.WithLeaseDuration(time.Minute)).TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.TryAcquire(ctx, "k", lock.Reentrant())
	if err != nil {
		t.Fatal(err)
	}
	if inner.Token() <= outer.Token() {
		t.Errorf("the join's token %d is not above the grant's %d", inner.Token(), outer.Token())
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Known limit (skipped unless FIRELOCK_KNOWN_LIMITS is set): a create held on its way while another
// acquisition holds the key cannot be sealed out (a seal writes a key only
// in a state a grant of the try could have been conditioned on, and never
// over another's live lease). When that lease is released (its document
// deleted) before the create arrives, the create lands, and the failed
// call's error says only its deadline. It takes a request held on its way
// past its caller's deadline, the settling read and another acquisition's
// whole hold.
func TestACreateHeldOnItsWayPastAnotherHoldIsNotSealed(t *testing.T) {
	if os.Getenv("FIRELOCK_KNOWN_LIMITS") == "" {
		t.Skip("known limit: a create cannot be sealed out while another holds the key (docs/library.md); FIRELOCK_KNOWN_LIMITS=1 runs it")
	}
	ctx := context.Background()
	c := firelocktest.NewClient(t)
	f := &lateCommit{key: "k", nth: 1, go_: make(chan struct{})}
	l := intercepted(t, c, f.intercept, lock.WithLeaseDuration(time.Minute))
	warmUp(t, l)
	other := newLocker(t, c)
	got := make(chan *lock.Lease, 1)
	go func() { // while the create is held on its way
		time.Sleep(300 * time.Millisecond)
		lease, _ := other.TryAcquire(ctx, "k")
		got <- lease
	}()
	actx, cancel := context.WithTimeout(ctx, time.Second)
	ls, err := l.TryAcquireAll(actx, []string{"k"})
	cancel()
	held := <-got
	if held == nil {
		t.Fatal("the other acquisition did not get the key")
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the held create, let go: %v", f.land())
	leftBehind(t, c, "k", ls, err)
}
