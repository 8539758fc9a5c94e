package door

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
)

// One ticket's screenshot at six gates at once, each gate sending its scan
// twice at the same time (a double tap, a retry racing its original) and
// again until it hears a verdict, while a fault proxy drops answers after
// the server processed them, delays them and resets connections. Then
// every scan is sent once more, healed: what each was told under faults
// must be what it is told now (a nonce answers the same), exactly one
// gate admitted the ticket, and Firestore holds one check-in (that gate's
// nonce) and one scan record per nonce, one of them admitted.
//
// TestSixGatesCatchesABlindEntry is its negative control.
func TestOneTicketAtSixGatesWithDoubleTapsThroughFaults(t *testing.T) {
	t.Parallel()
	if problems := sixGatesThroughFaults(t, false); len(problems) > 0 {
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// The checker catches a door that admits without looking at the check-in.
func TestSixGatesCatchesABlindEntry(t *testing.T) {
	t.Parallel()
	if problems := sixGatesThroughFaults(t, true); len(problems) == 0 {
		t.Fatal("a door that admits blind passed the six gates' check")
	} else {
		t.Logf("caught: %s", problems[0])
	}
}

func sixGatesThroughFaults(t *testing.T, blind bool) (problems []string) {
	e := newEnv(t)
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	stop := make(chan struct{})
	var healed <-chan struct{} = stop
	if !blind { // the control runs healthy: a blind door's contended retries under faults take minutes
		healed = p.InjectAtRandom(t, rand.New(rand.NewPCG(49, 13)), stop, nil)
	}
	svcs := make([]*Service, 3)
	for i := range svcs {
		c, _ := firelocktest.NewClientVia(t, p.Addr, e.project)
		svcs[i] = New(c, e.keys)
		svcs[i].hooks.blindEntry = blind
	}
	gates, rounds := 6, 4
	if blind { // a blind door admits every gate's scan: two gates show it, and twelve contended writers of one check-in take the emulator a minute and a half
		gates, rounds = 2, 1
	}
	type told struct {
		scan Scan
		err  error
	}
	var reqs []Request
	heard := map[string][]told{}
	var mu sync.Mutex
	for round := range rounds {
		tk := e.book("s3", fmt.Sprintf("A%d", round+1), "alice") // s3: reentry, so a second entry would be a bug, not a no_reentry
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range gates {
			r := Request{Scanner: fmt.Sprint("sc", g), ScreeningID: "s3", Gate: []string{"A", "B"}[g%2], Code: tk.Code, Nonce: e.nonce()}
			reqs = append(reqs, r)
			for tap := range 2 {
				svc := svcs[(g+tap)%len(svcs)]
				wg.Go(func() {
					<-start
					for try := 0; try < 20; try++ {
						ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
						s, err := svc.CheckIn(ctx, r)
						cancel()
						var ref *Refusal
						if err == nil || errors.As(err, &ref) || errors.Is(err, ErrNonceReused) {
							mu.Lock()
							heard[r.Nonce] = append(heard[r.Nonce], told{s, err})
							mu.Unlock()
							return
						}
					}
				})
			}
		}
		close(start)
		wg.Wait()
	}
	close(stop)
	<-healed
	if p.Faults() == 0 && !blind {
		t.Fatal("no fault struck: the test proves nothing")
	}
	admitted := map[string]int{} // ticket -> nonces told admitted, healed
	for _, r := range reqs {
		s, err := e.door.CheckIn(context.Background(), r)
		var ref *Refusal
		switch {
		case err == nil && s.Result == ResultAdmitted:
			admitted[s.TicketID]++
		case errors.As(err, &ref) && ref.Result == ResultAlreadyIn:
		default:
			fail("nonce %s at %s, healed: %+v %v; want admitted or already_in", r.Nonce, r.Gate, s, err)
			continue
		}
		for _, h := range heard[r.Nonce] {
			var href *Refusal
			errors.As(h.err, &href)
			if h.scan != s || Code(h.err) != Code(err) || (ref != nil && (href == nil || href.Gate != ref.Gate || !href.At.Equal(ref.At))) {
				fail("nonce %s was told %+v %v under faults, %+v %v healed", r.Nonce, h.scan, h.err, s, err)
			}
		}
	}
	if len(admitted) != rounds {
		fail("tickets admitted: %v; want each of %d once", admitted, rounds)
	}
	for id, n := range admitted {
		if n != 1 {
			fail("ticket %s admitted %d times", id, n)
		}
		c, ok := e.checkIn(id)
		if !ok || c.Seq != 1 || c.State != StateIn {
			fail("ticket %s's check-in %+v (%v), want in, seq 1", id, c, ok)
		}
	}
	if scans, checkins := e.docs("s3"); scans != rounds*gates || checkins != rounds {
		fail("%d scans, %d check-ins; want %d and %d", scans, checkins, rounds*gates, rounds)
	}
	t.Logf("%d faults; %d scans told a verdict under faults", p.Faults(), len(heard))
	return problems
}
