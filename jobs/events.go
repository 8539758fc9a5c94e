package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Events runs events exactly once each, on per-event leases: one run
// document per event key in a collection of its own (a lease document of
// package lock plus state "running" | "done" | "failed" and the run's name
// in the label field), and one record per delivery in its subcollection
// deliveries: the package doc shows both. The scheduled jobs' Runner is
// built on it, and so is any other at-least-once delivery that must take
// effect once, such as a payment provider's webhook events. What "exactly
// once" covers, and how a body fences its writes, is in the package doc.
// Safe for concurrent use.
type Events struct {
	client     *firestore.Client
	collection string
	label      string // the field of the run documents and records that names a run
	lease      time.Duration
	wait       time.Duration
	// locker is made once (one commit client per Events) and derived per
	// delivery with the delivery's execution ID as owner.
	locker  *lock.Locker
	lockErr error
}

// NewEvents returns the Events of collection. label names the field that
// carries each run's name in its documents (a Runner's: "job"). No RPC.
func NewEvents(client *firestore.Client, collection, label string, opts ...Option) *Events {
	return newEvents(client, collection, label, newConfig(opts))
}

func newEvents(client *firestore.Client, collection, label string, c config) *Events {
	e := &Events{client: client, collection: collection, label: label, lease: c.lease, wait: c.wait}
	e.locker, e.lockErr = lock.New(client, collection, append([]lock.Option{lock.WithLeaseDuration(c.lease), lock.WithMeterProvider(c.mp)}, c.lockOpts...)...)
	return e
}

// DoOption configures one Events.Do. Options send no RPC.
type DoOption func(*doOptions)

type doOptions struct {
	executionID string
	name        string
	fields      map[string]any
}

// WithExecutionID names the delivery (default: a fresh lock.NewExecutionID):
// it owns the event's lease while it runs, and its record is
// deliveries/{executionID}. Give the one your function logs with.
func WithExecutionID(id string) DoOption { return func(o *doOptions) { o.executionID = id } }

// WithName is what the run's document and this delivery's record call the
// run, in the Events' label field (a job, an event type). Default: none.
func WithName(name string) DoOption { return func(o *doOptions) { o.name = name } }

// WithRunFields adds fields to the run's document when its lease is
// granted (besides the lease's and state, which they cannot replace).
func WithRunFields(fields map[string]any) DoOption { return func(o *doOptions) { o.fields = fields } }

// Do runs body once for the event key (a document ID: a webhook event's
// id, say), under the event's lease, kept alive while body runs. A nil
// error means acknowledge: the event ran here (Ran), or was done before
// (AlreadyDone: body did not run). ErrInProgress means another delivery
// runs it under a live lease that did not end within the wait; any other
// error means the run failed (its lease freed where that is safe):
// deliver again. Costs, on a first delivery: the grant (one commit, or a
// read and a commit for a run that failed before) and the settling
// transaction (two reads, one commit), besides the keep-alive's renewals
// (one commit a third into the lease) and body's own RPCs; a duplicate of
// a done event costs a read and a write (its record).
func (e *Events) Do(ctx context.Context, key string, body Func, opts ...DoOption) (Outcome, error) {
	var o doOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.executionID == "" {
		id, err := lock.NewExecutionID()
		if err != nil {
			return "", err
		}
		o.executionID = id
	}
	if err := lock.ValidateKey(key); err != nil {
		return "", fmt.Errorf("jobs: event key: %w", err)
	}
	run := &Run{name: o.name, label: e.label, key: key, executionID: o.executionID,
		fields: map[string]any{"state": StateRunning}}
	if o.name != "" {
		run.fields[e.label] = o.name
	}
	maps.Copy(run.fields, o.fields)
	run.fields["state"] = StateRunning
	e.place(run, o.executionID)
	return e.run(ctx, run, body)
}

// place gives the run its documents: the event's, and this delivery's record.
func (e *Events) place(run *Run, executionID string) {
	run.ref = e.client.Collection(e.collection).Doc(run.key)
	run.record = run.ref.Collection(Deliveries).Doc(executionID)
}

