package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	gonanoid "github.com/matoous/go-nanoid/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Field names of a lease document (the package doc lists their types and
// meaning). Mobile and web clients and their security rules use the same.
const (
	FieldOwner        = "owner"
	FieldAcquiredAt   = "acquiredAt"
	FieldRenewedAt    = "renewedAt"
	FieldLeaseSeconds = "leaseSeconds"
	FieldExpireAt     = "expireAt"
	// FieldHolds lists the acquisitions that hold the lease: one ID per
	// acquisition, more than one only for Reentrant acquisitions. The
	// library's own field beside the shared ones; a client's lease has none.
	FieldHolds = "holds"
)

// Limits and defaults.
const (
	// DefaultLeaseDuration is the lease length without WithLeaseDuration.
	DefaultLeaseDuration = 30 * time.Second
	// MaxLeaseDuration is the longest lease WithLeaseDuration takes.
	MaxLeaseDuration = time.Hour
	// DefaultTTLMargin is how long after the lease end expireAt lies, so a
	// Firestore TTL policy only ever collects documents long dead.
	DefaultTTLMargin = 24 * time.Hour
	// MaxKeys is the most keys one TryAcquireAll takes: one atomic commit
	// holds at most 500 writes.
	MaxKeys = 500
	// maxRounds bounds the read-then-write rounds of one try under churn.
	maxRounds = 4
)

// Locker grants leases on documents of one collection to one owner.
// It is safe for concurrent use; goroutines sharing one still exclude each
// other (every acquisition is its own holder).
type Locker struct {
	client    *firestore.Client
	coll      *firestore.CollectionRef
	owner     string
	lease     time.Duration
	ttlMargin time.Duration
	backoff   backoff
	raw       *vkit.Client // grants, renewals and releases: see commit.go
	rawOpts   []option.ClientOption
	shared    bool // SharedWithClients: no fences (see fence.go)
	metrics   *lockMetrics
}

// Option configures a Locker (New). Options send no RPC.
type Option func(*Locker) error

// WithOwner sets the owner ID written into leases. The default is a fresh
// nanoid execution ID per Locker. Lockers with the same owner still exclude
// each other: every acquisition is its own holder unless it asks for
// Reentrant.
func WithOwner(id string) Option {
	return func(l *Locker) error {
		if id == "" {
			return errors.New("lock: empty owner")
		}
		l.owner = id
		return nil
	}
}

// WithLeaseDuration sets the lease length: whole seconds from 1s to 1h
// (default DefaultLeaseDuration, 30 s). A crashed holder blocks its keys at
// most this long; KeepAlive renews a third into it.
func WithLeaseDuration(d time.Duration) Option {
	return func(l *Locker) error {
		if d < time.Second || d > MaxLeaseDuration || d%time.Second != 0 {
			return fmt.Errorf("lock: lease duration %v: want whole seconds from 1s to %v", d, MaxLeaseDuration)
		}
		l.lease = d
		return nil
	}
}

// WithTTLMargin sets how long after the lease end expireAt lies (default 24h).
func WithTTLMargin(d time.Duration) Option {
	return func(l *Locker) error {
		if d < time.Hour {
			return fmt.Errorf("lock: TTL margin %v: want at least 1h so clock skew cannot collect a live lease", d)
		}
		l.ttlMargin = d
		return nil
	}
}

// WithClientOptions gives the options the Locker's *firestore.Client was
// made with (endpoint, credentials, gRPC connection). Grants, renewals and
// releases use a low-level client of their own (see the package doc), built
// from these; without them the Locker shares the process's one, built like
// firestore.NewClient builds one, from FIRESTORE_EMULATOR_HOST or
// Application Default Credentials. The database (named ones too) always
// comes from the *firestore.Client. Either way the first commit checks that
// both reach the same database (ErrClientMismatch). Each New with these
// options builds a client of its own, which Locker.Close closes: make one
// Locker, derive one per execution with ForOwner, and Close it when done.
func WithClientOptions(opts ...option.ClientOption) Option {
	return func(l *Locker) error {
		l.rawOpts = opts
		return nil
	}
}

// WithBackoff sets Acquire's waits between tries: full jitter over an
// exponential series from base, capped at limit (default 10 ms to 1 s),
// and never longer than the holder's remaining lease.
func WithBackoff(base, limit time.Duration) Option {
	return func(l *Locker) error {
		if base <= 0 || limit < base {
			return fmt.Errorf("lock: backoff %v..%v: want 0 < base <= limit", base, limit)
		}
		l.backoff = backoff{base: base, limit: limit}
		return nil
	}
}

// New returns a Locker for the lease documents of the collection at path
// (e.g. "locks", or "tenants/t1/locks" for a subcollection), owned by a
// fresh execution ID unless WithOwner says otherwise. It sends no RPC: the
// first commit proves the connection (two RPCs, once per client and
// process). With WithClientOptions it builds a commit client of its own
// (see Close).
func New(client *firestore.Client, path string, opts ...Option) (*Locker, error) {
	if client == nil {
		return nil, errors.New("lock: nil client")
	}
	coll := client.Collection(path)
	if coll == nil {
		return nil, fmt.Errorf("lock: %q is not a collection path", path)
	}
	l := &Locker{
		client:    client,
		coll:      coll,
		lease:     DefaultLeaseDuration,
		ttlMargin: DefaultTTLMargin,
		backoff:   backoff{base: 10 * time.Millisecond, limit: time.Second},
	}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if l.metrics == nil {
		l.metrics = newLockMetrics(nil)
	}
	raw, err := commitClient(context.Background(), l.rawOpts)
	if err != nil {
		return nil, err
	}
	l.raw = raw
	if l.owner == "" {
		id, err := NewExecutionID()
		if err != nil {
			return nil, err
		}
		l.owner = id
	}
	return l, nil
}

