package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/anishathalye/porcupine"
	"github.com/firelock/firelock/internal/testkit/linearize"
	"github.com/firelock/firelock/lock"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The shape of a recorded lock history.
const (
	historyWorkers = 8 // three share one Locker; the others have one each
	historyClients = 3 // firestore.Clients, each on its own connection through the proxy: processes' worth
	historyLease   = time.Second
	hotKeys        = 2
	// Every epoch the workers move on to fresh keys, so that no key's
	// history (a partition of the check) grows too long to check.
	historyEpoch = 2 * time.Second
	opTimeout    = 1500 * time.Millisecond
)

// recordLockHistory runs the workers at random operations on a few hot
// keys for run, through a fault proxy that drops answers after the server
// processed them, delays them and resets connections, and returns every
// call and answer, with the number of faults injected.
func recordLockHistory(t *testing.T, seed uint64, run time.Duration) (*linearize.History[lockIn, lockOut], int) {
	t.Helper()
	p, _, _ := proxied(t)
	h := linearize.NewHistory[lockIn, lockOut]()
	clients := make([]*firestore.Client, historyClients)
	copts := make([][]option.ClientOption, historyClients)
	for i := range clients {
		clients[i], copts[i] = newClientVia(t, p.Addr)
	}
	lockerOn := func(i int) *lock.Locker {
		return newLocker(t, clients[i], lock.WithLeaseDuration(historyLease), lock.WithClientOptions(copts[i]...))
	}
	shared := lockerOn(0)
	start := time.Now()
	deadline := start.Add(run)
	var grants, values atomic.Int64
	stop := make(chan struct{})
	chaosDone := p.InjectAtRandom(t, rand.New(rand.NewPCG(seed, 0)), stop, func(fault string, from, to time.Time) {
		h.Annotate("faults", from, to, fault)
	})
	var wg sync.WaitGroup
	for id := range historyWorkers {
		w := &historyWorker{id: id, h: h, c: clients[0], l: shared, rnd: rand.New(rand.NewPCG(seed, uint64(id+1))),
			start: start, grants: &grants, values: &values}
		if id >= 3 {
			w.c, w.l = clients[id%historyClients], lockerOn(id%historyClients)
		}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				w.step()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-chaosDone
	return h, p.Faults()
}

// historyWorker is one client of a recorded history: it holds at most one
// lease at a time and keeps using it after it may have been lost.
type historyWorker struct {
	id             int
	h              *linearize.History[lockIn, lockOut]
	c              *firestore.Client
	l              *lock.Locker
	rnd            *rand.Rand
	start          time.Time
	grants, values *atomic.Int64

	lease *lock.Lease // held (or believed held), or nil
	num   int         // its grant's number in the history
}

func (w *historyWorker) hotKey() string {
	return fmt.Sprintf("e%d-%d", time.Since(w.start)/historyEpoch, w.rnd.IntN(hotKeys))
}

func (w *historyWorker) step() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if w.lease == nil {
		switch key, r := w.hotKey(), w.rnd.IntN(10); {
		case r < 5:
			w.grant(ctx, opTry, key)
		case r < 7:
			w.grant(ctx, opAcquire, key)
		case r < 9:
			w.readLease(ctx, key)
		default:
			w.readRegister(ctx, key)
		}
		return
	}
	switch r := w.rnd.IntN(20); {
	case r < 7:
		w.write(ctx)
	case r < 11:
		w.renew(ctx)
	case r < 15:
		w.release(ctx)
	case r < 17: // a pause (a GC, a throttled instance) past the lease's end, and on as if nothing happened
		time.Sleep(historyLease + time.Duration(100+w.rnd.IntN(300))*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		w.write(ctx)
		w.release(ctx)
	default:
		time.Sleep(time.Duration(20+w.rnd.IntN(150)) * time.Millisecond)
	}
}

// settledTries numbers the rows of the settled tries inside a worker's
// Acquire calls: settledTries + the worker's id.
const settledTries = 100

// ns is a server time as the model takes it.
func ns(t time.Time) int64 { return t.UnixNano() }

func (w *historyWorker) grant(ctx context.Context, op lockOp, key string) {
	call := w.h.Call(w.id, lockIn{Op: op, Key: key, Owner: w.l.Owner()})
	var lease *lock.Lease
	var err error
	if op == opTry {
		lease, err = w.l.TryAcquire(ctx, key)
	} else {
		// A try settled inside Acquire may have granted and released a
		// lease that others saw: it is a grant of unknown outcome, on a
		// row of its own beside the worker's.
		lease, err = w.l.Acquire(lock.ObserveTries(ctx, func(began time.Time, err error) {
			if errors.Is(err, lock.ErrUnanswered) {
				w.h.CallAt(settledTries+w.id, lockIn{Op: opTry, Key: key, Owner: w.l.Owner()}, began).Unknown(lockOut{}, err)
			}
		}), key)
	}
	var held *lock.HeldError
	switch {
	case err == nil:
		w.lease, w.num = lease, int(w.grants.Add(1))
		call.Return(lockOut{Lease: w.num, Token: lease.Token(), AcquiredAt: ns(lease.AcquiredAt()),
			RenewedAt: ns(lease.RenewedAt()), End: ns(lease.RenewedAt().Add(lease.Duration()))})
	case errors.Is(err, lock.ErrUnanswered):
		// A try settled after a lost answer, or a grant answered too late
		// to hand over, may have granted and removed a lease.
		call.Unknown(lockOut{}, err)
	case errors.As(err, &held):
		by := held.Holders[0]
		call.Return(lockOut{Answer: answerHeld, Holder: by.Owner, End: ns(by.Until), At: ns(by.Until.Add(-by.Remaining))})
	case errors.Is(err, lock.ErrHeld), op == opAcquire && waitedInVain(err):
		call.Return(lockOut{Answer: answerHeld}) // names no one
	default:
		call.Unknown(lockOut{}, err)
	}
}

// waitedInVain: Acquire's context ended while it waited between tries
// that all found the key held, so it granted nothing. (Ended during a try,
// it reports that try's error instead.)
func waitedInVain(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && strings.HasPrefix(err.Error(), "lock: waiting for ")
}

func (w *historyWorker) renew(ctx context.Context) {
	w.h.Call(w.id, lockIn{Op: opRenewCall, Key: w.lease.Key(), Lease: w.num}).Return(lockOut{})
	call := w.h.Call(w.id, lockIn{Op: opRenew, Key: w.lease.Key(), Lease: w.num})
	switch err := w.lease.Renew(ctx); {
	case err == nil:
		r := w.lease.RenewedAt()
		call.Return(lockOut{RenewedAt: ns(r), End: ns(r.Add(w.lease.Duration()))})
	case errors.Is(err, lock.ErrNotHeld):
		call.Return(lockOut{Answer: answerNotHeld})
	default:
		call.Unknown(lockOut{}, err)
	}
}

func (w *historyWorker) release(ctx context.Context) {
	call := w.h.Call(w.id, lockIn{Op: opRelease, Key: w.lease.Key(), Lease: w.num})
	switch err := w.lease.Release(ctx); {
	case err == nil:
		call.Return(lockOut{})
	case errors.Is(err, lock.ErrNotHeld):
		call.Return(lockOut{Answer: answerNotHeld})
	default:
		call.Unknown(lockOut{}, err)
	}
	w.lease = nil
}

// register is the document beside key's lease that guarded writes write.
func (w *historyWorker) register(key string) *firestore.DocumentRef {
	return w.c.Collection("registers").Doc(key)
}

// write writes a fresh value to the register in a transaction guarded by
// the lease, recording the read time of its Guard, the value it read and
// the commit time.
func (w *historyWorker) write(ctx context.Context) {
	in := lockIn{Op: opWrite, Key: w.lease.Key(), Lease: w.num, Value: w.values.Add(1)}
	reg := w.register(in.Key)
	call := w.h.Call(w.id, in)
	var out lockOut
	var committing bool // the last attempt sent its commit
	var resp firestore.CommitResponse
	err := w.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		committing, out = false, lockOut{}
		snaps, err := lock.Leases{w.lease}.GuardWith(tx, reg)
		if err != nil {
			return err
		}
		out.Checked, out.Value = ns(snaps[0].ReadTime), registerValue(snaps[0])
		if err := tx.Set(reg, map[string]any{"value": in.Value, "token": w.lease.Token()}); err != nil {
			return err
		}
		committing = true
		return nil
	}, firestore.WithCommitResponseTo(&resp))
	switch {
	case err == nil:
		out.At = ns(resp.CommitTime())
		call.Return(out)
	case errors.Is(err, lock.ErrNotHeld):
		call.Return(lockOut{Answer: answerNotHeld})
	case !committing || status.Code(err) == codes.Aborted:
		call.Return(lockOut{Answer: answerFailed}) // no commit, or one that Firestore refused
	default:
		call.Unknown(out, err)
	}
}

