package sale

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// projectOf is the project a test client reaches.
func projectOf(fs *firestore.Client) string {
	return strings.Split(fs.Collection("x").Doc("y").Path, "/")[1]
}

// prodService is a Service with the contract's windows and ticks (only the
// log goes to the test's buffer).
func (e *env) prodService(opts ...Option) *Service {
	return New(e.fs, append([]Option{WithLogger(slog.New(slog.NewJSONHandler(e.log, nil)))}, opts...)...)
}

// bookWhenAdmitted books a seat for whichever of uids is admitted first,
// as booking does (the gate decides on the pass read in the transaction
// that carries its updates), until deadline. It returns who booked and the
// update time of the pass that turned done.
func (e *env) bookWhenAdmitted(svc *Service, uids []string, deadline time.Time) (string, time.Time) {
	e.t.Helper()
	ctx := context.Background()
	for time.Now().Before(deadline) {
		for _, uid := range uids {
			err := e.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				sc, err := tx.Get(e.fs.Collection(booking.Screenings).Doc(e.id))
				if err != nil {
					return err
				}
				pass, err := tx.Get(svc.Pass(e.id, uid))
				if err != nil {
					return err
				}
				ups, err := svc.Admit(sc, pass, booking.Claim{Kind: booking.ClaimBooking, ID: "b-" + uid, UID: uid, ScreeningID: e.id, Seats: []string{"A1"}}, pass.ReadTime)
				if err != nil {
					return err
				}
				return tx.Update(pass.Ref, ups)
			})
			if errors.Is(err, booking.ErrNotAdmitted) || errors.Is(err, booking.ErrSaleNotOpen) {
				continue
			}
			if err != nil {
				e.t.Fatal(err)
			}
			snap, err := svc.Pass(e.id, uid).Get(ctx)
			if err != nil {
				e.t.Fatal(err)
			}
			if snap.Data()["status"] != StatusDone {
				e.t.Fatalf("a booking with nothing held left the pass %v", snap.Data()["status"])
			}
			return uid, snap.UpdateTime
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", time.Time{}
}

// At the contract's own ticks and join window (not the shortened ones of
// the other tests), the first admission comes within 2 s of opensAt, and a
// pass that turns done is refilled within 2 s, by Firestore's clock.
func TestAdmissionWithin2sAtTheContractsTicks(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 600))
	prod := e.prodService()
	uids := []string{"u1", "u2", "u3"}
	for _, uid := range uids {
		if _, _, err := prod.Join(context.Background(), uid, e.id); err != nil {
			t.Fatal(err)
		}
	}
	opensAt := e.serverNow().Add(1500 * time.Millisecond)
	e.setSale(map[string]any{"opensAt": opensAt})
	a, err := prod.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- e.run(a, 7*time.Second) }()

	first, doneAt := e.bookWhenAdmitted(prod, uids, time.Now().Add(5*time.Second))
	if first == "" {
		<-runDone
		t.Fatal("nobody was admitted")
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	var firstAt, nextAt []time.Time
	for _, p := range e.places() {
		switch {
		case p.AdmittedAt == nil:
		case p.UID == first:
			firstAt = append(firstAt, *p.AdmittedAt)
		default:
			nextAt = append(nextAt, *p.AdmittedAt)
		}
	}
	if len(firstAt) != 1 || len(nextAt) != 1 {
		t.Fatalf("admitted %v, then %v; want one, then one (maxActive 1, one done)", firstAt, nextAt)
	}
	opening, refill := firstAt[0].Sub(opensAt), nextAt[0].Sub(doneAt)
	t.Logf("opensAt to the first admission %v; done to the next admission %v", opening, refill)
	if opening < 0 || opening > 2*time.Second {
		t.Errorf("first admission %v after opensAt, want within 2s", opening)
	}
	if refill < 0 || refill > 2*time.Second {
		t.Errorf("next admission %v after %s was done, want within 2s", refill, first)
	}
}