// ForOwner returns a Locker like l (collection, options, commit client)
// that writes owner id into its leases. No RPC. A server that takes leases
// as a new execution per request makes one Locker and derives one per
// execution: New would build a commit client each time when given
// WithClientOptions.
func (l *Locker) ForOwner(id string) (*Locker, error) {
	if id == "" {
		return nil, errors.New("lock: empty owner")
	}
	derived := *l
	derived.owner = id
	return &derived, nil
}

// NewExecutionID returns a fresh nanoid to identify one execution (an
// owner, a job delivery). No RPC.
func NewExecutionID() (string, error) {
	id, err := gonanoid.New()
	if err != nil {
		return "", fmt.Errorf("lock: execution ID: %w", err)
	}
	return id, nil
}

// Owner is the owner ID this Locker writes into its leases. No RPC.
func (l *Locker) Owner() string { return l.owner }

// LeaseDuration is the length of the leases this Locker grants. No RPC.
func (l *Locker) LeaseDuration() time.Duration { return l.lease }

// Collection is the collection of the lease documents. No RPC.
func (l *Locker) Collection() *firestore.CollectionRef { return l.coll }

// AcquireOption configures one acquisition (TryAcquire, Acquire, WithLock
// and their All forms).
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	fields    map[string]any
	check     func(*firestore.DocumentSnapshot) error
	reentrant bool
}

// Reentrant lets the acquisition join a live lease of this Locker's owner
// (the same execution ID, through this Locker or another) instead of
// answering ErrHeld. The lease then has one more holder: each holder
// releases its own hold, and only the last release deletes the document. A
// reentrant acquisition renews the lease and never shortens it (the longer
// of the two lease lengths stays); its Token is that of its own write, later
// than the grant's. Without Reentrant, every acquisition excludes every
// other, whatever Locker and owner it came through. A join costs a read
// and one conditional write.
func Reentrant() AcquireOption {
	return func(o *acquireOptions) { o.reentrant = true }
}

// WithFields adds fields to the lease document on grant (besides the lease
// fields, which they cannot replace), in the same write. A takeover
// replaces them too.
func WithFields(fields map[string]any) AcquireOption {
	return func(o *acquireOptions) { o.fields = fields }
}

// WithCheck calls check with every existing lease document found before
// deciding on it (live or ended, ours or not; not a seal, which is no
// lease: see the package doc). A non-nil error aborts the
// acquisition with that error and nothing written. Scheduled jobs use it to
// refuse the takeover of an event that is already done. check sees the
// snapshot the acquisition read anyway: no RPC of its own.
func WithCheck(check func(*firestore.DocumentSnapshot) error) AcquireOption {
	return func(o *acquireOptions) { o.check = check }
}

