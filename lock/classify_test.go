package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/lock"
)

// Every error of TryAcquire, TryAcquireAll, Acquire and AcquireAll is one a
// caller can branch on as the package doc says, under real concurrency and
// random faults (answers lost, delayed, connections reset), with short
// deadlines that cut calls off mid-flight; and whatever the calls said,
// Firestore holds afterwards no lease that an answer does not account for.
func TestEveryGrantErrorIsClassifiableUnderFaults(t *testing.T) {
	const (
		workers = 24
		run     = 5 * time.Second
		lease   = time.Second
	)
	p, _, direct := proxied(t)
	lockers := make([]*lock.Locker, historyClients)
	for i := range lockers {
		c, copts := newClientVia(t, p.Addr)
		lockers[i] = newLocker(t, c, lock.WithLeaseDuration(lease), lock.WithClientOptions(copts...))
	}
	keys := []string{"c0", "c1", "c2", "c3"}
	stop := make(chan struct{})
	chaos := p.InjectAtRandom(t, rand.New(rand.NewPCG(7, 0)), stop, nil)
	var mu sync.Mutex
	explained := map[string]int{} // leases an answer says may be left, by owner
	var calls, granted, unanswered, heldErrs, deadlines, other int
	var wg sync.WaitGroup
	deadline := time.Now().Add(run)
	for w := range workers {
		l, err := lockers[w%len(lockers)].ForOwner(fmt.Sprintf("w%02d", w))
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(7, uint64(w+1)))
		wg.Go(func() {
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(200+rnd.IntN(1300))*time.Millisecond)
				op := rnd.IntN(4)
				ks := []string{keys[rnd.IntN(len(keys))]}
				if op >= 2 {
					ks = append(ks, keys[rnd.IntN(len(keys))])
					if ks[0] == ks[1] {
						ks = ks[:1]
					}
				}
				var ls lock.Leases
				var err error
				switch op {
				case 0, 2:
					ls, err = l.TryAcquireAll(ctx, ks)
				default:
					ls, err = l.AcquireAll(ctx, ks)
				}
				cancel()
				var held *lock.HeldError
				mu.Lock()
				calls++
				switch {
				case err == nil:
					granted++
				case errors.Is(err, lock.ErrUnanswered):
					unanswered++
				case errors.Is(err, lock.ErrHeld):
					heldErrs++
				case errors.Is(err, context.DeadlineExceeded):
					deadlines++
				default:
					other++
					t.Logf("%v %q: unclassified: %v", op, ks, err)
				}
				if err != nil && ls != nil {
					t.Errorf("%q: leases %v beside the error %v", ks, ls.Keys(), err)
				}
				if errors.Is(err, lock.ErrUnanswered) && errors.As(err, &held) {
					t.Logf("%q: ErrUnanswered beside a *HeldError: %v", ks, err)
				}
				if (op == 1 || op == 3) && errors.Is(err, lock.ErrHeld) && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Acquire %q answered held before its deadline: %v", ks, err)
				}
				if err != nil && strings.Contains(err.Error(), "could not") {
					explained[l.Owner()] += len(ks)
				}
				mu.Unlock()
				if err != nil {
					continue
				}
				time.Sleep(time.Duration(rnd.IntN(100)) * time.Millisecond)
				rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				if rerr := ls.Release(rctx); rerr != nil {
					mu.Lock()
					explained[l.Owner()] += len(ks)
					mu.Unlock()
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-chaos
	t.Logf("%d calls, %d faults: granted %d, ErrUnanswered %d, ErrHeld %d, deadline only %d, other %d",
		calls, p.Faults(), granted, unanswered, heldErrs, deadlines, other)
	// What Firestore holds: every lease document left is one that an
	// answer said may be left (not read back, not removed, not released).
	snaps, err := direct.Collection(coll).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]int{}
	for _, s := range snaps {
		owner, _ := s.Data()[lock.FieldOwner].(string)
		if strings.HasPrefix(owner, "w") {
			left[owner]++
		}
	}
	for owner, n := range left {
		if n > explained[owner] {
			var docs []string
			for _, s := range snaps {
				if s.Data()[lock.FieldOwner] == owner {
					docs = append(docs, fmt.Sprintf("%s %v", s.Ref.ID, s.Data()))
				}
			}
			t.Errorf("%s left %d leases, its answers account for %d: %v", owner, n, explained[owner], docs)
		}
	}
}