// run takes the run's event and runs body under its lease, kept alive,
// then settles it (finish).
func (e *Events) run(ctx context.Context, run *Run, body Func) (Outcome, error) {
	if e.lockErr != nil {
		return "", e.lockErr
	}
	locker, err := e.locker.ForOwner(run.executionID)
	if err != nil {
		return "", err
	}
	lease, err := e.take(ctx, locker, run.ref, lock.WithFields(run.fields), lock.WithCheck(func(s *firestore.DocumentSnapshot) error {
		if s.Data()["state"] == StateDone {
			return errDone
		}
		return nil
	}))
	switch {
	case errors.Is(err, errDone):
		return AlreadyDone, e.record(ctx, run, AlreadyDone, nil)
	case errors.Is(err, lock.ErrHeld):
		err = fmt.Errorf("%w: %v", ErrInProgress, err)
		return InProgress, errors.Join(err, e.record(ctx, run, InProgress, nil))
	case err != nil:
		return Failed, errors.Join(err, e.recordFailed(ctx, run, err))
	}

	run.start(lease)
	kctx, stop := ctx, func() {}
	if !plantNoKeepAlive.Load() {
		kctx, stop = lease.KeepAlive(ctx)
	}
	runErr := body(kctx, run)
	lost := context.Cause(kctx)
	stop()
	if errors.Is(lost, lock.ErrNotHeld) {
		runErr = errors.Join(runErr, fmt.Errorf("jobs: the run's lease was lost while it ran: %w", lost))
	}
	if runErr == nil && run.committed {
		return Ran, nil // the done mark and this delivery's record are in Firestore
	}
	return e.finish(ctx, run, runErr)
}

// take acquires the event's lease; while another delivery holds it live,
// it waits (woken by a snapshot listener on the run, or when the holder's
// lease would end) within e.wait and ctx, then answers ErrHeld.
//
// The listener wakes it only when the run stops being a live run held by
// another (done, failed, released, gone): trying again while the holder is
// live would run a transaction that reads the run as the holder's body
// commits its done mark to it, and the two would wait on each other's
// locks (about 2 s on the emulator), for an answer known in advance.
func (e *Events) take(ctx context.Context, locker *lock.Locker, run *firestore.DocumentRef, opts ...lock.AcquireOption) (*lock.Lease, error) {
	wctx, cancel := context.WithTimeout(ctx, e.wait)
	var listener sync.WaitGroup
	defer listener.Wait()
	defer cancel()
	changed := make(chan struct{}, 1)
	listening := false
	for {
		lease, err := locker.TryAcquire(ctx, run.ID, opts...)
		if !errors.Is(err, lock.ErrHeld) {
			return lease, err
		}
		if !listening {
			listening = true
			listener.Go(func() {
				it := run.Snapshots(wctx)
				defer it.Stop()
				for {
					snap, err := it.Next()
					if err != nil {
						return
					}
					if heldLive(snap) {
						continue
					}
					select {
					case changed <- struct{}{}:
					default:
					}
				}
			})
		}
		wait := 250 * time.Millisecond // churn without a named holder
		var held *lock.HeldError
		if errors.As(err, &held) {
			wait = held.Holders[0].Remaining + 50*time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, err
		case <-changed:
			t.Stop()
		case <-t.C:
		}
	}
}

// heldLive reports whether a run's snapshot shows it running under a
// holder's lease. Whether that lease has ended by Firestore's clock is not
// in the snapshot: take's timer covers that (the holder's remaining time).
func heldLive(snap *firestore.DocumentSnapshot) bool {
	if !snap.Exists() || snap.Data()["state"] != StateRunning {
		return false
	}
	holds, _ := snap.Data()[lock.FieldHolds].([]any)
	return len(holds) > 0
}

// settle bounds the calls a delivery makes after its context ended (read
// back, record): past one lease they matter no more, since the lease ends
// by itself.
func (e *Events) settle() time.Duration { return min(10*time.Second, e.lease) }