// TryAcquire grants the lease on key or fails at once.
//
// A grant whose answer came back with no more of its lease left (by this
// holder's clock) than Guard's margin is not handed over: it is released
// again and TryAcquire fails with ErrUnanswered.
//
// A free key costs one RPC: a create that fails if the document exists. A
// key whose lease has ended (by Firestore's clock: the read time of the
// snapshot against renewedAt + leaseSeconds) is taken over by an update
// conditioned on the document's update time, so of two contenders at most
// one wins. A live lease gives a *HeldError (errors.Is(err, ErrHeld)) saying
// who holds it and until when, also when it is this owner's, unless the
// acquisition is Reentrant.
//
// An ambiguous outcome (deadline, dropped connection: the grant may have
// committed unheard) is settled before TryAcquire returns, by reading the
// keys back for up to a few seconds past ctx: a grant that names this
// acquisition is returned as the lease while ctx is live, and otherwise
// deleted again with a precondition; a grant found nowhere is sealed out
// (see the package doc: it may still be on its way), and, while ctx is
// live, the keys are read and granted again. If even that read or seal
// fails, whatever was granted ends with its lease, and the error says so
// (ErrUnanswered).
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Lease, error) {
	ls, err := l.TryAcquireAll(ctx, []string{key}, opts...)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquireAll grants leases on all keys or on none (all-or-nothing), in
// one atomic commit: creates for free keys, conditional updates for ended
// leases and for this owner's live ones. When every key is free this is one
// RPC; otherwise one batched read comes first. If another owner holds any
// key, nothing is written and the *HeldError lists every such key. Keys are
// validated first (ErrInvalidKey; at most MaxKeys, no duplicates). The
// leases come back in the order of keys.
func (l *Locker) TryAcquireAll(ctx context.Context, keys []string, opts ...AcquireOption) (Leases, error) {
	start := time.Now()
	ls, err := l.tryAcquireAll(ctx, keys, opts...)
	l.metrics.acquired(ctx, start, err)
	return ls, err
}

// tryAcquireAll is TryAcquireAll unmeasured: AcquireAll measures its whole wait.
func (l *Locker) tryAcquireAll(ctx context.Context, keys []string, opts ...AcquireOption) (granted Leases, err error) {
	defer func() { err = withContext(ctx, err) }()
	defer func() {
		if err == nil {
			granted, err = l.fresh(ctx, granted)
		}
	}()
	if err := validateKeys(keys); err != nil {
		return nil, err
	}
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	id, err := NewExecutionID() // this acquisition, as the documents name it
	if err != nil {
		return nil, err
	}
	start := time.Now()
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		refs[i] = l.coll.Doc(k)
	}

	// Fast path: every key free, one commit of creates.
	var lastErr error
	leases, err := l.commitGrants(ctx, id, refs, make([]*firestore.DocumentSnapshot, len(refs)), o)
	if err == nil || !isConflict(err) && !l.triedInVain(ctx, err) {
		return leases, err
	}
	lastErr = err
	for range maxRounds {
		snaps, err := l.getAll(ctx, refs)
		if err != nil {
			return nil, fmt.Errorf("lock: read %d lease documents: %w", len(refs), err)
		}
		if ours := l.named(id, snaps); ours == len(snaps) {
			// An earlier commit of this call landed after the read that
			// settled it found nothing (it was still on its way): that is
			// our grant.
			return l.leasesFrom(id, snaps, start, nil), nil
		}
		var held []Holder
		for i, s := range snaps {
			if !s.Exists() {
				snaps[i] = nil
				continue
			}
			if o.check != nil && decodeLease(s).Owner != sealOwner { // a seal is the lock's own, no lease
				if err := o.check(s); err != nil {
					return nil, err
				}
			}
			d := decodeLease(s)
			if d.live(s.ReadTime) && !(o.reentrant && d.Owner == l.owner) && !ignoresEnd(d, l.owner) {
				held = append(held, Holder{Key: keys[i], Owner: d.Owner, Until: d.end(), Remaining: d.end().Sub(s.ReadTime)})
			}
		}
		if len(held) > 0 {
			return nil, &HeldError{Holders: held, owner: l.owner}
		}
		leases, err := l.commitGrants(ctx, id, refs, snaps, o)
		if err == nil || !isConflict(err) && !l.triedInVain(ctx, err) {
			return leases, err
		}
		// Someone changed a document since our read, or the commit never
		// landed (a connection down): look again.
		lastErr = err
	}
	if errors.As(lastErr, new(landedNothing)) {
		// Every commit failed before it landed (a connection that keeps
		// dropping): unanswered, so that Acquire tries again.
		return nil, fmt.Errorf("%w: the last of %d commits never landed: %w", ErrUnanswered, maxRounds+1, lastErr)
	}
	// Every round lost to a grant that landed between our read and write:
	// the keys are busy, which is what ErrHeld tells a caller.
	return nil, fmt.Errorf("%w: %d tries lost to concurrent grants (last: %v)", ErrHeld, maxRounds, lastErr)
}

// landedNothing is the error of an ambiguous grant that settleGrant read
// back and found had not landed: its cause, as it was.
type landedNothing struct{ cause error }

func (e landedNothing) Error() string { return e.cause.Error() }
func (e landedNothing) Unwrap() error { return e.cause }

// triedInVain: err is a grant that never landed (a connection down, an
// answer lost before the request was sent), while ctx is live: the try
// reads the keys again and commits again, as the client library would
// have sent the commit again had its retry been safe (see grantRetry).
func (l *Locker) triedInVain(ctx context.Context, err error) bool {
	return errors.As(err, new(landedNothing)) && ended(ctx) == nil
}

// commitGrants writes, in one atomic commit, a grant for each ref: a create
// where snaps[i] is nil, else a write conditioned on the snapshot's update
// time (a takeover of an ended lease, or a reentrant join of our owner's
// live one). An ambiguous failure is settled (see TryAcquire).
func (l *Locker) commitGrants(ctx context.Context, id string, refs []*firestore.DocumentRef, snaps []*firestore.DocumentSnapshot, o acquireOptions) (Leases, error) {
	writes := make([]*pb.Write, 0, 2*len(refs))
	at := make([]int, len(refs)) // the index of each lease's write
	joined := make([]*leaseDoc, len(refs))
	for i, ref := range refs {
		var w *pb.Write
		var err error
		s := snaps[i]
		d := decodeLease(s)
		switch {
		case s == nil:
			w, err = l.grantWrite(ref, id, o.fields, ifMissing())
		case d.Owner == l.owner && d.live(s.ReadTime): // Reentrant (else it was held)
			joined[i] = &d
			w, err = l.joinWrite(ref, id, d, ifUpdatedAt(s.UpdateTime))
		default:
			w, err = l.grantWrite(ref, id, o.fields, ifUpdatedAt(s.UpdateTime))
		}
		if err != nil {
			return nil, err
		}
		at[i] = len(writes)
		writes = append(writes, w)
		if joined[i] == nil && !l.shared && !bugGrantWithoutFence.Load() { // a grant: its fence in the same commit
			f, err := l.fenceWrite(ref)
			if err != nil {
				return nil, err
			}
			writes = append(writes, f)
		}
	}
	// The first commit of a client proves it first (commit.go): the lease
	// is measured from the grant's own send, after that.
	if err := l.verified(ctx); err != nil {
		return nil, err
	}
	sent := time.Now()
	results, err := l.commit(ctx, writes, grantRetry)
	if err != nil {
		if isAmbiguous(err) {
			joins := make([]bool, len(refs))
			for i, d := range joined {
				joins[i] = d != nil
			}
			return l.settleGrant(ctx, id, refs, sent, o.reentrant, joins, err)
		}
		return nil, err
	}
	leases := make(Leases, len(refs))
	for i, ref := range refs {
		r := results[at[i]]
		if d := joined[i]; d != nil {
			leases[i] = newLease(l, ref, id, d.AcquiredAt, r.stamps[0], r.updateTime, sent, time.Duration(max(d.LeaseSeconds, l.leaseSeconds()))*time.Second, append(d.Holds, id))
		} else {
			leases[i] = newLease(l, ref, id, r.stamps[0], r.stamps[1], r.updateTime, sent, l.lease, []string{id})
		}
	}
	return leases, nil
}

