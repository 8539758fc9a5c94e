package sale

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
)

// A close that comes right after a publication whose commit landed late
// (0.7 s after its read) waits out the second counted from that commit,
// and then closes at once: sales/{id} shows closed a second after the
// last publication, not sooner and not much later.
func TestACloseRightAfterALatePublicationWaitsItsSecondAndCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	e.svc = New(e.fs, append(testOptions(e.log), WithTick(100*time.Millisecond, 300*time.Millisecond))...)
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	a := e.admitter()
	var armed, fired atomic.Bool
	closed := make(chan error, 1)
	a.published = func() {
		if !armed.Load() || !fired.CompareAndSwap(false, true) {
			return
		}
		// Close 0.8 s from now: about 0.1 s after this late commit.
		go func() {
			time.Sleep(800 * time.Millisecond)
			bk := booking.New(e.fs, booking.WithGate(e.svc))
			defer bk.Close()
			_, err := e.svc.Operate(context.Background(), Operation{ScreeningID: e.id, Action: ActionClose, By: olive}, bk)
			closed <- err
		}()
		time.Sleep(700 * time.Millisecond)
	}
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx, time.Now().Add(15*time.Second)) }()
	time.Sleep(2 * time.Second)
	armed.Store(true)
	e.setSeat("A1", booking.StatusHeld, time.Now().Add(time.Hour)) // a publication to make late
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("no late publication came")
	}
	deadline := time.Now().Add(5 * time.Second)
	var pubs []publication
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pubs = seen(); len(pubs) > 0 && pubs[len(pubs)-1].State == StateClosed {
			break
		}
	}
	cancel()
	<-ran
	n := len(pubs)
	if n < 2 || pubs[n-1].State != StateClosed {
		t.Fatalf("sales/{id} not closed 5 s after the close: %+v", pubs)
	}
	gap := pubs[n-1].at.Sub(pubs[n-2].at)
	if gap < publishEvery {
		t.Errorf("closed %v after the last publication's commit, want at least %v", gap, publishEvery)
	}
	if gap > publishEvery+600*time.Millisecond {
		t.Errorf("closed %v after the last publication's commit: held back longer than its second", gap)
	}
	secondApart(t, pubs)
	t.Logf("closed %v after the last publication's commit; %d writes", gap, n)
}

// Two admitters whose requests are held back on their way to Firestore
// (commits that land up to seconds after their reads), whose answers are
// delayed or dropped and whose connections are reset, and which take the
// sale over from each other as their leases lapse, while the last free
// seat flaps: sales/{id} is still written at most once a second by its
// commit times, and the flapping still reaches it.
func TestSalePublicationsStayASecondApartThroughDelaysAndTakeovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	tick := WithTick(100*time.Millisecond, 300*time.Millisecond)
	e.join("u1")
	e.join("u2")
	e.join("u3")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	a, pa := e.faultyAdmitter(tick)
	b, pb := e.faultyAdmitter(tick)
	const d = 24 * time.Second
	var wg sync.WaitGroup
	wg.Go(func() { e.run(a, d) })
	wg.Go(func() { e.run(b, d) })
	stop := time.Now().Add(d - 3*time.Second)
	var faults atomic.Int64
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 54))
		for time.Now().Before(stop) {
			p := []*firelocktest.Proxy{pa, pb}[rng.IntN(2)]
			switch rng.IntN(4) {
			case 0, 1:
				p.DelayRequests(time.Duration(150+rng.IntN(500)) * time.Millisecond)
			case 2:
				p.Delay(time.Duration(200+rng.IntN(600)) * time.Millisecond)
			case 3:
				p.DropAnswers(100 * time.Millisecond)
			}
			faults.Add(1)
			time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
			p.Heal()
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		}
	})
	time.Sleep(2 * time.Second)
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	e.flapLastSeat(stop, 300*time.Millisecond)
	wg.Wait()
	cancel()
	pubs := seen()
	secondApart(t, pubs)
	n := flips(pubs)
	t.Logf("%d writes of sales/{id}, %d flips of seatsLeft 0, %d faults", len(pubs), n, faults.Load())
	if n < 3 {
		t.Errorf("only %d flips published: the test did not reach what it tests", n)
	}
}

