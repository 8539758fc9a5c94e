package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Lease is one grant of a lock to its Locker's owner. Its methods are safe
// for concurrent use.
type Lease struct {
	locker     *Locker
	ref        *firestore.DocumentRef
	id         string        // this acquisition, as FieldHolds names it
	acquiredAt time.Time     // the grant's acquiredAt: which grant this is
	token      int64         // commit time of our write, µs
	duration   time.Duration // the document's leaseSeconds

	mu         sync.Mutex
	renewedAt  time.Time // server time of the grant or last renewal
	updateTime time.Time // the document's update time after our last write: our write precondition
	holds      []string  // the holders as last seen: who else a release must leave in place
	// validUntil is a local, monotonic, conservative end of the lease: the
	// send time of the write that granted or renewed it plus the lease
	// length. The server stamped that write later, so its end is later.
	validUntil time.Time
	done       chan struct{}
	doneErr    error
	gone       bool // Done closed on what Firestore showed: the lease is not this acquisition's
}

func newLease(l *Locker, ref *firestore.DocumentRef, id string, acquiredAt, renewedAt, updateTime, sent time.Time, duration time.Duration, holds []string) *Lease {
	return &Lease{
		locker:     l,
		ref:        ref,
		id:         id,
		acquiredAt: acquiredAt,
		token:      updateTime.UnixMicro(),
		duration:   duration,
		renewedAt:  renewedAt,
		updateTime: updateTime,
		holds:      holds,
		validUntil: sent.Add(duration),
		done:       make(chan struct{}),
	}
}

// Key is the locked key: the lease document's ID. No RPC.
func (l *Lease) Key() string { return l.ref.ID }

// Ref is the lease document. No RPC.
func (l *Lease) Ref() *firestore.DocumentRef { return l.ref }

// Owner is the holder's owner ID. No RPC.
func (l *Lease) Owner() string { return l.locker.owner }

// AcquiredAt is the server time of the grant (acquiredAt): it names the
// grant. No RPC.
func (l *Lease) AcquiredAt() time.Time { return l.acquiredAt }

// Token is the fencing token for stores outside Firestore: the commit time
// of the write that granted the lease, in Unix microseconds. Firestore gives
// every write of a document a later commit time than the write before it
// (a delete included), so tokens strictly increase in the order grants
// commit, releases and takeovers included, and a store can refuse writes
// carrying a token lower than the highest it has seen.
//
// It is not acquiredAt: that is the server time at which the grant's
// request started, which a slow grant can leave below the token of a grant
// that committed before it. acquiredAt names the grant inside Firestore
// (Guard, rules), where it is compared for equality only.
//
// A Reentrant acquisition that joined a live lease has the token of its own
// write, later than the grant's: fence outside writes with the newest token
// of the execution. No RPC.
func (l *Lease) Token() int64 { return l.token }

// Duration is the lease length: the document's leaseSeconds. No RPC.
func (l *Lease) Duration() time.Duration { return l.duration }

// RenewedAt is the server time of the grant or of the last renewal this
// lease heard commit. No RPC.
func (l *Lease) RenewedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewedAt
}

// Done is closed once the lease is known to be over: released, found lost
// by any operation (taken over, force-released, swept), or not renewed in
// time by KeepAlive. Err says why. Like etcd's Session.Done; no RPC.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while Done is open, then the reason: ErrNotHeld wrapped with
// the cause, or nil after a clean Release. No RPC.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.doneErr
}

// end closes Done once, with err as the reason. Call with l.mu held.
func (l *Lease) end(err error) {
	select {
	case <-l.done:
	default:
		l.doneErr = err
		close(l.done)
		if err != nil {
			l.locker.metrics.leaseLost()
		}
	}
}

// lost ends the lease as lost for a reason Firestore showed (another
// grant, a deletion, a release).
func (l *Lease) lost(format string, args ...any) error {
	err := fmt.Errorf("lock %q: %w: %s", l.ref.ID, ErrNotHeld, fmt.Sprintf(format, args...))
	l.mu.Lock()
	if !l.closed() {
		l.gone = true
	}
	l.end(err)
	l.mu.Unlock()
	return err
}