// fresh hands leases over only while they have more than their margin
// left by the holder's clock (see Lease.validUntil). A grant answered that
// late (a slow network, a settled ambiguous answer) may have ended by
// Firestore's clock already, and its holder could do nothing under it: it
// is released again, past ctx for up to settleBudget, and the try fails
// with ErrUnanswered (Acquire tries again). What the release cannot remove
// ends with its lease.
func (l *Locker) fresh(ctx context.Context, ls Leases) (Leases, error) {
	for _, lease := range ls {
		lease.mu.Lock()
		left := time.Until(lease.validUntil)
		lease.mu.Unlock()
		if left > lease.margin() {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.settleBudget())
		rerr := ls.Release(rctx)
		cancel()
		removed := "released again"
		if rerr != nil {
			removed = fmt.Sprintf("could not be released again (%v): it ends with its lease", rerr)
		}
		return nil, fmt.Errorf("%w: the grant of %q was answered with %v of its lease of %v left by this holder's clock, too late to work under: %s",
			ErrUnanswered, ls.Keys(), left.Round(time.Millisecond), lease.duration, removed)
	}
	return ls, nil
}

// graceful is ctx for a release, which must not leave a lock held because
// its caller's request went away: if ctx has ended before the release
// begins, or is cancelled while it runs, the release goes on for up to
// settleBudget more, as an ambiguous grant is settled past its caller's
// context. A deadline that passes while it runs is the caller's bound on
// the release, and ends it.
func (l *Locker) graceful(ctx context.Context) (context.Context, context.CancelFunc) {
	grace := l.settleBudget()
	if ctx.Err() != nil {
		return context.WithTimeoutCause(context.WithoutCancel(ctx), grace,
			fmt.Errorf("%w before the release began, and its grace of %v ran out", context.Cause(ctx), grace))
	}
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(grace, func() {
			cancel(fmt.Errorf("%w while the release ran, and its grace of %v ran out", context.Cause(ctx), grace))
		})
	})
	return gctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}

// settleBudget bounds how long an ambiguous grant is settled past the
// caller's context: long enough to ride out a dropped connection, never
// longer than the lease that would otherwise end by itself.
func (l *Locker) settleBudget() time.Duration { return min(10*time.Second, l.lease) }

// settleGrant decides an ambiguous grant (cause) by reading the keys back:
// documents that name acquisition id are this grant. With ctx still live
// and every key granted, they are the caller's leases. Otherwise what was
// granted is removed again, each conditioned on the update time read, and
// cause is returned: as ErrUnanswered when some of it had landed
// (cameAndWent), or when the read or the removal failed (unsettled).
// A grant read back and found nowhere may still be on its way (cut off by
// a deadline, it can reach Firestore after the read): it is sealed out
// (seal) before the try says it never landed (landedNothing). Nothing is
// left to block the keys beyond one lease.
func (l *Locker) settleGrant(ctx context.Context, id string, refs []*firestore.DocumentRef, sent time.Time, reentrant bool, joins []bool, cause error) (Leases, error) {
	snaps, err := l.readBack(ctx, refs)
	if err != nil {
		return nil, unsettled(fmt.Errorf("lock: grant of %d keys failed ambiguously (%w) and could not be read back (%v): "+
			"anything it wrote ends with its lease of %v", len(refs), cause, err, l.lease))
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.settleBudget())
	defer cancel()
	for attempt, moved := 0, 0; ; attempt++ {
		ours := l.named(id, snaps)
		if ours == len(refs) && ctx.Err() == nil {
			return l.leasesFrom(id, snaps, sent, joins), nil
		}
		if ours > 0 {
			if err := l.removeGrant(sctx, id, refs, snaps); err != nil {
				return nil, unsettled(fmt.Errorf("lock: grant failed ambiguously (%w) and its leases could not be removed (%v): "+
					"they end within %v", cause, err, l.lease))
			}
			return nil, cameAndWent(cause)
		}
		serr := l.seal(sctx, refs, snaps, reentrant)
		switch {
		case serr == nil:
			return nil, landedNothing{cause}
		case isConflict(serr) || errors.Is(serr, errUnmoved):
			// The grant landed after all, or another write moved a
			// document: look again.
			if moved++; moved > maxRounds {
				return nil, unsettled(fmt.Errorf("lock: grant of %d keys failed ambiguously (%w), was not found, and could not be sealed "+
					"against landing later (the documents kept changing): anything it writes ends with its lease of %v", len(refs), cause, l.lease))
			}
		case isAmbiguous(serr):
			// The seal goes where the grant went: a connection that is
			// down is waited for, as the client library waited for it
			// before a grant was no longer sent again blind.
			t := time.NewTimer(l.backoff.next(attempt + 3))
			select {
			case <-sctx.Done():
				t.Stop()
			case <-t.C:
			}
		default:
			return nil, unsettled(fmt.Errorf("lock: grant of %d keys failed ambiguously (%w), was not found, and could not be sealed "+
				"against landing later (%v): anything it writes ends with its lease of %v", len(refs), cause, serr, l.lease))
		}
		if sctx.Err() != nil {
			return nil, unsettled(fmt.Errorf("lock: grant of %d keys failed ambiguously (%w), was not found, and could not be sealed "+
				"against landing later within %v (%v): anything it writes ends with its lease of %v", len(refs), cause, l.settleBudget(), serr, l.lease))
		}
		if snaps, err = l.readBack(sctx, refs); err != nil {
			return nil, unsettled(fmt.Errorf("lock: grant of %d keys failed ambiguously (%w), was not found, and could not be read back "+
				"again to seal it (%v): anything it writes ends with its lease of %v", len(refs), cause, err, l.lease))
		}
	}
}