// failingTakings fails its next call once armed, as a takings query that
// a busy store cut off would.
type failingTakings struct{ armed atomic.Bool }

func (f *failingTakings) Takings(_ context.Context, _ string, from, _ time.Time) (int64, int64, int64, error) {
	if f.armed.CompareAndSwap(true, false) {
		return 0, 0, 0, errors.New("takings: unavailable (test)")
	}
	return figuresFor(from)
}

// A close whose first attempt fails (here its last minute's takings could
// not be counted) is tried again: the sale is closed within the run, not
// left open until the next run of the job.
func TestACloseThatFailsOnceStillClosesWithinTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	tk := &failingTakings{}
	e.svc = New(e.fs, append(testOptions(e.log), WithTakings(tk))...)
	e.join("u1")
	e.join("u2")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	a := e.admitter()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx, time.Now().Add(12*time.Second)) }()
	for deadline := time.Now().Add(5 * time.Second); len(seen()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing published in 5 s")
		}
	}
	time.Sleep(500 * time.Millisecond)
	tk.armed.Store(true)
	at := e.operate(e.svc, "close", nil)
	var pubs []publication
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pubs = seen(); pubs[len(pubs)-1].State == StateClosed {
			break
		}
	}
	cancel()
	<-ran
	if tk.armed.Load() {
		t.Fatal("the close never asked for the takings: the test did not reach what it tests")
	}
	if last := pubs[len(pubs)-1]; last.State != StateClosed {
		t.Fatalf("sales/{id} still %q 5 s after the close", last.State)
	} else if late := last.at.Sub(at); late > 3*time.Second {
		t.Errorf("closed %v after the close", late)
	}
}

// An admitter whose publications commit late (0.6 s after their reads),
// some of them aborted once by an admin's write to the screening they
// read (the transaction is tried again afresh), hands the sale over at the
// end of its run to one that takes it at once, while the last free seat
// flaps: sales/{id} stays a second apart by its commits across the
// handover, and both admitters publish.
func TestPublicationsStayASecondApartAcrossAHandoverAndAbortedAttempts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, saleOpening(time.Now().Add(time.Hour), 600, 1, 60))
	e.svc = New(e.fs, append(testOptions(e.log), WithTick(100*time.Millisecond, 300*time.Millisecond))...)
	e.join("u1")
	e.join("u2")
	e.join("u3")
	e.setSale(map[string]any{"opensAt": e.serverNow()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := e.watchPublications(ctx)
	a, b := e.admitter(), e.admitter()
	var attempts, touches atomic.Int64
	a.published = func() {
		n := attempts.Add(1)
		if n%3 == 0 { // an admin touches the screening this attempt read
			touches.Add(1)
			go e.fs.Collection(booking.Screenings).Doc(e.id).Update(context.Background(), []firestore.Update{{Path: "note", Value: n}})
		}
		time.Sleep(600 * time.Millisecond)
	}
	handover := time.Now().Add(9 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx, handover) })
	time.Sleep(500 * time.Millisecond) // a takes the sale first; b waits for it
	wg.Go(func() { b.Run(ctx, handover.Add(8*time.Second)) })
	time.Sleep(500 * time.Millisecond)
	e.setSeat("A2", booking.StatusHeld, time.Now().Add(time.Hour))
	e.flapLastSeat(handover.Add(7*time.Second), 300*time.Millisecond)
	cancel()
	wg.Wait()
	pubs := seen()
	secondApart(t, pubs)
	before, after := 0, 0
	for _, p := range pubs {
		if p.at.Before(handover) {
			before++
		} else {
			after++
		}
	}
	t.Logf("%d writes before the handover, %d after; %d late attempts, %d of them touched", before, after, attempts.Load(), touches.Load())
	if before < 3 || after < 3 || touches.Load() == 0 {
		t.Errorf("the test did not reach what it tests")
	}
}
