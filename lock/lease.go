package lock

import (
	"context"
	"errors"
	"fmt"
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
	acquiredAt time.Time

	mu         sync.Mutex
	renewedAt  time.Time // server time of the grant or last renewal
	updateTime time.Time // the document's update time after our last write: our write precondition
	// validUntil is a local, monotonic, conservative end of the lease: the
	// send time of the write that granted or renewed it plus the lease
	// length. The server stamped that write later, so its end is later.
	validUntil time.Time
	done       chan struct{}
	doneErr    error
}

func newLease(l *Locker, ref *firestore.DocumentRef, acquiredAt, renewedAt, updateTime, sent time.Time) *Lease {
	return &Lease{
		locker:     l,
		ref:        ref,
		acquiredAt: acquiredAt,
		renewedAt:  renewedAt,
		updateTime: updateTime,
		validUntil: sent.Add(l.lease),
		done:       make(chan struct{}),
	}
}

// Key is the locked key: the lease document's ID.
func (l *Lease) Key() string { return l.ref.ID }

// Ref is the lease document.
func (l *Lease) Ref() *firestore.DocumentRef { return l.ref }

// Owner is the holder's owner ID.
func (l *Lease) Owner() string { return l.locker.owner }

// AcquiredAt is the server time of the grant (acquiredAt).
func (l *Lease) AcquiredAt() time.Time { return l.acquiredAt }

// Token is the fencing token: acquiredAt, the server time of the grant, in
// Unix microseconds (Firestore's precision). It strictly increases across
// successive grants of a key, releases and takeovers included, so a store
// outside Firestore can refuse writes carrying a token lower than the
// highest it has seen.
func (l *Lease) Token() int64 { return l.acquiredAt.UnixMicro() }

// RenewedAt is the server time of the grant or of the last renewal.
func (l *Lease) RenewedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewedAt
}

// Done is closed once the lease is known to be over: released, found lost
// by any operation, or not renewed in time by KeepAlive. Err says why.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while Done is open, then the reason: ErrNotHeld wrapped with
// the cause, or nil after a clean Release.
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
	}
}

func (l *Lease) lost(format string, args ...any) error {
	err := fmt.Errorf("lock %q: %w: %s", l.ref.ID, ErrNotHeld, fmt.Sprintf(format, args...))
	l.mu.Lock()
	l.end(err)
	l.mu.Unlock()
	return err
}

