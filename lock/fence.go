package lock

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The fence. Guard must make a transaction commit only while this grant
// holds the lease, and a transaction's reads lock what they read until it
// commits (in the server SDKs). Were Guard to read the lease document, every
// renewal (a write to it) would wait behind the holder's own guarded
// transactions, and under load a busy holder would lose its own lease.
//
// So each lease document has a fence beside it, {lease}/fence/grant
// {owner, acquiredAt}, written in the same commit as every grant
// and takeover, and deleted with every release that ends the lease (the
// last holder's, a forced one, a sweep's). Renewals and reentrant joins do
// not touch it. Guard reads the fence inside the transaction, which locks
// it: no grant, takeover or release of the key can commit until the
// transaction does, and one that committed before makes the fence name
// another grant (or none). Guard reads the lease document itself without a
// lock, for its liveness: renewedAt + leaseSeconds, which only renewals
// move, and only later. A renewal never waits for a guarded transaction.
//
// Collections that clients also grant under security rules (a web app's
// mutex_* collections) cannot have fences: a client's takeover does not
// write one. A Locker for such a collection takes SharedWithClients, and
// its Guard reads the lease document in the transaction, as a client's
// takeover writes it (renewals then wait for guarded transactions, as
// they must).

// FenceCollection and FenceID name a lease document's fence,
// {lease}/fence/grant {owner, acquiredAt}: the grant that holds the lease,
// written with every grant and deleted with every release that ends it.
// Guard reads it in the caller's transaction.
const (
	FenceCollection = "fence"
	FenceID         = "grant"
)

func fenceRef(lease *firestore.DocumentRef) *firestore.DocumentRef {
	return lease.Collection(FenceCollection).Doc(FenceID)
}

// SharedWithClients marks a collection that mobile and web clients also
// grant under security rules, writing the lease documents themselves: no
// fences are written, and Guard reads the lease document in the caller's
// transaction, so that a client's takeover, which only writes the lease,
// still fails the guarded commit. Renewals of such a lease wait for the
// holder's guarded transactions to commit. No RPC of its own.
func SharedWithClients() Option {
	return func(l *Locker) error {
		l.shared = true
		return nil
	}
}

// fenceWrite is the write that records grant (owner, and acquiredAt set to
// the request time, as the lease's own is in the same commit) on the fence
// of the lease document ref.
func (l *Locker) fenceWrite(ref *firestore.DocumentRef) (*pb.Write, error) {
	// No expireAt: renewals do not touch the fence, so a TTL would end the
	// fence of a lease held longer than its margin. Fences go with their
	// leases (releases, SweepEnded); one left by a crash between the two
	// deletes is a few bytes that the next grant overwrites.
	fields, err := encodeFields(map[string]any{FieldOwner: l.owner})
	if err != nil {
		return nil, err
	}
	return &pb.Write{
		Operation:        &pb.Write_Update{Update: &pb.Document{Name: fenceRef(ref).Path, Fields: fields}},
		UpdateTransforms: stampNow(FieldAcquiredAt),
	}, nil
}

// fenceDelete is the write that ends a lease's fence.
func fenceDelete(ref *firestore.DocumentRef) *pb.Write {
	return &pb.Write{Operation: &pb.Write_Delete{Delete: fenceRef(ref).Path}}
}

// fenced: the fence names this lease's grant.
func (l *Lease) fenced(fence *firestore.DocumentSnapshot) error {
	if bugGuardChecksNothing.Load() {
		return nil
	}
	if fence == nil || !fence.Exists() {
		return l.lost("its fence is gone: the lease was released (by someone else: a forced release, a sweep)")
	}
	owner, _ := fence.Data()[FieldOwner].(string)
	at, _ := fence.Data()[FieldAcquiredAt].(time.Time)
	if owner != l.locker.owner || !at.Equal(l.acquiredAt) {
		return l.lost("its fence names the grant of %s at %s", owner, at.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// unlockedRead reads the lease documents of ls outside any transaction (no
// lock), bounded like every RPC of the lock. Guard has no context of its
// caller's to give it: the transaction's own is not exposed.
func unlockedRead(ls Leases) ([]*firestore.DocumentSnapshot, error) {
	refs := make([]*firestore.DocumentRef, len(ls))
	for i, l := range ls {
		refs[i] = l.ref
	}
	snaps, err := ls[0].locker.getAll(context.Background(), refs)
	if err != nil {
		return nil, fmt.Errorf("lock: guard: read %d leases: %w", len(refs), err)
	}
	return snaps, nil
}

// guardFenced is Guard for Lockers with fences: the fences (and refs) in
// tx, the leases without a lock, at once. A lease must be live with more
// than the margin left at the later of the two reads: renewals only move
// its end later, and a takeover would have changed the fence.
func guardFenced(tx *firestore.Transaction, ls Leases, refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	var leases []*firestore.DocumentSnapshot
	var lerr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		leases, lerr = unlockedRead(ls)
	}()
	all := make([]*firestore.DocumentRef, 0, len(ls)+len(refs))
	for _, l := range ls {
		all = append(all, fenceRef(l.ref))
	}
	skip := bugGuardSkipsFence.Load()
	if skip {
		all = all[:0]
	}
	snaps, err := tx.GetAll(append(all, refs...))
	<-read
	if err != nil {
		return nil, ls.readFailed(fmt.Errorf("lock: guard %d leases: %w", len(ls), err))
	}
	if lerr != nil {
		return nil, ls.readFailed(lerr)
	}
	if skip {
		for i, l := range ls {
			if err := l.checkGuard(leases[i], time.Time{}); err != nil {
				return nil, err
			}
		}
		return snaps, nil
	}
	for i, l := range ls {
		if err := l.fenced(snaps[i]); err != nil {
			return nil, err
		}
		if err := l.checkGuard(leases[i], snaps[i].ReadTime); err != nil {
			return nil, err
		}
	}
	return snaps[len(ls):], nil
}

// deleteFence deletes the fence of a lease that is gone now, if it still
// names that lease's grant (d, read as the lease was deleted): a grant that
// came after wrote a fence of its own, which stays.
func deleteFence(ctx context.Context, client *firestore.Client, lease *firestore.DocumentRef, d leaseDoc) error {
	f, err := fenceRef(lease).Get(ctx)
	if err != nil || !f.Exists() {
		if isNotFoundErr(err) {
			return nil
		}
		return err
	}
	owner, _ := f.Data()[FieldOwner].(string)
	at, _ := f.Data()[FieldAcquiredAt].(time.Time)
	if owner != d.Owner || !at.Equal(d.AcquiredAt) {
		return nil
	}
	if _, err := f.Ref.Delete(ctx, firestore.LastUpdateTime(f.UpdateTime)); err != nil && !isConflict(err) {
		return err
	}
	return nil
}

func isNotFoundErr(err error) bool { return status.Code(err) == codes.NotFound }
