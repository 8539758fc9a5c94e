package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Operating locks: list, inspect and force-release leases,
// as etcdctl lease list / timetolive / revoke and consul lock do. Forced
// releases are logged in lockLog.

// LockLog holds the log of forced releases: lockLog/{auto} {path, owner,
// acquiredAt, by, at, reason}, each written in the commit that ended its
// lease.
const LockLog = "lockLog"

// Errors of the operators' functions.
var (
	// ErrNoLease: no lease document at the path.
	ErrNoLease = errors.New("lock: no lease")
	// ErrChanged: the lease is not as the operator saw it (renewed,
	// released, taken over or granted anew since): a forced release acts
	// only on the version the operator looked at. Inspect it again.
	ErrChanged = errors.New("lock: the lease changed since it was inspected")
)

// Info is a lease as Firestore holds it, for operators.
type Info struct {
	Path         string    `json:"path"`  // e.g. locks/admit-onsale
	Owner        string    `json:"owner"` // execution ID, or a client's uid
	AcquiredAt   time.Time `json:"acquiredAt"`
	RenewedAt    time.Time `json:"renewedAt"`
	LeaseSeconds int64     `json:"leaseSeconds"`
	Holds        []string  `json:"holds,omitempty"` // the library's acquisitions holding it
	// Ends is when the lease ends unless renewed (renewedAt +
	// leaseSeconds); Live says whether it had not ended at ReadTime, by
	// Firestore's clock.
	Ends time.Time `json:"ends"`
	Live bool      `json:"live"`
	// Token is the grant's fencing token (Lease.Token: its commit time in
	// Unix microseconds), from its fence; 0 when the lease has none (a
	// client's lease, or one granted by a Locker SharedWithClients).
	Token int64 `json:"token"`
	// UpdateTime is the document's version as read: ForceRelease acts
	// only on this version.
	UpdateTime time.Time `json:"updateTime"`
	ReadTime   time.Time `json:"readTime"`
}

func infoOf(lease, fence *firestore.DocumentSnapshot) Info {
	d := decodeLease(lease)
	in := Info{
		Path: leasePath(lease.Ref), Owner: d.Owner, AcquiredAt: d.AcquiredAt, RenewedAt: d.RenewedAt,
		LeaseSeconds: d.LeaseSeconds, Holds: d.Holds, Ends: d.end(), Live: d.live(lease.ReadTime),
		UpdateTime: lease.UpdateTime, ReadTime: lease.ReadTime,
	}
	if fence != nil && fence.Exists() {
		owner, _ := fence.Data()[FieldOwner].(string)
		at, _ := fence.Data()[FieldAcquiredAt].(time.Time)
		if owner == d.Owner && at.Equal(d.AcquiredAt) {
			in.Token = fence.UpdateTime.UnixMicro()
		}
	}
	return in
}

// leasePath is a lease document's path below the database: locks/k.
func leasePath(ref *firestore.DocumentRef) string {
	_, p, _ := strings.Cut(ref.Path, "/documents/")
	return p
}

func leaseRef(client *firestore.Client, path string) (*firestore.DocumentRef, error) {
	ref := client.Doc(path)
	if ref == nil || path == "" {
		return nil, fmt.Errorf("%w: %q is not a document path (collection/key)", ErrInvalidKey, path)
	}
	return ref, nil
}

// Inspect reads the lease at path (e.g. "locks/admit-onsale") and its
// fence: one batched read (one RPC). ErrNoLease when there is none.
func Inspect(ctx context.Context, client *firestore.Client, path string) (Info, error) {
	ref, err := leaseRef(client, path)
	if err != nil {
		return Info{}, err
	}
	snaps, err := client.GetAll(ctx, []*firestore.DocumentRef{ref, fenceRef(ref)})
	if err != nil {
		return Info{}, fmt.Errorf("lock: inspect %s: %w", path, err)
	}
	if !snaps[0].Exists() {
		return Info{}, fmt.Errorf("%w at %s", ErrNoLease, path)
	}
	return infoOf(snaps[0], snaps[1]), nil
}

// List lists the leases of collection (e.g. "locks") whose keys start with
// prefix ("" for all), in key order, at most limit (0: 1000): one query
// and one batched read of their fences.
func List(ctx context.Context, client *firestore.Client, collection, prefix string, limit int) ([]Info, error) {
	if limit <= 0 {
		limit = 1000
	}
	coll := client.Collection(collection)
	if coll == nil {
		return nil, fmt.Errorf("%w: %q is not a collection path", ErrInvalidKey, collection)
	}
	q := coll.OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if prefix != "" {
		q = q.Where(firestore.DocumentID, ">=", coll.Doc(prefix)).Where(firestore.DocumentID, "<", coll.Doc(prefix+"\uf8ff"))
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("lock: list %s: %w", collection, err)
	}
	if len(snaps) == 0 {
		return nil, nil
	}
	fences := make([]*firestore.DocumentRef, len(snaps))
	for i, s := range snaps {
		fences[i] = fenceRef(s.Ref)
	}
	fs, err := client.GetAll(ctx, fences)
	if err != nil {
		return nil, fmt.Errorf("lock: list %s: fences: %w", collection, err)
	}
	out := make([]Info, len(snaps))
	for i, s := range snaps {
		out[i] = infoOf(s, fs[i])
	}
	return out, nil
}

// ForceRelease ends the lease an operator inspected (seen: as Inspect or
// List returned it), live or not, in one commit that deletes it and its
// fence and logs lockLog/{auto} {path, owner, acquiredAt, by, at, reason}.
// The commit is conditioned on the lease's version as seen: a lease that
// was renewed, released or granted anew since is left alone (ErrChanged),
// and nothing is logged. From the commit on, the former holder's Guard,
// Renew and Release fail with ErrNotHeld, and the next grant has a higher
// token. by names the operator; reason is required. One commit.
func ForceRelease(ctx context.Context, client *firestore.Client, seen Info, by, reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: a forced release needs a reason", ErrInvalidKey)
	case strings.TrimSpace(by) == "":
		return fmt.Errorf("%w: a forced release needs the operator's name", ErrInvalidKey)
	case seen.UpdateTime.IsZero():
		return fmt.Errorf("%w: inspect the lease first: a forced release acts on the version inspected", ErrInvalidKey)
	}
	ref, err := leaseRef(client, seen.Path)
	if err != nil {
		return err
	}
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := client.Batch()
	b.Delete(ref, firestore.LastUpdateTime(seen.UpdateTime))
	b.Delete(fenceRef(ref))
	b.Create(client.Collection(LockLog).NewDoc(), map[string]any{
		"path": seen.Path, "owner": seen.Owner, "acquiredAt": seen.AcquiredAt,
		"by": by, "at": firestore.ServerTimestamp, "reason": reason,
	})
	_, err = b.Commit(ctx)
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.FailedPrecondition, codes.NotFound:
		return fmt.Errorf("%w: %s was held by %s at version %s; inspect it again", ErrChanged, seen.Path, seen.Owner, seen.UpdateTime.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Errorf("lock: force-release %s: %w", seen.Path, err)
}