// gaveUp ends the lease as lost because its holder could not confirm it in
// time: it may still stand in Firestore (a renewal landed unheard).
func (l *Lease) gaveUp(format string, args ...any) error {
	err := fmt.Errorf("lock %q: %w: %s", l.ref.ID, ErrNotHeld, fmt.Sprintf(format, args...))
	l.mu.Lock()
	l.end(err)
	l.mu.Unlock()
	return err
}

// closed says Done is closed. Call with l.mu held.
func (l *Lease) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Renew moves renewedAt to the server's current time: one write
// conditioned on the document being exactly as this lease last saw it
// (one RPC; a conflict or a lost answer adds a read and a rewrite). A
// conflict or an ambiguous failure (timeout, unavailable) is settled by
// reading the document back, never by assuming the lease lost: a lease
// that was taken over, released or deleted gives ErrNotHeld and closes
// Done; one still ours is written again on the update time just read. A
// change it did not see commit (a Reentrant sibling's renewal, or our own
// write that landed unheard) is never taken for its renewal, so the lease
// end it keeps is never later than the one Firestore holds.
func (l *Lease) Renew(ctx context.Context) error {
	for range maxRounds {
		l.mu.Lock()
		pre := l.updateTime
		l.mu.Unlock()
		select {
		case <-l.done:
			return fmt.Errorf("lock %q: %w: %v", l.ref.ID, ErrNotHeld, l.Err())
		default:
		}
		w, err := l.locker.renewWrite(l.ref, l.duration, ifUpdatedAt(pre))
		if err != nil {
			return err
		}
		sent := time.Now()
		res, err := l.locker.commit(ctx, []*pb.Write{w})
		if err == nil {
			l.mu.Lock()
			l.renewedAt, l.updateTime, l.validUntil = res[0].stamps[0], res[0].updateTime, sent.Add(l.duration)
			l.mu.Unlock()
			return nil
		}
		if !isConflict(err) && !isAmbiguous(err) {
			return fmt.Errorf("lock %q: renew: %w", l.ref.ID, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("lock %q: renew: %w", l.ref.ID, context.Cause(ctx))
		}
		snaps, rerr := l.locker.getAll(ctx, []*firestore.DocumentRef{l.ref})
		var snap *firestore.DocumentSnapshot
		if rerr == nil {
			snap = snaps[0]
		}
		if rerr != nil && status.Code(rerr) != codes.NotFound {
			return fmt.Errorf("lock %q: renew failed (%v) and the lease could not be read back: %w", l.ref.ID, err, rerr)
		}
		if err := l.stillOurs(snap); err != nil {
			return err
		}
		l.mu.Lock()
		l.updateTime, l.holds = snap.UpdateTime, decodeLease(snap).Holds
		l.mu.Unlock()
	}
	return fmt.Errorf("lock %q: renew: document kept changing under us", l.ref.ID)
}

// stillOurs checks a fresh snapshot of the lease document names this
// acquisition in this grant; if not, the lease is lost.
func (l *Lease) stillOurs(snap *firestore.DocumentSnapshot) error {
	if snap == nil || !snap.Exists() {
		return l.lost("the lease document is gone (deleted by someone else: a forced release, a sweep)")
	}
	d := decodeLease(snap)
	switch {
	case d.Owner != l.locker.owner || !d.AcquiredAt.Equal(l.acquiredAt):
		return l.lost("now held by %s since %s", d.Owner, d.AcquiredAt.UTC().Format(time.RFC3339Nano))
	case !slices.Contains(d.Holds, l.id):
		return l.lost("this acquisition was released")
	}
	return nil
}

// Release gives up this acquisition's hold: it deletes the lease document
// (and its fence) if, and only if, it is still this lease and no other
// (Reentrant) acquisition holds it too; with other holders it only removes
// this one. One commit, conditioned on the document's update time; a
// conflict or an ambiguous failure is settled by reading the document back.
// A lease that is gone already gives ErrNotHeld; a stale holder can never
// delete a newer lease. Done is closed either way.
//
// Release finishes past ctx: if ctx has ended before it begins (defer
// lease.Release(ctx) with a request's context, after the request was
// cancelled or timed out), or is cancelled while it runs, it goes on for
// up to the lease length, at most 10 s, so the lock is not left held until
// its lease ends. A deadline that passes while it runs is the caller's
// bound, and ends it; a lease not released ends by itself within its
// length.
//
// A lease that KeepAlive gave up on may still stand (a renewal can land
// unheard), and Release still gives it up: call it when TryAcquire finds
// that lease standing, as the lock is not reentrant.
func (l *Lease) Release(ctx context.Context) error {
	gctx, cancel := l.locker.graceful(ctx)
	defer cancel()
	return l.release(gctx, false)
}

// release is Release; maybeLanded says an earlier attempt (a batch of
// Leases.Release) failed ambiguously.
func (l *Lease) release(ctx context.Context, maybeLanded bool) error {
	for range maxRounds {
		l.mu.Lock()
		w, err := l.locker.releaseWrites(l.ref, l.id, l.holds, l.updateTime)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		// Unretried: a retry of a release that landed unheard fails its
		// precondition, and would pass for a lease lost to another.
		if _, err = l.locker.commit(ctx, w, unretried); err == nil {
			l.mu.Lock()
			l.end(nil)
			l.mu.Unlock()
			return nil
		}
		if !isConflict(err) && !isAmbiguous(err) {
			return fmt.Errorf("lock %q: release: %w", l.ref.ID, err)
		}
		maybeLanded = maybeLanded || isAmbiguous(err)
		// Read back, past ctx if it ended, so that a release that landed
		// unheard is reported as done.
		snaps, rerr := l.locker.readBack(ctx, []*firestore.DocumentRef{l.ref})
		if rerr != nil {
			return fmt.Errorf("lock %q: release failed (%w) and the lease could not be read back (it ends with its lease): %w", l.ref.ID, err, rerr)
		}
		snap := snaps[0]
		l.mu.Lock()
		takenOver := l.takenOver(snap)
		l.mu.Unlock()
		if maybeLanded && !named(snap, l.id) && !takenOver { // our release landed, or the lease ended and went: free either way
			l.mu.Lock()
			l.end(nil)
			l.mu.Unlock()
			return nil
		}
		if err := l.stillOurs(snap); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("lock %q: release: %w (the lease is still held)", l.ref.ID, context.Cause(ctx))
		}
		l.mu.Lock()
		l.updateTime, l.holds = snap.UpdateTime, decodeLease(snap).Holds
		l.mu.Unlock()
	}
	return fmt.Errorf("lock %q: release: document kept changing under us", l.ref.ID)
}

