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

// Optimistic updates: the MongoDB seed's version check, done the Firestore
// way. Not every write needs a lease: Update reads a document, lets the
// caller compute the change, and writes it on the precondition that the
// document's update time is still the one read (one read plus one
// conditional write, no read-write transaction and so no locks). It lives
// in this package because it is the other half of the same question (how
// do concurrent writers not lose updates) and shares its error conventions.

// ErrConflict: every attempt of Update lost to a concurrent write. The
// error is a *ConflictError.
var ErrConflict = errors.New("lock: optimistic update conflict")

// ErrDocumentMissing: Update found no document and was not asked to create it.
var ErrDocumentMissing = errors.New("lock: document missing")

// ConflictError is Update's error after every attempt lost to a concurrent
// write: the document's path and how many attempts were made.
type ConflictError struct {
	Path     string
	Attempts int
}

// Error says which document and how many attempts.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("lock: optimistic update of %s: %d attempts lost to concurrent writes", e.Path, e.Attempts)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// UpdateOption configures Update.
type UpdateOption func(*updateOptions)

type updateOptions struct {
	attempts int
	create   bool
	version  string
}

// MaxAttempts bounds Update's read-compute-write rounds (default 10; at
// least 1).
func MaxAttempts(n int) UpdateOption { return func(o *updateOptions) { o.attempts = max(n, 1) } }

// CreateIfMissing lets Update create the document: fn then sees a snapshot
// whose Exists() is false, and its updates become the new document's
// fields (dotted paths nest). A concurrent create counts as a conflict.
func CreateIfMissing() UpdateOption { return func(o *updateOptions) { o.create = true } }

// WithVersionField also keeps an integer version in field (e.g. "version"):
// each write sets it to the read version + 1 (1 on create). Use it for data
// that mobile clients edit too; firestore.rules' versionBumped() makes them
// follow the same rule.
func WithVersionField(field string) UpdateOption { return func(o *updateOptions) { o.version = field } }

// Update applies fn's changes to ref optimistically. fn gets the current
// snapshot and returns the updates; it may be called again, with a fresh
// snapshot, after a conflict, so it must not have side effects. If fn
// returns an error, Update returns it and writes nothing. After
// MaxAttempts lost rounds (jittered, growing waits in between) it returns a
// *ConflictError. A missing document gives ErrDocumentMissing unless
// CreateIfMissing is set. Costs one read and one conditional write per
// attempt (a create for a missing document), no transaction.
func Update(ctx context.Context, ref *firestore.DocumentRef, fn func(*firestore.DocumentSnapshot) ([]firestore.Update, error), opts ...UpdateOption) (*firestore.WriteResult, error) {
	o := updateOptions{attempts: 10}
	for _, opt := range opts {
		opt(&o)
	}
	b := backoff{base: 2 * time.Millisecond, limit: 200 * time.Millisecond}
	for attempt := range o.attempts {
		if attempt > 0 {
			t := time.NewTimer(b.next(attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			case <-t.C:
			}
		}
		snap, err := ref.Get(ctx)
		if err != nil && status.Code(err) != codes.NotFound {
			return nil, fmt.Errorf("lock: optimistic update of %s: read: %w", ref.Path, err)
		}
		if !snap.Exists() && !o.create {
			return nil, fmt.Errorf("%w: %s", ErrDocumentMissing, ref.Path)
		}
		ups, err := fn(snap)
		if err != nil {
			return nil, err
		}
		if o.version != "" {
			var v int64
			if snap.Exists() {
				cur, err := snap.DataAt(o.version)
				if err != nil {
					return nil, fmt.Errorf("lock: optimistic update of %s: no version field %q: %w", ref.Path, o.version, err)
				}
				var ok bool
				if v, ok = cur.(int64); !ok {
					return nil, fmt.Errorf("lock: optimistic update of %s: version field %q is %T, not an integer", ref.Path, o.version, cur)
				}
			}
			ups = append(ups, firestore.Update{Path: o.version, Value: v + 1})
		}
		var wr *firestore.WriteResult
		if snap.Exists() {
			wr, err = ref.Update(ctx, ups, firestore.LastUpdateTime(snap.UpdateTime))
		} else {
			var data map[string]any
			if data, err = nest(ups); err != nil {
				return nil, err
			}
			wr, err = ref.Create(ctx, data)
		}
		switch status.Code(err) {
		case codes.OK:
			return wr, nil
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound, codes.Aborted:
			continue // changed (or created, or deleted) since our read
		}
		return nil, fmt.Errorf("lock: optimistic update of %s: %w", ref.Path, err)
	}
	return nil, &ConflictError{Path: ref.Path, Attempts: o.attempts}
}

// nest turns updates with dotted paths into the nested map of a new document.
func nest(ups []firestore.Update) (map[string]any, error) {
	out := map[string]any{}
	for _, u := range ups {
		if u.FieldPath != nil {
			return nil, errors.New("lock: CreateIfMissing takes Path updates, not FieldPath")
		}
		parts := strings.Split(u.Path, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = u.Value
	}
	return out, nil
}
