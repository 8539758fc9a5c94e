package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