// takenOver: snap is another grant's lease written over the very document
// this acquisition last wrote, never deleted since (created no later than
// our last write). A release conditioned on our write cannot have landed
// under it (a delete would have made a new document, a removal of our hold
// would have left our grant in place), so an ambiguous release finding it
// did not land: the lease was lost. Call with l.mu held.
func (l *Lease) takenOver(snap *firestore.DocumentSnapshot) bool {
	if snap == nil || !snap.Exists() || snap.CreateTime.After(l.updateTime) {
		return false
	}
	d := decodeLease(snap)
	return d.Owner != l.locker.owner || !d.AcquiredAt.Equal(l.acquiredAt)
}

// named: the snapshot is a lease that acquisition id holds.
func named(snap *firestore.DocumentSnapshot, id string) bool {
	return snap != nil && snap.Exists() && slices.Contains(decodeLease(snap).Holds, id)
}

// releaseWrites are the writes that give up acquisition id's hold on ref,
// whose holders were holds at update time pre: a delete (and its fence's)
// when id is the only holder, else the holders without id. One commit.
func (lk *Locker) releaseWrites(ref *firestore.DocumentRef, id string, holds []string, pre time.Time) ([]*pb.Write, error) {
	rest := slices.DeleteFunc(slices.Clone(holds), func(h string) bool { return h == id })
	if len(rest) == 0 {
		del := &pb.Write{Operation: &pb.Write_Delete{Delete: ref.Path}, CurrentDocument: ifUpdatedAt(pre)}
		if bugReleaseUnconditional.Load() {
			del.CurrentDocument = nil
		}
		if lk.shared {
			return []*pb.Write{del}, nil
		}
		return []*pb.Write{del, fenceDelete(ref)}, nil
	}
	fields, err := encodeFields(map[string]any{FieldHolds: rest})
	if err != nil {
		return nil, err
	}
	return []*pb.Write{{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
		UpdateMask:      &pb.DocumentMask{FieldPaths: []string{FieldHolds}},
		CurrentDocument: ifUpdatedAt(pre),
	}}, nil
}