// faultyAdmitter is an admitter whose every call, its lease's included,
// goes through a fault proxy.
func (e *env) faultyAdmitter(extra ...Option) (*Admitter, *firelocktest.Proxy) {
	e.t.Helper()
	p := firelocktest.NewProxy(e.t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	via, opts := firelocktest.NewClientVia(e.t, p.Addr, projectOf(e.fs))
	svc := New(via, append(testOptions(e.log), extra...)...)
	l, err := lock.New(via, Locks, lock.WithLeaseDuration(svc.o.lease), lock.WithClientOptions(opts...))
	if err != nil {
		e.t.Fatal(err)
	}
	return &Admitter{s: svc, locker: l, changed: make(chan string, 16)}, p
}

// Two admitters whose answers are dropped, delayed and whose connections
// are reset at random (commits that land unheard, leases lost and taken
// over) never admit a place twice, never pass the rate or maxActive, and
// lose no place: judged on what Firestore holds afterwards.
func TestAdmittersThroughFaultsKeepTheLimits(t *testing.T) {
	t.Parallel() // its own project and proxies; judged on what Firestore holds
	const n, perWindow, maxActive = 30, 4, 3
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), perWindow, maxActive, 1))
	e.joinAndOpen(n)
	a, pa := e.faultyAdmitter()
	b, pb := e.faultyAdmitter()
	const d = 7 * time.Second
	stop := time.Now().Add(d - time.Second)
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = e.run(a, d) })
	wg.Go(func() { errs[1] = e.run(b, d) })
	wg.Go(func() { injectFaults(stop, 1, pa, pb) })
	wg.Wait()
	t.Logf("faults injected: %d and %d; runs: %v", pa.Faults(), pb.Faults(), errs)
	places := e.places()
	admitted := 0
	for _, p := range places {
		if p.AdmittedAt != nil {
			admitted++
		}
	}
	t.Logf("%d of %d admitted", admitted, n)
	if admitted < perWindow {
		t.Fatalf("only %d admitted", admitted)
	}
	if bad := meteringViolations(places, nil, e.state(), perWindow, maxActive, 2*time.Second); len(bad) > 0 {
		t.Fatalf("metering violated:\n%s", strings.Join(bad, "\n"))
	}
	// Nobody is lost: every place is still there, waiting or admitted whole.
	if len(places) != n {
		t.Fatalf("%d places, want %d", len(places), n)
	}
	for _, p := range places {
		waiting := p.Status == StatusWaiting && p.AdmittedAt == nil && p.PassUntil == nil
		admitted := (p.Status == StatusAdmitted || p.Status == StatusExpired) && p.AdmittedAt != nil && p.PassUntil != nil
		if !waiting && !admitted {
			t.Fatalf("a place left half admitted: %+v", p)
		}
	}
}

// An admitter whose answers are lost for longer than its keep-alive can
// wait, while its renewals still land, gives the sale up locally with its
// lease still standing in Firestore. Once the network heals it must give
// that lease up and go on admitting at once, not sit out the rest of a
// lease nobody uses (the surge run saw admission stop for up to 37 s). On
// a store too loaded to commit the release, the lapsed lease is taken over
// as soon as it has ended, like any ended lease.
func TestAdmitterRetakesItsSaleAtOnceAfterLosingItsLease(t *testing.T) {
	const lease = 9 * time.Second
	for _, c := range []struct {
		name         string
		releaseFails bool
		healAfter    time.Duration // from the fault
	}{
		// Just past the keep-alive's give-up, with the lease still standing.
		{"its release gets through", false, lease - lease/10 + 400*time.Millisecond},
		// Past the end of the renewal that landed unheard a third in.
		{"its release cannot get through", true, lease + lease/3 + 500*time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 1, 1))
			e.joinAndOpen(40)
			a, p := e.faultyAdmitter(WithAdmitterLease(lease))
			a.lapsedReleaseFails = c.releaseFails
			ref := e.fs.Collection(Locks).Doc("admit-" + e.id)
			renewedAt := func() time.Time {
				snap, err := ref.Get(context.Background())
				if err != nil {
					return time.Time{}
				}
				v, _ := snap.Data()[lock.FieldRenewedAt].(time.Time)
				return v
			}
			var healedAt time.Time
			var wg sync.WaitGroup
			var runErr error
			wg.Go(func() { runErr = e.run(a, c.healAfter+7*time.Second) })
			wg.Go(func() {
				// Slow the answers just after a renewal was heard: the next
				// one lands a third of a lease later, unheard, and the
				// keep-alive gives up near the end of the lease it heard,
				// while Firestore's runs on for that third.
				var first time.Time
				for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					r := renewedAt()
					if first.IsZero() {
						first = r
					} else if !r.Equal(first) {
						break
					}
				}
				// Answers held back longer than the lease: requests still
				// reach Firestore and renewals land, but none is heard in time.
				if err := p.Delay(2 * lease); err != nil {
					t.Error(err)
				}
				time.Sleep(c.healAfter)
				p.Heal()
				healedAt = time.Now() // the emulator's clock is this machine's
			})
			wg.Wait()
			t.Logf("run: %v; faults: %d", runErr, p.Faults())
			var next *time.Time
			for _, pl := range e.places() {
				if pl.AdmittedAt != nil && pl.AdmittedAt.After(healedAt) && (next == nil || pl.AdmittedAt.Before(*next)) {
					next = pl.AdmittedAt
				}
			}
			if next == nil {
				t.Fatalf("nobody was admitted in the 6 s after the network healed at %s", healedAt.Format(time.RFC3339Nano))
			}
			t.Logf("first admission %v after the heal", next.Sub(healedAt))
			if gap := next.Sub(healedAt); gap > 2*time.Second {
				t.Fatalf("the first admission came %v after the network healed, want within 2s: the admitter sat out a lease it no longer used", gap)
			}
		})
	}
}

