// Package counter provides sharded distributed counters on Firestore.
//
//	likes, err := counter.Create(ctx, client, "likes-post-1", 10)
//	err = likes.Increment(ctx, 1)     // from as many writers as you like
//	n, err := likes.Count(ctx)        // exact: one aggregation query
//
// # The documents
//
// One Firestore document sustains about one write per second; a counter that
// many writers bump spreads its count over N shard documents, in a
// collection of your choice (WithCollection; default counters):
//
//	{collection}/{id}            numShards integer, total integer?, rolledUpAt timestamp?
//	{collection}/{id}/shards/{i} count integer           (i = 0 .. numShards-1)
//
// Field names are lowercase in every language, so mobile and web clients
// read total directly.
//
// # Costs
//
// Increment adds to a random shard (the less used of two) with an atomic
// increment: one write, no read, in a transaction so that a commit sent
// again cannot count twice (a begin and a commit: two RPCs). Count sums
// the shards with one aggregation query, whatever N is (billed as one read
// per 1000 shards, not one per shard). Rollup stores that sum in total for
// clients that read one document: a read-only transaction (a read and the
// aggregation) and one conditional write. Create is one commit of N+1
// writes.
//
// # Testing
//
// The package firelocktest runs your tests against the real Firestore
// emulator, a project per test.
package counter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collection is where counters live unless WithCollection says otherwise.
const Collection = "counters"

// Option configures where Create, Open and RollupAll find counters.
// Options send no RPC.
type Option func(*options)

type options struct{ collection string }

// WithCollection keeps counters in the collection at path (default
// Collection, "counters"; a subcollection such as "tenants/t1/counters"
// works too). Every call that reaches a counter must name the same one.
func WithCollection(path string) Option { return func(o *options) { o.collection = path } }

// collection is the collection opts name.
func collection(client *firestore.Client, opts []Option) (*firestore.CollectionRef, error) {
	o := options{collection: Collection}
	for _, opt := range opts {
		opt(&o)
	}
	coll := client.Collection(o.collection)
	if coll == nil {
		return nil, fmt.Errorf("%w: %q is not a collection path", ErrInvalidInput, o.collection)
	}
	return coll, nil
}

// MaxShards bounds a counter's shards. 256 shards take hundreds of writes a
// second; more only slow down creation and growth.
const MaxShards = 256

// Field names of the counter and shard documents (lowercase in every
// language).
const (
	FieldNumShards  = "numShards"
	FieldTotal      = "total"
	FieldRolledUpAt = "rolledUpAt"
	FieldCount      = "count"
)

// Errors to branch on with errors.Is.
var (
	// ErrNotFound: no counter document (or no shards) for the id.
	ErrNotFound = errors.New("counter: not found")
	// ErrExists: Create found the counter with another number of shards.
	ErrExists = errors.New("counter: exists with another shard count")
	// ErrInvalidInput: an id, shard count or collection that cannot be;
	// nothing was written.
	ErrInvalidInput = errors.New("counter: invalid input")
)

// Counter is a handle on one sharded counter. Safe for concurrent use.
type Counter struct {
	client    *firestore.Client
	ref       *firestore.DocumentRef
	numShards atomic.Int64 // as last seen; increments go to shards below it

	mu   sync.Mutex
	used []int64 // increments this handle sent to each shard
}

// ID is the counter's document ID. No RPC.
func (c *Counter) ID() string { return c.ref.ID }

// NumShards is the shard count as this handle last saw it. No RPC.
func (c *Counter) NumShards() int { return int(c.numShards.Load()) }

func (c *Counter) shard(i int) *firestore.DocumentRef {
	return c.ref.Collection("shards").Doc(strconv.Itoa(i))
}

func validate(id string, numShards int) error {
	if err := lock.ValidateKey(id); err != nil {
		return fmt.Errorf("%w: counter id: %v", ErrInvalidInput, err)
	}
	if numShards < 1 || numShards > MaxShards {
		return fmt.Errorf("%w: %d shards, want 1 to %d", ErrInvalidInput, numShards, MaxShards)
	}
	return nil
}

// Create makes counter id with numShards shards at zero, in one atomic
// commit. Creating a counter that exists with the same number of shards is
// idempotent (it returns the existing counter, counts untouched); with
// another number it fails with ErrExists: use Grow. One commit of
// numShards+1 writes; an existing counter costs a read more.
func Create(ctx context.Context, client *firestore.Client, id string, numShards int, opts ...Option) (*Counter, error) {
	if err := validate(id, numShards); err != nil {
		return nil, err
	}
	coll, err := collection(client, opts)
	if err != nil {
		return nil, err
	}
	c := &Counter{client: client, ref: coll.Doc(id)}
	err = client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := tx.Create(c.ref, map[string]any{FieldNumShards: numShards}); err != nil {
			return err
		}
		for i := range numShards {
			if err := tx.Create(c.shard(i), map[string]any{FieldCount: 0}); err != nil {
				return err
			}
		}
		return nil
	}, firestore.MaxAttempts(1))
	if status.Code(err) == codes.AlreadyExists {
		existing, oerr := Open(ctx, client, id, opts...)
		if oerr != nil {
			return nil, oerr
		}
		if existing.NumShards() != numShards {
			return nil, fmt.Errorf("%w: %q has %d shards, asked for %d", ErrExists, id, existing.NumShards(), numShards)
		}
		return existing, nil
	}
	if err != nil {
		return nil, fmt.Errorf("counter: create %q: %w", id, err)
	}
	c.numShards.Store(int64(numShards))
	return c, nil
}