// releaseOp adds releaseWrites to a caller's batch, with the same
// precondition.
func (lk *Locker) releaseOp(b *firestore.WriteBatch, ref *firestore.DocumentRef, id string, holds []string, pre time.Time) {
	rest := slices.DeleteFunc(slices.Clone(holds), func(h string) bool { return h == id })
	if len(rest) == 0 {
		b.Delete(ref, firestore.LastUpdateTime(pre))
		if !lk.shared {
			b.Delete(fenceRef(ref))
		}
		return
	}
	b.Update(ref, []firestore.Update{{Path: FieldHolds, Value: rest}}, firestore.LastUpdateTime(pre))
}

// KeepAlive renews the lease every third of its length (one conditional
// write each, Renew) until ctx ends or the returned stop is called (stop
// waits for the renewing goroutine to exit). The returned context is
// cancelled the moment the lease is found lost (taken over, force-released:
// at the next renewal) or cannot be renewed before its conservative local
// end; Done closes at the same time. Its context.Cause then wraps
// ErrNotHeld and says why, while its Err is context.Canceled, as for every
// context: an RPC it cut off fails with gRPC's bare Canceled status, and
// Explain(ctx, err) turns that into ErrNotHeld.
func (l *Lease) KeepAlive(ctx context.Context) (context.Context, func()) {
	kctx, cancel := context.WithCancelCause(ctx)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		l.keepAlive(kctx, cancel)
	}()
	return kctx, func() {
		cancel(context.Canceled)
		<-exited
	}
}

func (l *Lease) keepAlive(ctx context.Context, cancel context.CancelCauseFunc) {
	period := l.duration / 3
	// Give up a little before the local end so work stops before the
	// server could grant the key to somebody else.
	safety := l.margin()
	// A renewal is due a third into the lease as this holder knows it: a
	// third after the send time of the write that granted or last renewed
	// it. A write answered late (a slow network, a loaded server) leaves
	// less of its lease, so the next renewal comes sooner, at once if a
	// third has passed already.
	due := func() time.Duration {
		l.mu.Lock()
		defer l.mu.Unlock()
		return time.Until(l.validUntil.Add(period - l.duration))
	}
	wait := due()
	for {
		l.mu.Lock()
		deadline := l.validUntil.Add(-safety)
		l.mu.Unlock()
		if left := time.Until(deadline); left < wait {
			// Never sleep up to the deadline: try at least once before it.
			wait = left / 2
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-l.done:
			t.Stop()
			cancel(l.Err())
			return
		case <-t.C:
		}
		if time.Now().After(deadline) {
			cancel(l.gaveUp("not renewed within its lease of %v", l.duration))
			return
		}
		rctx, rcancel := context.WithDeadline(ctx, deadline)
		err := l.Renew(rctx)
		rcancel()
		switch {
		case err == nil:
			wait = due()
		case ctx.Err() != nil:
			return
		case l.Err() != nil: // Renew found the lease lost
			cancel(l.Err())
			return
		default: // transient: try again soon, until the deadline above
			wait = min(period, l.locker.backoff.next(2))
		}
	}
}