func registerValue(s *firestore.DocumentSnapshot) int64 {
	if !s.Exists() {
		return 0
	}
	v, _ := s.Data()["value"].(int64)
	return v
}

func (w *historyWorker) readRegister(ctx context.Context, key string) {
	call := w.h.Call(w.id, lockIn{Op: opReadRegister, Key: key})
	s, err := w.register(key).Get(ctx)
	if err != nil && !isNotFound(err) {
		call.Unknown(lockOut{}, err)
		return
	}
	call.Return(lockOut{At: ns(s.ReadTime), Value: registerValue(s)})
}

func (w *historyWorker) readLease(ctx context.Context, key string) lockOut {
	call := w.h.Call(w.id, lockIn{Op: opReadLease, Key: key})
	s, err := w.l.Collection().Doc(key).Get(ctx)
	if err != nil && !isNotFound(err) {
		call.Unknown(lockOut{}, err)
		return lockOut{}
	}
	// A seal (a grant read back and found nowhere, sealed against
	// landing later) is an ended lease of nobody's: no lease.
	out := lockOut{At: ns(s.ReadTime), Exists: s.Exists() && s.Data()[lock.FieldOwner] != lock.SealOwner}
	if out.Exists {
		d := s.Data()
		out.Owner, _ = d[lock.FieldOwner].(string)
		acquired, _ := d[lock.FieldAcquiredAt].(time.Time)
		renewed, _ := d[lock.FieldRenewedAt].(time.Time)
		secs, _ := d[lock.FieldLeaseSeconds].(int64)
		out.ReadAcquiredAt, out.ReadEnd = ns(acquired), ns(renewed.Add(time.Duration(secs)*time.Second))
	}
	call.Return(out)
	return out
}