// FieldOwner of a sealed key's document (seal): nobody's lease.
const sealOwner = "firelock-sealed"

// errUnmoved: a seal's write left a document's update time as it was.
var errUnmoved = errors.New("the seal left a document as it was")

// seal makes sure no grant of a try that was read back and found nowhere
// (snaps, which name none of it) lands later: a commit cut off by a
// deadline may still be on its way. Each grant was conditioned on a state
// of its document, missing (a create) or an update time (a takeover, a
// reentrant join), and seal moves each document out of the state it is
// in, if a grant could have been conditioned on it, in one commit
// conditioned on that same state: a missing one is created as a lease
// that ended long ago (nobody's: the next grant takes it over, SweepEnded
// and the TTL policy remove it), an ended one or a live one of this owner
// that a reentrant try could join gets a new expireAt (later than the
// old). A live lease of another acquisition is left alone: the try saw it
// held (its state only ages), so no grant was conditioned on it. A
// conflict or an ambiguous failure says the documents moved: the caller
// reads them again. One RPC, sent only after an ambiguous grant, and again
// (like a grant) only on ResourceExhausted.
//
// A create that is still on its way when the key is held by another can
// land once that lease is released (deleted): a key is sealed only in the
// state it is in.
func (l *Locker) seal(ctx context.Context, refs []*firestore.DocumentRef, snaps []*firestore.DocumentSnapshot, reentrant bool) error {
	var writes []*pb.Write
	var was []time.Time // each write's document's update time; zero for a create
	long := time.Unix(0, 0)
	for i, ref := range refs {
		s := snaps[i]
		d := decodeLease(s)
		switch {
		case s == nil || !s.Exists():
			fields, err := encodeFields(map[string]any{FieldOwner: sealOwner, FieldAcquiredAt: long, FieldRenewedAt: long,
				FieldLeaseSeconds: int64(1), FieldExpireAt: l.expireAt(time.Second)})
			if err != nil {
				return err
			}
			writes = append(writes, &pb.Write{
				Operation:       &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
				CurrentDocument: ifMissing(),
			})
			was = append(was, time.Time{})
		case d.live(s.ReadTime) && !(reentrant && d.Owner == l.owner) && !ignoresEnd(d, l.owner):
			continue
		default:
			fields, err := encodeFields(map[string]any{FieldExpireAt: l.expireAt(time.Duration(max(d.LeaseSeconds, l.leaseSeconds())) * time.Second)})
			if err != nil {
				return err
			}
			writes = append(writes, &pb.Write{
				Operation:       &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
				UpdateMask:      &pb.DocumentMask{FieldPaths: []string{FieldExpireAt}},
				CurrentDocument: ifUpdatedAt(s.UpdateTime),
			})
			was = append(was, s.UpdateTime)
		}
	}
	results, err := l.commit(ctx, writes, grantRetry)
	if err != nil {
		return err
	}
	for i, r := range results {
		if !was[i].IsZero() && r.updateTime.Equal(was[i]) {
			return errUnmoved
		}
	}
	return nil
}