// Guard makes the caller's read-write transaction commit only while this
// acquisition holds the lease: call it before the transaction's writes. It
// fails with ErrNotHeld, its message saying why, unless the lease still
// names this owner with this grant and has more than a safety margin (a
// tenth of the lease, at most 1 s) left; a lease already known to be lost
// or released fails at once, without a read, and a read that the lost
// lease's context cut off reports the loss too.
//
// It reads the lease's fence in the transaction: a grant, takeover or
// release that commits before the transaction does fails it, and none can
// commit in between. The lease document itself is read without a lock,
// for its end (one more read, sent at the same time), so the holder's
// renewals never wait for its guarded transactions. For a Locker
// SharedWithClients, it reads the lease document in the transaction (one
// read).
func (l *Lease) Guard(tx *firestore.Transaction) error {
	if err := l.over(); err != nil {
		return err
	}
	if l.locker.shared {
		snap, err := tx.Get(l.ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return Leases{l}.readFailed(fmt.Errorf("lock %q: guard: %w", l.ref.ID, err))
		}
		return l.checkGuard(snap, time.Time{})
	}
	_, err := guardFenced(tx, Leases{l}, nil)
	return err
}

// over is the reason the lease is known to be over: released, or found
// lost in Firestore. nil while it may be held, also after KeepAlive gave
// it up unconfirmed (a renewal may have landed unheard: Guard reads).
func (l *Lease) over() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.closed():
		return nil
	case l.doneErr == nil:
		return fmt.Errorf("lock %q: %w: released", l.ref.ID, ErrNotHeld)
	case l.gone:
		return l.doneErr
	}
	return nil
}

// readFailed is the error of a guard whose read failed: the loss of a
// lease that has ended by now (a lost lease's keep-alive cancels the
// transaction's context, and the read fails with a bare Canceled), else
// err.
func (ls Leases) readFailed(err error) error {
	for _, l := range ls {
		select {
		case <-l.Done():
			if lost := l.Err(); lost != nil {
				return fmt.Errorf("%w (the guard's read: %v)", lost, err)
			}
		default:
		}
	}
	return err
}

// checkGuard checks a snapshot of the lease document: this acquisition's,
// with more than the margin left at its read time and at also (the read
// time of the fence, when the lease was read apart from it).
func (l *Lease) checkGuard(snap *firestore.DocumentSnapshot, also time.Time) error {
	if bugGuardChecksNothing.Load() {
		return nil
	}
	if err := l.stillOurs(snap); err != nil {
		return err
	}
	d := decodeLease(snap)
	l.mu.Lock()
	l.holds = d.Holds // what ReleaseIn must leave in place
	l.mu.Unlock()
	margin := l.margin()
	at := snap.ReadTime
	if also.After(at) {
		at = also
	}
	if left := d.end().Sub(at); left <= margin {
		return fmt.Errorf("lock %q: %w: %v of the lease left, no more than the %v margin", l.ref.ID, ErrNotHeld, left, margin)
	}
	return nil
}

// margin is the least time a lease must have left to be used: Guard
// refuses a commit, and KeepAlive gives the lease up, with no more left.
func (l *Lease) margin() time.Duration { return min(time.Second, l.duration/10) }

// Leases is a set of leases granted together by TryAcquireAll.
type Leases []*Lease

// Keys lists the keys in order. No RPC.
func (ls Leases) Keys() []string {
	keys := make([]string, len(ls))
	for i, l := range ls {
		keys[i] = l.Key()
	}
	return keys
}

// Guard is Lease.Guard for every lease: one batched read in the
// transaction for their fences, and one outside it for the leases, sent at
// the same time.
func (ls Leases) Guard(tx *firestore.Transaction) error {
	_, err := ls.GuardWith(tx)
	return err
}

