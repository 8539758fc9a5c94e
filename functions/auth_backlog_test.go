package functions

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"
)

// outageUsers is an Auth that hangs until up is closed, then answers each
// lookup in 20 ms.
type outageUsers struct {
	up    chan struct{}
	calls atomic.Int32
}

func (o *outageUsers) VerifyIDToken(context.Context, string) (*auth.Token, error) { return nil, nil }

func (o *outageUsers) GetUsers(ctx context.Context, ids []auth.UserIdentifier) (*auth.GetUsersResult, error) {
	o.calls.Add(1)
	select {
	case <-o.up:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	time.Sleep(20 * time.Millisecond)
	res := &auth.GetUsersResult{}
	for _, id := range ids {
		res.Users = append(res.Users, &auth.UserRecord{UserInfo: &auth.UserInfo{UID: id.(auth.UIDIdentifier).UID}})
	}
	return res, nil
}

// While Auth hangs, the callers that give up leave their lookups queued
// behind the two in flight. Once Auth answers again, a lookup that no one
// waits for any more is not sent: the next caller is not held behind the
// backlog of an outage (before, it waited for every abandoned lookup, 20 ms
// each two at a time, and gave up too).
func TestLookupsNoOneWaitsForAreNotSent(t *testing.T) {
	o := &outageUsers{up: make(chan struct{})}
	var c userStates
	var wg sync.WaitGroup
	for round := range 60 { // callers retrying through the outage, each giving up
		for i := range 100 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
				defer cancel()
				c.get(ctx, o, fmt.Sprintf("user-%d-%d", round%3, i), time.Minute)
			})
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	queued := o.calls.Load()
	close(o.up) // Auth is back
	time.Sleep(5 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.get(ctx, o, "newcomer", time.Minute); err != nil {
		t.Errorf("the first caller after the outage: %v after %v (%d lookups sent after it, %d before)",
			err, time.Since(start).Round(time.Millisecond), o.calls.Load()-queued, queued)
	}
}

// batchUsers answers every lookup after 20 ms, and records how many users
// each asked for and the most lookups it had in flight at once.
type batchUsers struct {
	mu       sync.Mutex
	sizes    []int
	inFlight int
	most     int
}

func (b *batchUsers) VerifyIDToken(context.Context, string) (*auth.Token, error) { return nil, nil }

func (b *batchUsers) GetUsers(_ context.Context, ids []auth.UserIdentifier) (*auth.GetUsersResult, error) {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ids))
	b.inFlight++
	b.most = max(b.most, b.inFlight)
	b.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	b.mu.Lock()
	b.inFlight--
	b.mu.Unlock()
	res := &auth.GetUsersResult{}
	for _, id := range ids {
		res.Users = append(res.Users, &auth.UserRecord{UserInfo: &auth.UserInfo{UID: id.(auth.UIDIdentifier).UID}})
	}
	return res, nil
}

// 250 users that miss the cache at once, each calling twice, are looked up
// in lookups of at most 100 users (the Admin SDK's GetUsers takes no
// more), at most lookupsInFlight at a time, and every user is cached. (A
// second call that comes while its user's lookup is out joins the next
// one, so a user may be asked for twice.)
func TestLookupsTakeAHundredUsersTwoAtATime(t *testing.T) {
	b := &batchUsers{}
	var c userStates
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() {
			uid := fmt.Sprintf("user-%d", i%250)
			if _, err := c.get(context.Background(), b, uid, time.Minute); err != nil {
				t.Errorf("%s: %v", uid, err)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range b.sizes {
		if n > maxLookup {
			t.Errorf("a lookup of %d users, want at most %d", n, maxLookup)
		}
		total += n
	}
	if total < 250 || total > 500 || b.most > lookupsInFlight {
		t.Fatalf("lookups of %v users (%d in all, want 250 to 500), at most %d at once (want at most %d)", b.sizes, total, b.most, lookupsInFlight)
	}
	for i := range 250 {
		if _, ok := c.m[fmt.Sprintf("user-%d", i)]; !ok {
			t.Fatalf("user-%d not cached", i)
		}
	}
}