// checkTimeout bounds the check of a history recorded for run.
func checkTimeout(run time.Duration) time.Duration { return max(time.Minute, run) }

// Many clients (goroutines with Lockers of their own and three sharing
// one, on three connections) take, renew, release and use leases of a few
// keys at random while faults strike; the history of what they were told
// must be linearizable against the lock's specification (model_test.go).
// make soak runs it for minutes (FIRELOCK_SOAK).
func TestLockHistoryIsLinearizable(t *testing.T) {
	seed := linearize.Seed(t, 1)
	run := linearize.Duration(t, 6*time.Second)
	h, faults := recordLockHistory(t, seed, run)
	res := linearize.Require(t, lockModel, h, checkTimeout(run))
	t.Logf("operations checked %d, ambiguous %d, faults injected %d, violations %d (keys whose history is not linearizable): %v",
		res.Operations, res.Unknown, faults, res.Illegal, res)
}

// The checker proves itself: with each bug planted in the lock, the same
// workload's history is not linearizable. (Whether a short random history
// happens to show a bug is chance, if likely: up to three are recorded,
// and the first shown not linearizable ends the test.)
func TestLinearizabilityCatchesPlantedBugs(t *testing.T) {
	for _, bug := range []lock.Bug{lock.BugTakeoverIgnoresEnd, lock.BugGuardChecksNothing, lock.BugReleaseUnconditional} {
		t.Run(bug.String(), func(t *testing.T) {
			bug.Plant(t)
			seed := linearize.Seed(t, 1)
			var res linearize.Result
			for try := range 3 {
				h, faults := recordLockHistory(t, seed+uint64(try), 4*time.Second)
				if res = linearize.Check(t, lockModel, h, time.Minute); res.Verdict == porcupine.Illegal {
					t.Logf("caught in history %d (faults %d): %v", try+1, faults, res)
					return
				}
			}
			t.Fatalf("with %s planted the checker found %v, want Illegal", bug, res)
		})
	}
}