// removeGrant gives up acquisition id's hold on every document of snaps
// that names it, each conditioned on its update time as read. The batch is
// atomic: one document changed since the read (a Reentrant join of our
// owner, a takeover of a lease that ended, a retried commit of this very
// removal that landed) fails it all, so the keys are read again and what
// still names id is removed, for up to maxRounds batches.
func (l *Locker) removeGrant(ctx context.Context, id string, refs []*firestore.DocumentRef, snaps []*firestore.DocumentSnapshot) error {
	for round := 0; ; round++ {
		//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
		b := l.client.Batch()
		n := 0
		for _, s := range snaps {
			if d := decodeLease(s); s.Exists() && slices.Contains(d.Holds, id) {
				l.releaseOp(b, s.Ref, id, d.Holds, s.UpdateTime)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		if round == maxRounds {
			return fmt.Errorf("the documents kept changing under %d removals", maxRounds)
		}
		_, err := b.Commit(ctx)
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return err
		}
		if snaps, err = l.getAll(ctx, refs); err != nil {
			return fmt.Errorf("read again after a conflict: %w", err)
		}
	}
}

// unsettled is the error of a grant that may stand (it could not be read
// back, or was read back and could not be removed): ErrUnanswered, whatever
// ended the wait for its answer, since its outcome is unknown and others
// may see the keys held until its lease ends.
func unsettled(err error) error {
	if errors.Is(err, ErrUnanswered) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnanswered, err)
}

// cameAndWent is the error of a grant that landed unanswered and was
// removed again: ErrUnanswered, whatever ended the wait for its answer (the
// RPC's bound, or the caller's context), since others may have seen the
// keys held meanwhile.
func cameAndWent(cause error) error {
	if errors.Is(cause, ErrUnanswered) {
		return cause
	}
	return fmt.Errorf("%w: the grant landed after its caller stopped waiting, and was removed again: %w", ErrUnanswered, cause)
}

// readBack reads refs to settle an ambiguous write: past ctx's end if need
// be, retrying for up to settleBudget.
func (l *Locker) readBack(ctx context.Context, refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.settleBudget())
	defer cancel()
	for attempt := 0; ; attempt++ {
		snaps, err := l.getAll(sctx, refs)
		if err == nil {
			return snaps, nil
		}
		t := time.NewTimer(l.backoff.next(attempt + 3))
		select {
		case <-sctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// getAll reads refs in one batched read, bounded like every RPC of the
// lock.
func (l *Locker) getAll(ctx context.Context, refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
	bctx, cancel := l.bounded(ctx)
	defer cancel()
	snaps, err := l.client.GetAll(bctx, refs)
	return snaps, l.unanswered(ctx, bctx, err)
}

// named counts the snapshots whose lease names acquisition id.
func (l *Locker) named(id string, snaps []*firestore.DocumentSnapshot) int {
	n := 0
	for _, s := range snaps {
		if d := decodeLease(s); s.Exists() && d.Owner == l.owner && slices.Contains(d.Holds, id) {
			n++
		}
	}
	return n
}

// leasesFrom turns snapshots of documents naming acquisition id (a grant
// learnt by reading, not from its commit) into leases. The token is the
// grant's commit time: the document's create time if the grant created
// it, else its update time (a takeover's or a join's: only other holders
// of our owner write a live lease of ours, later). joins[i] says the
// write to snaps[i] was a Reentrant join (nil: not known), whose document
// another grant created.
func (l *Locker) leasesFrom(id string, snaps []*firestore.DocumentSnapshot, sent time.Time, joins []bool) Leases {
	leases := make(Leases, len(snaps))
	for i, s := range snaps {
		d := decodeLease(s)
		lease := newLease(l, s.Ref, id, d.AcquiredAt, d.RenewedAt, s.UpdateTime, sent, time.Duration(d.LeaseSeconds)*time.Second, d.Holds)
		if !s.CreateTime.Before(d.AcquiredAt) && !(joins != nil && joins[i]) {
			lease.token = s.CreateTime.UnixMicro()
		}
		leases[i] = lease
	}
	return leases
}

func (l *Locker) leaseSeconds() int64 { return int64(l.lease / time.Second) }

// grantWrite is the one write that grants a lease (see the package doc): the whole
// document, replacing whatever an ended lease left, with acquiredAt and
// renewedAt set to the server's request time and acquisition id its holder.
func (l *Locker) grantWrite(ref *firestore.DocumentRef, id string, extra map[string]any, pre *pb.Precondition) (*pb.Write, error) {
	data := make(map[string]any, len(extra)+4)
	for k, v := range extra {
		data[k] = v
	}
	data[FieldOwner] = l.owner
	data[FieldLeaseSeconds] = l.leaseSeconds()
	data[FieldExpireAt] = l.expireAt(l.lease)
	data[FieldHolds] = []string{id}
	delete(data, FieldAcquiredAt)
	delete(data, FieldRenewedAt)
	fields, err := encodeFields(data)
	if err != nil {
		return nil, err
	}
	return &pb.Write{
		Operation:        &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
		UpdateTransforms: stampNow(FieldAcquiredAt, FieldRenewedAt),
		CurrentDocument:  pre,
	}, nil
}

// joinWrite adds acquisition id to the holders of our owner's live lease d,
// renews it, and keeps the longer lease length: a reentrant acquisition
// never shortens a lease.
func (l *Locker) joinWrite(ref *firestore.DocumentRef, id string, d leaseDoc, pre *pb.Precondition) (*pb.Write, error) {
	secs := max(d.LeaseSeconds, l.leaseSeconds())
	fields, err := encodeFields(map[string]any{
		FieldLeaseSeconds: secs,
		FieldExpireAt:     l.expireAt(time.Duration(secs) * time.Second),
		FieldHolds:        append(slices.Clone(d.Holds), id),
	})
	if err != nil {
		return nil, err
	}
	return &pb.Write{
		Operation:        &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
		UpdateMask:       &pb.DocumentMask{FieldPaths: []string{FieldLeaseSeconds, FieldExpireAt, FieldHolds}},
		UpdateTransforms: stampNow(FieldRenewedAt),
		CurrentDocument:  pre,
	}, nil
}

// renewWrite moves renewedAt to the server's request time (and expireAt
// along); owner, acquiredAt, leaseSeconds and the holders stay as they are.
func (l *Locker) renewWrite(ref *firestore.DocumentRef, lease time.Duration, pre *pb.Precondition) (*pb.Write, error) {
	data, mask := map[string]any{FieldExpireAt: l.expireAt(lease)}, []string{FieldExpireAt}
	if bugRenewStretches.Load() {
		data[FieldLeaseSeconds], mask = 2*int64(lease/time.Second), append(mask, FieldLeaseSeconds)
	}
	if bugRenewAnyHolder.Load() {
		pre = &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: true}}
	}
	fields, err := encodeFields(data)
	if err != nil {
		return nil, err
	}
	return &pb.Write{
		Operation:        &pb.Write_Update{Update: &pb.Document{Name: ref.Path, Fields: fields}},
		UpdateMask:       &pb.DocumentMask{FieldPaths: mask},
		UpdateTransforms: stampNow(FieldRenewedAt),
		CurrentDocument:  pre,
	}, nil
}

