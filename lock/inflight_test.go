package lock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/firelock/firelock/firelocktest"
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