// Found by TestLockHistoryIsLinearizable: a release whose delete landed
// but whose answer was lost answered ErrNotHeld. The Firestore client
// retried the commit after the dropped connection, the retry failed the
// precondition the first attempt had fulfilled, and Release took that for
// a lease lost to someone else. (In the history, the next holder's grant
// came while the releaser still held the key by the model, its release
// having answered ErrNotHeld, which changes nothing.)
func TestReleaseWhoseAnswerWasLostAndRetriedIsDone(t *testing.T) {
	p, l, direct := proxied(t, lock.WithLeaseDuration(time.Minute))
	h := linearize.NewHistory[lockIn, lockOut]()
	w := &historyWorker{h: h, c: direct, l: l, grants: new(atomic.Int64), values: new(atomic.Int64)}
	ctx := context.Background()
	w.grant(ctx, opTry, "k")
	if w.lease == nil {
		t.Fatal("no grant")
	}
	if err := p.DropAnswers(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	healed := time.AfterFunc(400*time.Millisecond, p.Heal)
	defer healed.Stop()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease := w.lease
	w.release(rctx)
	w.readLease(ctx, "k")
	linearize.Require(t, lockModel, h, time.Minute)
	if _, err := direct.Collection(coll).Doc("k").Get(ctx); !isNotFound(err) {
		t.Fatalf("the lease is still there after its release (%v)", err)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("released lease ended with %v, want nil (a clean release)", err)
	}
}

// Found by TestLockHistoryIsLinearizable under load: a try inside Acquire
// whose grant was answered too late to work under releases it again and
// fails with ErrUnanswered, and Acquire tries again. So a grant comes and
// goes inside one Acquire, and others see the key held by its owner
// meanwhile; here the Acquire then finds the key taken and gives up
// waiting. Acquire is a series of tries: the history records each settled
// one as a grant of unknown outcome, begun when the try began.
func TestAnAcquireWhoseGrantCameAndWentIsLinearizable(t *testing.T) {
	p, l, direct := proxied(t, lock.WithLeaseDuration(historyLease))
	h := linearize.NewHistory[lockIn, lockOut]()
	grants := new(atomic.Int64)
	worker := func(id int, l *lock.Locker) *historyWorker {
		return &historyWorker{id: id, h: h, c: direct, l: l, grants: grants, values: new(atomic.Int64)}
	}
	w := worker(1, l)
	seer := worker(2, newLocker(t, direct, lock.WithLeaseDuration(historyLease)))
	next := worker(3, newLocker(t, direct, lock.WithLeaseDuration(time.Minute)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	warmUp(t, l)
	// Every answer to w comes with less than the lease's margin left,
	// inside the RPC's bound of a lease: each grant is answered, too late.
	if err := p.Delay(historyLease - historyLease/20); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		actx, cancel := context.WithTimeout(ctx, 4*time.Second)
		defer cancel()
		w.grant(actx, opAcquire, "k")
	}()
	ref := direct.Collection(coll).Doc("k")
	for {
		if _, err := ref.Get(ctx); err == nil {
			break
		} else if !isNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := seer.readLease(ctx, "k") // the first try's grant, before its answer comes back
	next.grant(ctx, opAcquire, "k")  // once that grant is released again, for a minute
	<-done
	switch {
	case !seen.Exists || seen.Owner != l.Owner():
		t.Fatalf("the read saw %+v; the scenario needs the first grant seen standing", seen)
	case next.lease == nil || w.lease != nil:
		t.Fatalf("granted: %v, %v; the scenario needs only the second Locker's grant", w.lease, next.lease)
	}
	linearize.Require(t, lockModel, h, time.Minute)
}

// Found by TestLockHistoryIsLinearizable (11-29, seed 1, on an idle
// machine): a try inside Acquire whose grant landed while its answer came
// after the caller's deadline was settled (read back, and released again),
// but it said only the deadline. Acquire then counted the wait under the
// earlier try's ErrHeld, and the history had no grant to explain why the
// former holder's release found its lease gone. A settled grant that
// landed says ErrUnanswered whatever ended the wait, as one cut off by the
// RPC's own bound does.
func TestAnAcquireCutOffWhileItsGrantLandsSaysTheGrantCameAndWent(t *testing.T) {
	p, _, direct := proxied(t)
	_, copts := newClientVia(t, p.Addr)
	holder := newLocker(t, direct, lock.WithLeaseDuration(2*time.Second))
	// Reads go straight to the emulator, commits through the proxy, so only
	// the grants' answers are held back. A 10-s lease bounds each RPC past
	// the caller's deadline; a backoff of an hour waits out the holder's
	// lease to the millisecond.
	l := newLocker(t, direct, lock.WithLeaseDuration(10*time.Second), lock.WithClientOptions(copts...),
		lock.WithBackoff(time.Hour, time.Hour))
	ctx := context.Background()
	warmUp(t, l)
	held, err := holder.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	var tries []error
	released := make(chan error, 1)
	actx, cancel := context.WithTimeout(lock.ObserveTries(ctx, func(_ time.Time, err error) {
		tries = append(tries, err)
		if len(tries) == 1 {
			// The key was held. Its holder lets it go now, and the next
			// try (at the lease's end) grants at once, answered 3 s late.
			if err := p.Delay(3 * time.Second); err != nil {
				t.Error(err)
			}
			released <- held.Release(ctx)
		}
	}), 4*time.Second)
	defer cancel()
	seen := make(chan string, 1)
	go func() { // the grant standing, as others see it
		ref := direct.Collection(coll).Doc("k")
		for ctx.Err() == nil {
			if s, err := ref.Get(ctx); err == nil {
				if owner, _ := s.Data()[lock.FieldOwner].(string); owner == l.Owner() {
					seen <- owner
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	lease, err := l.Acquire(actx, "k")
	if lease != nil {
		t.Fatalf("granted %v past the caller's deadline", lease)
	}
	if err := <-released; err != nil {
		t.Fatalf("the holder's release: %v", err)
	}
	select {
	case <-seen:
	case <-time.After(5 * time.Second):
		t.Fatalf("the grant was never seen standing (tries: %v); the scenario needs it landed", tries)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrUnanswered) {
		t.Errorf("Acquire: %v; want the deadline and ErrUnanswered (a grant came and went)", err)
	}
	if last := tries[len(tries)-1]; !errors.Is(last, lock.ErrUnanswered) {
		t.Errorf("the last try said %v; want ErrUnanswered (it landed, and was removed)", last)
	}
	if _, err := direct.Collection(coll).Doc("k").Get(ctx); !isNotFound(err) {
		t.Errorf("the settled grant was left behind (%v)", err)
	}
}

// An Acquire cut off while its grant lands, whose read-back gets no answer
// either, cannot tell whether its grant stands (it does, until its lease
// ends). It said only the deadline and the earlier try's ErrHeld, naming
// a holder long gone, so a recorded history took the call for one that
// granted nothing. Whatever ended the wait, a grant of unknown outcome says
// ErrUnanswered.
func TestAnAcquireCutOffWhileItsGrantLandsUnreadSaysItMayStand(t *testing.T) {
	// Reads and commits both pass the proxy; a backoff of an hour waits
	// out the holder's lease to the millisecond.
	p, l, direct := proxied(t, lock.WithLeaseDuration(5*time.Second), lock.WithBackoff(time.Hour, time.Hour))
	holder := newLocker(t, direct, lock.WithLeaseDuration(2*time.Second))
	ctx := context.Background()
	warmUp(t, l)
	held, err := holder.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	var tries []error
	actx, cancel := context.WithTimeout(lock.ObserveTries(ctx, func(_ time.Time, err error) {
		tries = append(tries, err)
		if len(tries) == 1 {
			// The key was held. Its holder lets it go, and from now on
			// every answer is lost: the next try's grant lands unheard,
			// and so does the read that would settle it.
			if err := held.Release(ctx); err != nil {
				t.Errorf("the holder's release: %v", err)
			}
			if err := p.DropAnswers(time.Minute); err != nil {
				t.Error(err)
			}
		}
	}), 4*time.Second)
	defer cancel()
	lease, err := l.Acquire(actx, "k")
	p.Heal()
	if lease != nil {
		t.Fatalf("granted %v past the caller's deadline", lease)
	}
	s, gerr := direct.Collection(coll).Doc("k").Get(ctx)
	if gerr != nil {
		t.Fatalf("the grant did not land (%v; tries: %v); the scenario needs it standing", gerr, tries)
	}
	if owner, _ := s.Data()[lock.FieldOwner].(string); owner != l.Owner() {
		t.Fatalf("the key is held by %q, not the cut-off grant's %q", owner, l.Owner())
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrUnanswered) {
		t.Errorf("Acquire: %v; want the deadline and ErrUnanswered (a grant may stand)", err)
	}
	var named *lock.HeldError
	if errors.As(err, &named) {
		t.Errorf("Acquire names %s as the holder, whose lease was released before the grant: %v", named.Holders[0].Owner, err)
	}
	if last := tries[len(tries)-1]; !errors.Is(last, lock.ErrUnanswered) {
		t.Errorf("the last try said %v; want ErrUnanswered (its grant may stand)", last)
	}
}

// A renewal that writes a longer lease than it was granted (the planted
// BugRenewStretches) keeps the key from others past the lease's end. The
// checker must see it: a try after the end the renewal answered finds the
// key still held. The same script without the bug is linearizable.
func TestLinearizabilityCatchesAStretchedRenewal(t *testing.T) {
	for _, planted := range []bool{false, true} {
		t.Run(fmt.Sprintf("planted=%v", planted), func(t *testing.T) {
			if planted {
				lock.BugRenewStretches.Plant(t)
			}
			p, _, _ := proxied(t) // no faults: for this test's project
			c, copts := newClientVia(t, p.Addr)
			h := linearize.NewHistory[lockIn, lockOut]()
			worker := func(id int) *historyWorker {
				l := newLocker(t, c, lock.WithLeaseDuration(historyLease), lock.WithClientOptions(copts...))
				return &historyWorker{id: id, h: h, c: c, l: l, grants: new(atomic.Int64), values: new(atomic.Int64)}
			}
			holder, other := worker(1), worker(2)
			ctx := context.Background()
			holder.grant(ctx, opTry, "k")
			if holder.lease == nil {
				t.Fatal("no grant")
			}
			holder.renew(ctx)
			time.Sleep(historyLease + 300*time.Millisecond) // past the end the renewal answered
			other.grant(ctx, opTry, "k")
			if got := other.lease != nil; got == planted {
				t.Fatalf("granted after the renewed end: %v; the scenario needs the key held only with the bug planted", got)
			}
			want := porcupine.Ok
			if planted {
				want = porcupine.Illegal
			}
			if res := linearize.Check(t, lockModel, h, time.Minute); res.Verdict != want {
				t.Fatalf("checker found %v, want %v", res, want)
			}
		})
	}
}

// A stale holder's renewal that lands on the lease granted after its own
// (the planted BugRenewAnyHolder), its answer lost, moves the new holder's
// end. Only the new holder renews its lease, and it is not renewing: the
// checker must see a moved end. The same script without the bug is
// linearizable.
func TestLinearizabilityCatchesARenewalOfAnotherGrant(t *testing.T) {
	for _, planted := range []bool{false, true} {
		t.Run(fmt.Sprintf("planted=%v", planted), func(t *testing.T) {
			if planted {
				lock.BugRenewAnyHolder.Plant(t)
			}
			p, l, direct := proxied(t, lock.WithLeaseDuration(historyLease))
			h := linearize.NewHistory[lockIn, lockOut]()
			grants := new(atomic.Int64)
			stale := &historyWorker{id: 1, h: h, c: direct, l: l, grants: grants, values: new(atomic.Int64)}
			next := &historyWorker{id: 2, h: h, c: direct, l: newLocker(t, direct, lock.WithLeaseDuration(historyLease)),
				grants: grants, values: new(atomic.Int64)}
			ctx := context.Background()
			stale.grant(ctx, opTry, "k")
			time.Sleep(historyLease + 100*time.Millisecond)
			next.grant(ctx, opTry, "k")
			if stale.lease == nil || next.lease == nil {
				t.Fatal("the scenario needs two grants, one after the other")
			}
			if err := p.DropAnswers(100 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			stale.renew(rctx) // its answer is lost
			cancel()
			p.Heal()
			next.readLease(ctx, "k")
			snap, err := direct.Collection(coll).Doc("k").Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			renewed, _ := snap.Data()[lock.FieldRenewedAt].(time.Time)
			if moved := renewed.After(next.lease.RenewedAt()); moved != planted {
				t.Fatalf("the new grant's renewedAt moved: %v; the scenario needs it moved only with the bug planted", moved)
			}
			want := porcupine.Ok
			if planted {
				want = porcupine.Illegal
			}
			if res := linearize.Check(t, lockModel, h, time.Minute); res.Verdict != want {
				t.Fatalf("checker found %v, want %v", res, want)
			}
		})
	}
}