// expireAt is for a TTL policy only. The local clock is fine here: the
// margin is hours, far beyond any clock skew.
func (l *Locker) expireAt(lease time.Duration) time.Time {
	return time.Now().Add(lease + l.ttlMargin)
}

// Acquire is TryAcquire that waits while another acquisition holds the
// key: capped exponential backoff with full jitter (WithBackoff), never
// longer than the holder's remaining lease, until ctx ends. Each try costs
// what TryAcquire does. When ctx ends while it waits, the error wraps both
// ctx's error and the last try's answer, a *HeldError as a rule: errors.Is
// matches context.DeadlineExceeded and ErrHeld, and errors.As finds who
// holds the key and until when.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lease, error) {
	ls, err := l.AcquireAll(ctx, []string{key}, opts...)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireAll is TryAcquireAll that waits like Acquire, with the same error
// when ctx ends. A try that got no answer in time (ErrUnanswered: settled,
// nothing of it left, unless its error says it could not be: then that ends
// with its lease) is tried again. Such a try may have granted and
// released the keys again, and others may have seen them held by this
// owner meanwhile.
// When ctx ends, between tries or inside one, the wait is given up and
// counted under what the last answered try found (held, as a rule).
func (l *Locker) AcquireAll(ctx context.Context, keys []string, opts ...AcquireOption) (Leases, error) {
	start := time.Now()
	var last error // the last try's ErrHeld, or ErrUnanswered (settled, retried)
	for attempt := 0; ; attempt++ {
		began := time.Now()
		ls, err := l.tryAcquireAll(ctx, keys, opts...)
		observeTry(ctx, began, err)
		if last != nil && err != nil && ended(ctx) != nil {
			// The context ended inside this try: the caller gave up waiting,
			// as below, and the try's own error (the context's) says nothing
			// of the key, unless the try was settled (a grant that may have
			// come and gone).
			if errors.Is(err, ErrUnanswered) {
				last = err
			}
			l.metrics.acquired(ctx, start, last)
			return nil, waitedInVain(ctx, keys, last)
		}
		if !errors.Is(err, ErrHeld) && !(errors.Is(err, ErrUnanswered) && ended(ctx) == nil) {
			l.metrics.acquired(ctx, start, err)
			return ls, err
		}
		// An unanswered try (settled: nothing of it left, though a grant
		// may have come and gone) makes what an earlier try found stale.
		last = err
		wait := l.backoff.next(attempt)
		var held *HeldError
		if errors.As(err, &held) {
			if r := held.maxRemaining(); r > 0 && r < wait {
				wait = r + time.Millisecond
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			l.metrics.acquired(ctx, start, err) // the last try's: held, as a rule
			return nil, waitedInVain(ctx, keys, err)
		case <-t.C:
		}
	}
}

// waitedInVain is the error of an Acquire whose context ended while it
// waited: the context's, and the last try's answer (a *HeldError naming
// the holder, as a rule), so that errors.Is matches both and errors.As
// finds the holder.
func waitedInVain(ctx context.Context, keys []string, last error) error {
	if last == nil {
		return fmt.Errorf("lock: waiting for %q: %w", keys, ended(ctx))
	}
	return fmt.Errorf("lock: waiting for %q: %w (last: %w)", keys, ended(ctx), last)
}

// WithLock acquires key (waiting, as Acquire), keeps the lease alive while
// fn runs, then releases it (whatever ctx does by then, for up to 10 s).
// fn gets a context that is cancelled the moment the lease is lost. If the
// lease was lost while fn ran (taken over, force-released, not renewed in
// time), WithLock returns an error wrapping ErrNotHeld with the reason,
// since fn's work may not have been exclusive, and fn's own error too if
// it failed (often gRPC's Canceled, from its cut-off RPCs); else fn's
// error; else any error of the release. Costs: the grant, a renewal a
// third into the lease while fn runs, and the release (one RPC each).
func (l *Locker) WithLock(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error, opts ...AcquireOption) error {
	lease, err := l.Acquire(ctx, key, opts...)
	if err != nil {
		return err
	}
	kctx, stop := lease.KeepAlive(ctx)
	ferr := fn(kctx, lease)
	stop()
	lost := context.Cause(kctx)
	// fn has ended: the release is not the caller's to cut short.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rerr := lease.Release(rctx)
	if !errors.Is(lost, ErrNotHeld) && errors.Is(rerr, ErrNotHeld) {
		lost = rerr // gone by the release: lost while fn ran, unnoticed
	}
	switch {
	case ferr != nil:
		return explain(lost, ferr)
	case errors.Is(lost, ErrNotHeld):
		return lost
	case rerr != nil:
		return rerr
	}
	return nil
}

// Explain says why work under a lease failed. If err is not nil and ctx
// (a context KeepAlive returned, the one WithLock gives fn, or one derived
// from either) ended because its lease was lost, Explain returns an error
// that wraps both the loss (ErrNotHeld, with its reason) and err; else
// err. An RPC that a lost lease cut off fails with gRPC's bare Canceled
// status, which matches neither ErrNotHeld nor context.Canceled: Explain
// makes errors.Is(err, lock.ErrNotHeld) tell it from the caller's own
// cancellation. It sends no RPC.
func Explain(ctx context.Context, err error) error {
	return explain(context.Cause(ctx), err)
}

func explain(lost, err error) error {
	if err == nil || errors.Is(err, ErrNotHeld) || !errors.Is(lost, ErrNotHeld) {
		return err
	}
	return fmt.Errorf("%w; what ran under it failed: %w", lost, err)
}

// ReleaseAll deletes every lease document of this Locker's owner in its
// collection, each conditioned on the update time it was read with (a lease
// taken over in between is left alone), in bulk. It returns how many it
// deleted. Use it when an execution ends with leases it lost track of.
// Costs one query, and a delete and a fence read and delete per lease.
func (l *Locker) ReleaseAll(ctx context.Context) (int, error) {
	bctx, cancel := l.bounded(ctx)
	defer cancel()
	snaps, err := l.coll.Where(FieldOwner, "==", l.owner).Documents(bctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("lock: list leases of %s: %w", l.owner, l.unanswered(ctx, bctx, err))
	}
	return deleteLeases(ctx, l.client, snaps, nil)
}

// withContext makes an RPC error that ctx caused say so: errors.Is(err,
// context.DeadlineExceeded) holds whether the deadline struck before the RPC
// or inside it (where gRPC reports a status, not the context's error).
func withContext(ctx context.Context, err error) error {
	cause := ended(ctx)
	if err == nil || cause == nil {
		return err
	}
	if base := ctx.Err(); errors.Is(err, base) || base == nil && errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, ErrUnanswered) { // settled: say so too
		return fmt.Errorf("%w: %w", cause, err)
	}
	return fmt.Errorf("%w: %v", cause, err)
}