// Renew moves renewedAt to the server's current time: one write
// conditioned on the document being exactly as our last write left it. An
// ambiguous failure (timeout, unavailable) is settled by reading the
// document back, never by assuming the lease lost. A lease that was taken
// over, released or deleted gives ErrNotHeld and closes Done.
func (l *Lease) Renew(ctx context.Context) error {
	for range maxRounds {
		l.mu.Lock()
		pre, before := l.updateTime, l.renewedAt
		l.mu.Unlock()
		select {
		case <-l.done:
			return fmt.Errorf("lock %q: %w: %v", l.ref.ID, ErrNotHeld, l.Err())
		default:
		}
		w, err := l.locker.renewWrite(l.ref, ifUpdatedAt(pre))
		if err != nil {
			return err
		}
		sent := time.Now()
		res, err := l.locker.commit(ctx, []*pb.Write{w})
		if err == nil {
			l.mu.Lock()
			l.renewedAt, l.updateTime, l.validUntil = res[0].stamps[0], res[0].updateTime, sent.Add(l.locker.lease)
			l.mu.Unlock()
			return nil
		}
		if !isConflict(err) && !isAmbiguous(err) {
			return fmt.Errorf("lock %q: renew: %w", l.ref.ID, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("lock %q: renew: %w", l.ref.ID, context.Cause(ctx))
		}
		snap, rerr := l.ref.Get(ctx)
		if rerr != nil && status.Code(rerr) != codes.NotFound {
			return fmt.Errorf("lock %q: renew failed (%v) and the lease could not be read back: %w", l.ref.ID, err, rerr)
		}
		if err := l.stillOurs(snap); err != nil {
			return err
		}
		d := decodeLease(snap)
		l.mu.Lock()
		l.updateTime = snap.UpdateTime
		if d.RenewedAt.After(before) { // the ambiguous write did land
			l.renewedAt = d.RenewedAt
			l.validUntil = sent.Add(l.locker.lease)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
	}
	return fmt.Errorf("lock %q: renew: document kept changing under us", l.ref.ID)
}

// stillOurs checks a fresh snapshot of the lease document names us with
// our token; if not, the lease is lost.
func (l *Lease) stillOurs(snap *firestore.DocumentSnapshot) error {
	if snap == nil || !snap.Exists() {
		return l.lost("lease document is gone")
	}
	d := decodeLease(snap)
	if d.Owner != l.locker.owner || !d.AcquiredAt.Equal(l.acquiredAt) {
		return l.lost("now held by %s since %s", d.Owner, d.AcquiredAt.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Release deletes the lease document if, and only if, it is still this
// lease: a delete conditioned on its update time, re-read on a conflict or
// an ambiguous failure. A lease that is gone already gives ErrNotHeld; a
// stale holder can never delete a newer lease. Done is closed either way.
func (l *Lease) Release(ctx context.Context) error {
	for range maxRounds {
		l.mu.Lock()
		pre := l.updateTime
		l.mu.Unlock()
		_, err := l.ref.Delete(ctx, firestore.LastUpdateTime(pre))
		if err == nil {
			l.mu.Lock()
			l.end(nil)
			l.mu.Unlock()
			return nil
		}
		if !isConflict(err) && !isAmbiguous(err) {
			return fmt.Errorf("lock %q: release: %w", l.ref.ID, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("lock %q: release: %w", l.ref.ID, context.Cause(ctx))
		}
		snap, rerr := l.ref.Get(ctx)
		if rerr != nil && status.Code(rerr) != codes.NotFound {
			return fmt.Errorf("lock %q: release failed (%v) and the lease could not be read back: %w", l.ref.ID, err, rerr)
		}
		if !snap.Exists() && isAmbiguous(err) { // our delete landed, or the lease ended and was swept: free either way
			l.mu.Lock()
			l.end(nil)
			l.mu.Unlock()
			return nil
		}
		if err := l.stillOurs(snap); err != nil {
			return err
		}
		l.mu.Lock()
		l.updateTime = snap.UpdateTime
		l.mu.Unlock()
	}
	return fmt.Errorf("lock %q: release: document kept changing under us", l.ref.ID)
}

// KeepAlive renews the lease every third of its length until ctx ends or the
// returned stop is called (stop waits for the renewing goroutine to exit).
// The returned context is cancelled, with a cause wrapping ErrNotHeld, the
// moment the lease is lost or cannot be renewed before its conservative
// local end; Done closes at the same time.
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
	period := l.locker.lease / 3
	// Give up a little before the local end so work stops before the
	// server could grant the key to somebody else.
	safety := min(time.Second, l.locker.lease/10)
	wait := period
	for {
		l.mu.Lock()
		deadline := l.validUntil.Add(-safety)
		l.mu.Unlock()
		if left := time.Until(deadline); left < wait {
			wait = max(left, 0)
		}
		t := time.NewTimer(wait)
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
			cancel(l.lost("not renewed within its lease of %v", l.locker.lease))
			return
		}
		rctx, rcancel := context.WithDeadline(ctx, deadline)
		err := l.Renew(rctx)
		rcancel()
		switch {
		case err == nil:
			wait = period
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

// Guard reads the lease document in the caller's read-write transaction and
// fails (ErrNotHeld) unless it still names this owner with this token and
// has more than a safety margin (a tenth of the lease, at most 1s) left at
// the transaction's read time. Call it before the transaction's writes: the
// transaction then commits only if the lease was ours at commit, since a
// takeover would have to change the document it read.
func (l *Lease) Guard(tx *firestore.Transaction) error {
	snap, err := tx.Get(l.ref)
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("lock %q: guard: %w", l.ref.ID, err)
	}
	return l.checkGuard(snap)
}

func (l *Lease) checkGuard(snap *firestore.DocumentSnapshot) error {
	if err := l.stillOurs(snap); err != nil {
		return err
	}
	d := decodeLease(snap)
	margin := min(time.Second, l.locker.lease/10)
	if left := d.end().Sub(snap.ReadTime); left <= margin {
		return fmt.Errorf("lock %q: %w: %v of the lease left, no more than the %v margin", l.ref.ID, ErrNotHeld, left, margin)
	}
	return nil
}

// Leases is a set of leases granted together by TryAcquireAll.
type Leases []*Lease

// Keys lists the keys in order.
func (ls Leases) Keys() []string {
	keys := make([]string, len(ls))
	for i, l := range ls {
		keys[i] = l.Key()
	}
	return keys
}

// Guard is Lease.Guard for every lease, with one batched read.
func (ls Leases) Guard(tx *firestore.Transaction) error {
	_, err := ls.GuardWith(tx)
	return err
}

// GuardWith is Guard that also reads refs in the same batched read (one RPC
// for the leases and the documents they protect) and returns their
// snapshots, in order.
func (ls Leases) GuardWith(tx *firestore.Transaction, refs ...*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	all := make([]*firestore.DocumentRef, 0, len(ls)+len(refs))
	for _, l := range ls {
		all = append(all, l.ref)
	}
	snaps, err := tx.GetAll(append(all, refs...))
	if err != nil {
		return nil, fmt.Errorf("lock: guard %d leases: %w", len(ls), err)
	}
	for i, l := range ls {
		if err := l.checkGuard(snaps[i]); err != nil {
			return nil, err
		}
	}
	return snaps[len(ls):], nil
}

// ReleaseIn deletes the leases as part of tx, which must have guarded them
// (Guard or GuardWith): the protected writes and the release then commit
// together, in one RPC. If tx does not commit, the leases are still held:
// call Release. Done is not closed by ReleaseIn.
func (ls Leases) ReleaseIn(tx *firestore.Transaction) error {
	for _, l := range ls {
		if err := tx.Delete(l.ref); err != nil {
			return err
		}
	}
	return nil
}

// Release releases every lease: one atomic commit of conditional deletes
// when all are intact, else each on its own. It returns the errors of those
// that were lost already (ErrNotHeld) joined.
func (ls Leases) Release(ctx context.Context) error {
	if len(ls) == 0 {
		return nil
	}
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := ls[0].locker.client.Batch()
	for _, l := range ls {
		l.mu.Lock()
		b.Delete(l.ref, firestore.LastUpdateTime(l.updateTime))
		l.mu.Unlock()
	}
	if _, err := b.Commit(ctx); err == nil {
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
		wg.Go(func() { errs[i] = l.Release(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