// finish settles a run that its body ended (with runErr), in one
// transaction guarded by its lease: the event done and this delivery
// recorded ran, or, after a failure, the run kept as failed with its lease
// ended and released, and the delivery recorded failed. The transaction
// first reads what an earlier commit left (the body's MarkDone, or an
// attempt here whose answer was lost) and never marks twice. It is retried
// while the lease may last, past ctx's end too: the lease ends within its
// length of the last renewal, and Guard refuses a commit once it is about
// to. A run whose lease was lost is recorded failed and left to whoever
// took it over.
func (e *Events) finish(ctx context.Context, run *Run, runErr error) (Outcome, error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), run.lease.Duration())
	defer cancel()
	// An answer lost on a connection that stays open would hold an attempt
	// to the end: each gets a fifth of the lease (at least a second).
	perAttempt := max(run.lease.Duration()/5, time.Second)
	for attempt := 0; ; attempt++ {
		actx, cancelAttempt := context.WithTimeout(fctx, perAttempt)
		o, result, err := e.finishOnce(actx, run, runErr)
		cancelAttempt()
		if err == nil {
			return o, result
		}
		wait := min(50*time.Millisecond<<min(attempt, 5), time.Second)
		t := time.NewTimer(wait)
		select {
		case <-fctx.Done():
			t.Stop()
			// Firestore was out of reach for as long as the lease lasts: it
			// ends by itself, and a redelivery takes the event over or finds
			// it done (if the body's MarkDone landed).
			if runErr == nil {
				return Failed, fmt.Errorf("jobs: %s ran but could not be marked done while its lease lasted: %w", run.msg.Job, err)
			}
			return Failed, fmt.Errorf("%w (and the failure could not be recorded while the lease lasted: %w)", runErr, err)
		case <-t.C:
		}
	}
}

// finishOnce is one attempt of finish. It returns the delivery's outcome
// and error (nil: acknowledge), or err if the transaction did not commit.
func (e *Events) finishOnce(ctx context.Context, run *Run, runErr error) (o Outcome, result, err error) {
	job := run.name
	err = e.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		o, result = "", nil
		snaps, err := tx.GetAll([]*firestore.DocumentRef{run.ref, run.record})
		if err != nil {
			return err
		}
		if rec := snaps[1]; rec.Exists() { // our own commit landed unheard
			o = Outcome(fmt.Sprint(rec.Data()["outcome"]))
			if r, ok := rec.Data()["result"].(string); ok && runErr != nil {
				run.landed = r
			}
			if o == Failed {
				result = runErr
				if result == nil {
					result = fmt.Errorf("jobs: %s: %v", job, rec.Data()["error"])
				}
			}
			return nil
		}
		if s := snaps[0]; s.Exists() && s.Data()["state"] == StateDone {
			// Another delivery finished the event after it took it over.
			o = AlreadyDone
			return tx.Create(run.record, run.delivery(o, nil))
		}
		var gerr error
		if !plantUnguardedMark.Load() {
			gerr = run.lease.Guard(tx)
		}
		switch {
		case gerr != nil && !errors.Is(gerr, lock.ErrNotHeld):
			return gerr
		case gerr != nil:
			o, result = Failed, runErr
			if result == nil {
				result = fmt.Errorf("jobs: %s ran but lost its lease before it was marked done: %w", job, gerr)
			}
			return run.failedIn(tx, snaps[0], result)
		case runErr == nil:
			o = Ran
			return run.MarkDone(tx)
		default:
			// Keep the run for its records, its lease ended and released:
			// the next delivery takes the event over at once.
			o, result = Failed, runErr
			if err := tx.Update(run.ref, []firestore.Update{
				{Path: "state", Value: StateFailed},
				{Path: "finishedAt", Value: firestore.ServerTimestamp},
				{Path: lock.FieldLeaseSeconds, Value: 0},
				{Path: lock.FieldHolds, Value: []string{}},
			}); err != nil {
				return err
			}
			return tx.Create(run.record, run.delivery(o, result))
		}
	})
	return o, result, err
}

// delivery is the record of one delivery of the run's event.
func (r *Run) delivery(o Outcome, err error) map[string]any {
	d := map[string]any{"outcome": string(o), "at": firestore.ServerTimestamp}
	if r.name != "" {
		d[r.label] = r.name
	}
	if err != nil {
		d["error"] = err.Error()
	}
	return d
}

// recordFailed records a delivery that failed before it held the lease
// (see failedIn), also after ctx ended.
func (e *Events) recordFailed(ctx context.Context, run *Run, cause error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.settle())
	defer cancel()
	err := e.client.RunTransaction(cctx, func(ctx context.Context, tx *firestore.Transaction) error {
		doc, err := tx.Get(run.ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		return run.failedIn(tx, doc, cause)
	})
	if err != nil {
		return fmt.Errorf("jobs: record delivery %s: %w", run.executionID, err)
	}
	return nil
}

// record writes this delivery's record, also after ctx ended (a delivery
// that ran out of time still says so).
func (e *Events) record(ctx context.Context, run *Run, o Outcome, runErr error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.settle())
	defer cancel()
	if _, err := run.record.Create(cctx, run.delivery(o, runErr)); err != nil {
		return fmt.Errorf("jobs: record delivery %s: %w", run.executionID, err)
	}
	return nil
}