// ended is why ctx has ended, or nil: its cause once it is done, and
// context.DeadlineExceeded as soon as its deadline has passed by the clock,
// before its timer fires and sets its Err. gRPC answers DeadlineExceeded by
// the clock, and a loaded machine can run the caller on before the timer's
// goroutine: the caller's deadline must show in the error all the same.
func ended(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// isConflict: the commit lost to a concurrent change of a document (it
// exists, or is not as read). Retrying after a fresh read is the answer.
func isConflict(err error) bool {
	switch status.Code(err) {
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound, codes.Aborted:
		return true
	}
	return false
}

// isAmbiguous: the write may or may not have happened.
func isAmbiguous(err error) bool {
	if errors.Is(err, ErrUnanswered) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unknown, codes.Internal, codes.Canceled:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

type backoff struct{ base, limit time.Duration }

// next is "full jitter": uniform in [0, min(limit, base*2^attempt)).
func (b backoff) next(attempt int) time.Duration {
	ceil := b.limit
	if attempt < 30 {
		ceil = min(b.limit, b.base<<attempt)
	}
	return time.Duration(rand.Int64N(int64(ceil))) + time.Millisecond
}

// leaseDoc is the decoded lease of a snapshot. A document that is not a
// valid lease decodes to one that has ended, so garbage never blocks a key.
type leaseDoc struct {
	Owner        string    `firestore:"owner"`
	AcquiredAt   time.Time `firestore:"acquiredAt"`
	RenewedAt    time.Time `firestore:"renewedAt"`
	LeaseSeconds int64     `firestore:"leaseSeconds"`
	Holds        []string  `firestore:"holds"`
}

func decodeLease(s *firestore.DocumentSnapshot) leaseDoc {
	var d leaseDoc
	if s == nil || !s.Exists() || s.DataTo(&d) != nil {
		return leaseDoc{}
	}
	return d
}

func (d leaseDoc) end() time.Time {
	return d.RenewedAt.Add(time.Duration(d.LeaseSeconds) * time.Second)
}

// live: the lease is held at server time now (now < renewedAt + leaseSeconds).
func (d leaseDoc) live(now time.Time) bool {
	return d.Owner != "" && d.LeaseSeconds > 0 && now.Before(d.end())
}