// An admitter whose lease lapsed while its network is down cannot release
// it; the lease ends, and another admitter takes the sale over. Once the
// network heals, the lapsed lease's release (at a take, or at the end of
// the run) must find it taken over and leave the new holder's grant in
// place (the release is conditional): the sale stays with one admitter,
// within its limits.
func TestLapsedLeaseReleaseLeavesTheNextAdmittersLease(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for leases to end
	const n, perWindow, maxActive = 30, 4, 3
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), perWindow, maxActive, 1))
	e.joinAndOpen(n)
	a, pa := e.faultyAdmitter()
	b, _ := e.faultyAdmitter()
	ref := e.fs.Collection(Locks).Doc("admit-" + e.id)
	// The lease's owner, once it renewed: its holder heard the grant.
	owner := func() string {
		snap, err := ref.Get(context.Background())
		if err != nil {
			return ""
		}
		acquired, _ := snap.Data()[lock.FieldAcquiredAt].(time.Time)
		renewed, _ := snap.Data()[lock.FieldRenewedAt].(time.Time)
		if !renewed.After(acquired) {
			return ""
		}
		o, _ := snap.Data()[lock.FieldOwner].(string)
		return o
	}
	waitFor := func(who string, within time.Duration) {
		for deadline := time.Now().Add(within); owner() != who; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the sale's lease is not %s's after %v", who, within)
			}
		}
	}
	var wg sync.WaitGroup
	var errs [2]error
	defer wg.Wait()
	aDone := make(chan struct{})
	wg.Go(func() { defer close(aDone); errs[0] = e.run(a, 10*time.Second) })
	waitFor(a.locker.Owner(), 3*time.Second)
	if err := pa.Delay(time.Minute); err != nil { // no answer comes back in time
		t.Fatal(err)
	}
	wg.Go(func() { errs[1] = e.run(b, 14*time.Second) })
	waitFor(b.locker.Owner(), 5*time.Second)
	snap, err := ref.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	grant, _ := snap.Data()[lock.FieldAcquiredAt].(time.Time)
	// The grant b took stands: while a's keep-alive gives up under the
	// fault, after the heal, and past the end of a's run.
	healAt, aEnded := time.Now().Add(5*time.Second), time.Time{}
	for aEnded.IsZero() || time.Since(aEnded) < 500*time.Millisecond {
		select {
		case <-aDone:
			if aEnded.IsZero() {
				aEnded = time.Now()
			}
		default:
		}
		if !healAt.IsZero() && time.Now().After(healAt) {
			pa.Heal()
			healAt = time.Time{}
		}
		snap, err := ref.Get(context.Background())
		if err != nil {
			t.Fatalf("the next admitter's lease is gone (%v): the lapsed lease's release deleted it", err)
		}
		if o, _ := snap.Data()[lock.FieldOwner].(string); o != b.locker.Owner() || !snap.Data()[lock.FieldAcquiredAt].(time.Time).Equal(grant) {
			t.Fatalf("the next admitter's grant of %v was replaced (owner %q, acquiredAt %v)", grant, o, snap.Data()[lock.FieldAcquiredAt])
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	log := e.log.String()
	t.Logf("runs: %v; failed releases of a lapsed lease: %d", errs, strings.Count(log, "release a lapsed lease"))
	if !strings.Contains(log, "admitter lost its lease") {
		t.Fatal("the scenario needs the first admitter to lose its lease")
	}
	if bad := meteringViolations(e.places(), nil, e.state(), perWindow, maxActive, 2*time.Second); len(bad) > 0 {
		t.Fatalf("metering violated:\n%s", strings.Join(bad, "\n"))
	}
}

// injectFaults drops, delays or resets the answers of one of the proxies
// at random, a fault at a time, until stop.
func injectFaults(stop time.Time, seed uint64, proxies ...*firelocktest.Proxy) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), seed))
	for time.Now().Before(stop) {
		p := proxies[rng.IntN(len(proxies))]
		switch rng.IntN(3) {
		case 0:
			p.DropAnswers(100 * time.Millisecond)
		case 1:
			p.Delay(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		case 2:
			p.Reset()
		}
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		p.Heal()
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
}