// GuardWith is Guard that also reads refs in the same batched read (one RPC
// for the leases and the documents they protect) and returns their
// snapshots, in order.
func (ls Leases) GuardWith(tx *firestore.Transaction, refs ...*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	if len(ls) == 0 {
		return tx.GetAll(refs)
	}
	for _, l := range ls {
		if err := l.over(); err != nil {
			return nil, err
		}
	}
	if !ls[0].locker.shared {
		return guardFenced(tx, ls, refs)
	}
	all := make([]*firestore.DocumentRef, 0, len(ls)+len(refs))
	for _, l := range ls {
		all = append(all, l.ref)
	}
	snaps, err := tx.GetAll(append(all, refs...))
	if err != nil {
		return nil, ls.readFailed(fmt.Errorf("lock: guard %d leases: %w", len(ls), err))
	}
	for i, l := range ls {
		if err := l.checkGuard(snaps[i], time.Time{}); err != nil {
			return nil, err
		}
	}
	return snaps[len(ls):], nil
}

// ReleaseIn releases the leases as part of tx, which must have guarded them
// (Guard or GuardWith): the protected writes and the release then commit
// together, in tx's one commit (no RPC of its own). Like Release, it
// deletes a lease document only when this acquisition is its last holder.
// If tx does not commit, the leases are still held: call Release. Done is
// not closed by ReleaseIn.
func (ls Leases) ReleaseIn(tx *firestore.Transaction) error {
	for _, l := range ls {
		l.mu.Lock()
		rest := slices.DeleteFunc(slices.Clone(l.holds), func(h string) bool { return h == l.id })
		l.mu.Unlock()
		var err error
		if len(rest) == 0 {
			err = tx.Delete(l.ref)
			if err == nil && !l.locker.shared {
				err = tx.Delete(fenceRef(l.ref))
			}
		} else {
			err = tx.Update(l.ref, []firestore.Update{{Path: FieldHolds, Value: rest}})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReleaseInBatch adds to b the release of every lease, each conditioned on
// its document being exactly as this acquisition last wrote it: b then
// commits only while every lease is still this acquisition's (a takeover
// or any other change fails the commit), so the writes b carries are
// fenced, and the leases go with them in one RPC. It is the one-commit
// form of GuardWith + ReleaseIn, for writes whose own preconditions
// replace a transaction's reads; it sends no RPC of its own. It fails with
// ErrNotHeld, adding nothing, if a lease has no more than the Guard margin
// left by its conservative local clock. If b does not commit, the leases
// are still held.
//
// A failed commit is not always a lost lease: the client library retries a
// commit whose answer was lost (Unavailable), and the retry fails the
// preconditions its own first attempt met. Settle a failed commit by
// reading back the documents b wrote.
func (ls Leases) ReleaseInBatch(b *firestore.WriteBatch) error {
	now := time.Now()
	for _, l := range ls {
		l.mu.Lock()
		left := l.validUntil.Sub(now)
		l.mu.Unlock()
		if margin := l.margin(); left <= margin {
			return fmt.Errorf("lock %q: %w: %v of the lease left by the local clock, no more than the %v margin", l.ref.ID, ErrNotHeld, left, margin)
		}
	}
	for _, l := range ls {
		l.mu.Lock()
		l.locker.releaseOp(b, l.ref, l.id, l.holds, l.updateTime)
		l.mu.Unlock()
	}
	return nil
}

// Release releases every lease: one atomic commit of conditional deletes
// when all are intact, else each on its own (a read and a commit each). It
// returns the errors of those that were lost already (ErrNotHeld) joined.
// Like Lease.Release, it finishes past a cancelled ctx.
func (ls Leases) Release(ctx context.Context) error {
	if len(ls) == 0 {
		return nil
	}
	var writes []*pb.Write
	for _, l := range ls {
		l.mu.Lock()
		w, err := l.locker.releaseWrites(l.ref, l.id, l.holds, l.updateTime)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		writes = append(writes, w...)
	}
	ctx, cancel := ls[0].locker.graceful(ctx)
	defer cancel()
	_, err := ls[0].locker.commit(ctx, writes, unretried)
	if err == nil {
		for _, l := range ls {
			l.mu.Lock()
			l.end(nil)
			l.mu.Unlock()
		}
		return nil
	}
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() { errs[i] = l.release(ctx, isAmbiguous(err)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