// Open reads counter id's shard count (one read). ErrNotFound if absent.
func Open(ctx context.Context, client *firestore.Client, id string, opts ...Option) (*Counter, error) {
	if err := lock.ValidateKey(id); err != nil {
		return nil, fmt.Errorf("%w: counter id: %v", ErrInvalidInput, err)
	}
	coll, err := collection(client, opts)
	if err != nil {
		return nil, err
	}
	c := &Counter{client: client, ref: coll.Doc(id)}
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Counter) refresh(ctx context.Context) error {
	s, err := c.ref.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %q", ErrNotFound, c.ref.ID)
	}
	if err != nil {
		return fmt.Errorf("counter: read %q: %w", c.ref.ID, err)
	}
	n, ok := s.Data()[FieldNumShards].(int64)
	if !ok || n < 1 {
		return fmt.Errorf("counter: %q has no valid %s", c.ref.ID, FieldNumShards)
	}
	c.numShards.Store(n)
	return nil
}

// IncrementWrite is the write Increment makes, for callers that bump a
// counter inside their own transaction (tx.Update(ref, updates)): it
// picks the shard, and sends no RPC.
func (c *Counter) IncrementWrite(n int64) (*firestore.DocumentRef, []firestore.Update) {
	return c.shard(c.pick()), []firestore.Update{{Path: FieldCount, Value: firestore.Increment(n)}}
}

// pick chooses the shard of an increment: of two shards chosen at random,
// the one this handle sent fewer increments to. One random choice piles a
// burst onto a few shards (100 increments on 15 shards put 11 or more on
// one of them in 7 bursts of 10); the less used of two keeps the busiest
// near its share (8, about), so a shard stays near one write a second.
func (c *Counter) pick() int {
	n := c.NumShards()
	a, b := rand.IntN(n), rand.IntN(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.used) < n {
		c.used = append(c.used, make([]int64, n-len(c.used))...)
	}
	if c.used[b] < c.used[a] {
		a = b
	}
	c.used[a]++
	return a
}

// Increment adds n (negative to subtract) to a random shard: one atomic
// update, committed in a transaction with no reads (it locks nothing): a
// begin and a commit.
// ErrNotFound if the counter does not exist.
//
// It adds n at most once. A plain write would count twice when its answer
// is lost: the client library sends a commit again after a dropped
// connection, and a write without a precondition lands again. A
// transaction's commit lands once; sent again, it is refused. Any other
// error means the outcome is unknown: n was added once, or not at all.
func (c *Counter) Increment(ctx context.Context, n int64) error {
	ref, ups := c.IncrementWrite(n)
	// One attempt: an abort may answer the library's second send of a
	// commit that landed, and a new transaction would add n again.
	err := c.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		return tx.Update(ref, ups)
	}, firestore.MaxAttempts(1))
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%w: %q (shard %s)", ErrNotFound, c.ref.ID, ref.ID)
	}
	if err != nil {
		return fmt.Errorf("counter: increment %q: %w", c.ref.ID, err)
	}
	return nil
}

// Count is the exact sum of all shards: one aggregation query (sum and
// count of the shard documents), whatever the number of shards.
// ErrNotFound if the counter has no shards.
func (c *Counter) Count(ctx context.Context) (int64, error) {
	return c.count(ctx)
}

func (c *Counter) count(ctx context.Context) (int64, error) {
	return c.countWith(ctx, nil)
}

// countWith sums the shards, inside tx if it is not nil.
func (c *Counter) countWith(ctx context.Context, tx *firestore.Transaction) (int64, error) {
	q := c.ref.Collection("shards").NewAggregationQuery().WithSum(FieldCount, "sum").WithCount("shards")
	if tx != nil {
		q = q.Transaction(tx)
	}
	resp, err := q.GetResponse(ctx)
	if err != nil {
		return 0, fmt.Errorf("counter: count %q: %w", c.ref.ID, err)
	}
	if intValue(resp.Result["shards"]) == 0 {
		return 0, fmt.Errorf("%w: %q", ErrNotFound, c.ref.ID)
	}
	return intValue(resp.Result["sum"]), nil
}

func intValue(v any) int64 {
	pv, ok := v.(*pb.Value)
	if !ok {
		return 0
	}
	switch x := pv.GetValueType().(type) {
	case *pb.Value_IntegerValue:
		return x.IntegerValue
	case *pb.Value_DoubleValue:
		return int64(x.DoubleValue)
	}
	return 0
}

// Rollup writes the exact count to the counter document's total and
// returns it. rolledUpAt is the time the total is exact as of: the read
// time of one read-only snapshot that reads both the counter document and
// the sum of its shards. It never locks the shards (a read-write
// transaction around the sum would block every writer).
//
// The write is conditioned on the counter document being unchanged since
// that snapshot, so a stored total never replaces a newer one. A rollup
// that loses to a concurrent rollup whose snapshot is as new as its own or
// newer has nothing left to do: it returns that rollup's total. Only a
// loss to an older snapshot (or to Grow) starts over; concurrent rollups
// therefore coalesce instead of fighting over the document. Costs a
// read-only transaction (a read and the aggregation query) and one
// conditional write; a lost race adds a read.
func (c *Counter) Rollup(ctx context.Context) (int64, error) {
	var lastErr error
	for attempt := range maxRollupTries {
		s, sum, err := c.snapshotCount(ctx)
		if err != nil {
			return 0, err
		}
		_, err = c.ref.Update(ctx, []firestore.Update{
			{Path: FieldTotal, Value: sum},
			{Path: FieldRolledUpAt, Value: s.ReadTime},
		}, firestore.LastUpdateTime(s.UpdateTime))
		if err == nil {
			return sum, nil
		}
		if status.Code(err) != codes.FailedPrecondition {
			return 0, fmt.Errorf("counter: rollup %q: %w", c.ref.ID, err)
		}
		lastErr = err
		cur, err := c.ref.Get(ctx)
		if err != nil {
			return 0, fmt.Errorf("counter: rollup %q: %w", c.ref.ID, err)
		}
		at, ok1 := cur.Data()[FieldRolledUpAt].(time.Time)
		total, ok2 := cur.Data()[FieldTotal].(int64)
		if ok1 && ok2 && !at.Before(s.ReadTime) {
			return total, nil // a concurrent rollup counted as of our snapshot or later
		}
		sleep(ctx, time.Duration(rand.Int64N(int64(min(5*time.Millisecond<<attempt, maxRollupBackoff)))))
	}
	return 0, fmt.Errorf("counter: rollup %q lost %d times to concurrent writes: %w", c.ref.ID, maxRollupTries, lastErr)
}

// snapshotCount reads the counter document and the sum of its shards in
// one read-only transaction: one snapshot, so the sum is exact as of the
// document's read time.
func (c *Counter) snapshotCount(ctx context.Context) (s *firestore.DocumentSnapshot, sum int64, err error) {
	err = c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		var err error
		if s, err = tx.Get(c.ref); err != nil {
			return err
		}
		sum, err = c.countWith(ctx, tx)
		return err
	}, firestore.ReadOnly)
	if status.Code(err) == codes.NotFound {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, c.ref.ID)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("counter: rollup %q: %w", c.ref.ID, err)
	}
	return s, sum, err
}

// A rollup starts over only after losing to an older snapshot; on a
// loaded store several rollups can keep doing so, so it tries for a few
// seconds (jittered, capped backoff) before it gives up.
const (
	maxRollupTries   = 16
	maxRollupBackoff = 500 * time.Millisecond
)

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Grow raises the number of shards to numShards, keeping every count: new
// shards start at zero, and shards are never removed. Growing to the
// current number or fewer is an error (ErrInvalidInput), since shrinking
// would need to move counts. One transaction: a read and a commit.
func (c *Counter) Grow(ctx context.Context, numShards int) error {
	if err := validate(c.ref.ID, numShards); err != nil {
		return err
	}
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(c.ref)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%w: %q", ErrNotFound, c.ref.ID)
		}
		if err != nil {
			return err
		}
		cur, _ := s.Data()[FieldNumShards].(int64)
		if int64(numShards) <= cur {
			return fmt.Errorf("%w: grow %q to %d shards: it has %d", ErrInvalidInput, c.ref.ID, numShards, cur)
		}
		for i := int(cur); i < numShards; i++ {
			if err := tx.Create(c.shard(i), map[string]any{FieldCount: 0}); err != nil {
				return err
			}
		}
		return tx.Update(c.ref, []firestore.Update{{Path: FieldNumShards, Value: numShards}})
	})
	if err != nil {
		return err
	}
	c.numShards.Store(int64(numShards))
	return nil
}

// RollupAll rolls up every counter in the collection (for a scheduled job)
// and returns how many it rolled up: one listing, then a Rollup each.
// Shards left under a deleted counter document are skipped with a warning,
// not an error.
func RollupAll(ctx context.Context, client *firestore.Client, opts ...Option) (int, error) {
	coll, err := collection(client, opts)
	if err != nil {
		return 0, err
	}
	refs, err := coll.DocumentRefs(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("counter: list counters: %w", err)
	}
	n := 0
	var errs []error
	for _, ref := range refs {
		c := &Counter{client: client, ref: ref}
		_, err := c.Rollup(ctx)
		if errors.Is(err, ErrNotFound) {
			// Shards under a deleted counter document (listing shows such
			// parents): nothing to roll up, and no reason to fail the run.
			slog.WarnContext(ctx, "counter: skipping stray shards without a counter document", "counter", ref.ID)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
