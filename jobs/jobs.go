package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "time/tzdata"
	"unicode/utf8" // schedules' zones resolve on any runtime image

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collection holds one document per event.
const Collection = "jobRuns"

// States and outcomes (CONTRACT §4).
const (
	StateRunning = "running"
	StateDone    = "done"
	// StateFailed: the last run failed and freed its lease (leaseSeconds
	// 0, no holders), so the next delivery takes the event over at once;
	// the document stays for its delivery records, and is swept with them
	// a week after, like a done run.
	StateFailed = "failed"

	Ran         Outcome = "ran"
	AlreadyDone Outcome = "already_done"
	InProgress  Outcome = "in_progress"
	Failed      Outcome = "failed"
)

// DefaultLease is how long a run holds its event without renewing; the
// keep-alive renews it every third of that while the job runs.
const DefaultLease = 60 * time.Second

// Outcome is what one delivery did.
type Outcome string

// ErrBadPayload: the message is not {"job": <known job>, "schedule"?:
// <5-field cron>, "timeZone"?: <IANA zone>}. Retrying cannot fix it, so the
// function acknowledges it (and writes nothing).
var ErrBadPayload = errors.New("jobs: bad payload")

// ErrInProgress: another delivery runs the event under a live lease and did
// not finish within this delivery's wait. Not acknowledged: Pub/Sub
// delivers again, and a later delivery finds it done or takes it over.
var ErrInProgress = errors.New("jobs: event in progress elsewhere")

var errDone = errors.New("jobs: event done")

// Bugs that negative-control tests plant (through export_test.go, never
// reachable otherwise) to prove that the tests' checks can go red.
var (
	plantNoKeepAlive   atomic.Bool // the body runs without its lease kept alive
	plantUnguardedMark atomic.Bool // the run is settled (marked done) without Guard
)

// Func is a job body. It gets a context that is cancelled if the run's
// lease is lost (and at the delivery's deadline), and the run: its lease, to
// fence its writes with, and what the event is.
type Func func(ctx context.Context, run *Run) error

// Run is one run of an event's job, built by the Runner for its body.
type Run struct {
	lease       *lock.Lease
	msg         Message
	key         string
	slot        time.Time
	until       time.Time
	executionID string
	fields      map[string]any         // the run document's fields beside the lease's
	ref         *firestore.DocumentRef // jobRuns/{key}
	record      *firestore.DocumentRef // this delivery's record
}

// Lease is the run's lease on its event (the jobRuns document): fence every
// write with it (Guard in a Firestore transaction, Token outside).
func (r *Run) Lease() *lock.Lease { return r.lease }

// Message is the run's parsed message.
func (r *Run) Message() Message { return r.msg }

// Key is the event key, the jobRuns document ID: the same for every
// delivery of the event, so a job that writes outside Firestore uses it to
// make its writes idempotent.
func (r *Run) Key() string { return r.key }

// Slot is the event's schedule slot; zero for a message without schedule.
func (r *Run) Slot() time.Time { return r.slot }

// Until is when a long-running job should stop: for a scheduled message
// the next tick of its schedule after its slot (NextSlot), when the next
// run starts; else the run's start plus the message's Seconds, if any;
// else zero: make one pass and return. Either way it is never later than
// the run's start plus MaxSeconds less RunReserve, so a run is never
// planned past the function's timeout. It may lie in the past for a late
// delivery (make one pass then), and never extends the context's
// deadline: stop at whichever comes first.
func (r *Run) Until() time.Time { return r.until }

// MarkDone adds to tx the event's done mark and this delivery's record
// (outcome ran), so that the effect the body writes in tx and the mark
// commit together or not at all: a redelivery after a lost answer finds
// the event done instead of applying the effect again. tx must have called
// Lease().Guard(tx) first, which fences the mark like the effect. Once tx
// commits the event is done: the Runner does not mark it again, and an
// error the body returns afterwards is not retried. A transaction retried
// after an earlier attempt committed unheard fails (the record exists).
func (r *Run) MarkDone(tx *firestore.Transaction) error {
	if err := tx.Update(r.ref, []firestore.Update{
		{Path: "state", Value: StateDone},
		{Path: "finishedAt", Value: firestore.ServerTimestamp},
	}); err != nil {
		return err
	}
	return tx.Create(r.record, delivery(r.msg.Job, Ran, nil))
}

// Runner delivers events to jobs. Safe for concurrent use.
type Runner struct {
	client   *firestore.Client
	jobs     map[string]Func
	lease    time.Duration
	wait     time.Duration
	lockOpts []lock.Option
	// locker is made once (one commit client per Runner) and derived per
	// delivery with the delivery's execution ID as owner.
	locker  *lock.Locker
	lockErr error
	metrics *jobMetrics
}

// Option configures a Runner.
type Option func(*Runner)

// WithLease sets how long a run holds its event without renewing (default
// DefaultLease); a crashed run blocks its event at most this long.
func WithLease(d time.Duration) Option { return func(r *Runner) { r.lease = d } }

// WithWait sets how long a delivery that meets a live run waits for it to
// finish or for its lease to end before answering ErrInProgress (default:
// the lease plus 10s, so a crashed run is taken over by the next delivery).
func WithWait(d time.Duration) Option { return func(r *Runner) { r.wait = d } }

// WithLockOptions passes options to the Runner's Locker (e.g.
// lock.WithClientOptions). Each delivery takes its event as an owner of its
// own, the delivery's execution ID, whatever WithOwner says.
func WithLockOptions(opts ...lock.Option) Option {
	return func(r *Runner) { r.lockOpts = opts }
}

// New returns a Runner for the given jobs.
func New(client *firestore.Client, jobs map[string]Func, opts ...Option) *Runner {
	r := &Runner{client: client, jobs: jobs, lease: DefaultLease}
	for _, o := range opts {
		o(r)
	}
	if r.wait == 0 {
		r.wait = r.lease + 10*time.Second
	}
	if r.metrics == nil {
		r.metrics = newJobMetrics(nil)
	}
	r.locker, r.lockErr = lock.New(client, Collection, append([]lock.Option{lock.WithLeaseDuration(r.lease), lock.WithMeterProvider(r.metrics.mp)}, r.lockOpts...)...)
	return r
}

// Sweep ages: lease documents of locks are swept a day after their lease
// ended; job runs are kept a week, beyond Pub/Sub's longest redelivery, so a
// late duplicate still finds its event done.
var Sweep = []struct {
	Collection     string
	After          time.Duration
	Subcollections []string
}{
	{"locks", 24 * time.Hour, nil},
	{"seatLocks", 24 * time.Hour, nil},
	{"mutex_critical_data", 24 * time.Hour, nil},
	{Collection, 7 * 24 * time.Hour, []string{"deliveries"}},
}

// Standard is the job table of CONTRACT §4.
func Standard(client *firestore.Client) map[string]Func {
	return map[string]Func{
		// Both write conditionally already: a rollup on the counter's update
		// time, a sweep on each lease's; a stale run can only lose a race.
		// Both are idempotent, so a rerun after a lost done mark is harmless.
		"rollupCounters": func(ctx context.Context, _ *Run) error {
			_, err := counter.RollupAll(ctx, client)
			return err
		},
		"sweepExpired": func(ctx context.Context, _ *Run) error {
			var errs []error
			// Ended holds turn expired and leave the seat map (their seats
			// were free from the moment they ended).
			if _, err := booking.New(client).ExpireHolds(ctx); err != nil {
				errs = append(errs, err)
			}
			for _, s := range Sweep {
				if _, err := lock.SweepEnded(ctx, client, s.Collection, s.After, s.Subcollections...); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
}

// EventKey is the document ID of an event: a hash of its CloudEvent source
// and id, since Pub/Sub message ids are unique per topic only.
func EventKey(source, id string) string {
	h := sha256.Sum256([]byte(source + "\n" + id))
	return hex.EncodeToString(h[:16])
}

// SlotKey is the document ID of a scheduled event: {job}@{slot}, the slot
// in RFC 3339 UTC, e.g. rollupCounters@2026-11-22T10:00:00Z.
func SlotKey(job string, slot time.Time) string {
	return job + "@" + slot.UTC().Format(time.RFC3339)
}

// Event is one delivery of a scheduled-job message.
type Event struct {
	Source string // CloudEvent source, e.g. //pubsub.googleapis.com/projects/p/topics/scheduled-jobs
	ID     string // CloudEvent id: the Pub/Sub message id
	// PublishTime is the message's publish time (Pub/Sub's clock): it
	// places a scheduled message in its slot.
	PublishTime time.Time
	Data        []byte // the message data: Message as JSON
}

// Message is the data of a scheduled-job message (CONTRACT §4, §7).
type Message struct {
	Job      string `json:"job"`
	Schedule string `json:"schedule,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// Seconds is how long a run without schedule keeps at it (Run.Until):
	// 0, or 1 to MaxSeconds.
	Seconds int `json:"seconds,omitempty"`
}

// MaxSeconds bounds Message.Seconds: a delivery's deadline is
// RunScheduledJob's timeout, 540 s, and a run cannot outlast it.
const MaxSeconds = 540

// RunReserve is the part of the function's timeout that a run keeps after
// its Until: for the job's own wind-down (admitQueue hands its sales over
// for 15 s more) and for marking the run done. Until is never later than
// the run's start plus MaxSeconds less RunReserve.
const RunReserve = 45 * time.Second

// Parse parses and checks the message data (ErrBadPayload).
func (r *Runner) Parse(data []byte) (Message, error) {
	var m Message
	if err := exactKeys(data); err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrBadPayload, err)
	}
	if _, ok := r.jobs[m.Job]; !ok {
		known := make([]string, 0, len(r.jobs))
		for k := range r.jobs {
			known = append(known, k)
		}
		slices.Sort(known)
		return m, fmt.Errorf("%w: unknown job %q (known: %s)", ErrBadPayload, m.Job, strings.Join(known, ", "))
	}
	if m.Schedule == "" && m.TimeZone != "" {
		return m, fmt.Errorf("%w: timeZone without schedule", ErrBadPayload)
	}
	if m.Seconds < 0 || m.Seconds > MaxSeconds {
		return m, fmt.Errorf("%w: seconds %d: want 1 to %d (a delivery's deadline), or none", ErrBadPayload, m.Seconds, MaxSeconds)
	}
	return m, nil
}

// messageKeys are Message's JSON names: a message's keys must be these,
// exactly (encoding/json also takes "Job" or "ſchedule") and once each.
var messageKeys = map[string]bool{"job": true, "schedule": true, "timeZone": true, "seconds": true}

// exactKeys refuses data that is not UTF-8, and an object whose keys are not
// messageKeys exactly, once each. Anything else is left to the decoder.
func exactKeys(data []byte) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: the message is not valid UTF-8", ErrBadPayload)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		switch {
		case !messageKeys[key]:
			return fmt.Errorf("%w: unknown field %q (names match exactly, case included)", ErrBadPayload, key)
		case seen[key]:
			return fmt.Errorf("%w: field %q appears more than once", ErrBadPayload, key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
	}
	return nil
}

// runOf is delivery executionID's run of ev's event, without its lease.
func (r *Runner) runOf(ev Event, executionID string) (*Run, error) {
	if ev.Source == "" || ev.ID == "" {
		return nil, fmt.Errorf("%w: event without source or id", ErrBadPayload)
	}
	m, err := r.Parse(ev.Data)
	if err != nil {
		return nil, err
	}
	run := &Run{msg: m, key: EventKey(ev.Source, ev.ID), executionID: executionID,
		fields: map[string]any{"state": StateRunning, "job": m.Job, "eventId": ev.ID}}
	if m.Schedule != "" {
		if run.slot, err = Slot(m.Schedule, m.TimeZone, ev.PublishTime); err != nil {
			return nil, err
		}
		if run.until, err = NextSlot(m.Schedule, m.TimeZone, run.slot); err != nil {
			return nil, err
		}
		run.key = SlotKey(m.Job, run.slot)
		run.fields["slot"] = run.slot
	}
	run.ref = r.client.Collection(Collection).Doc(run.key)
	run.record = run.ref.Collection("deliveries").Doc(executionID)
	return run, nil
}

// start gives the run its lease; a run without schedule starts its Seconds
// now. No run is planned past the function's timeout, whatever its
// schedule's next tick (an hourly schedule, or a delivery that came late).
func (r *Run) start(lease *lock.Lease) {
	r.lease = lease
	now := time.Now()
	if r.slot.IsZero() && r.msg.Seconds > 0 {
		r.until = now.Add(time.Duration(r.msg.Seconds) * time.Second)
	}
	if limit := now.Add(MaxSeconds*time.Second - RunReserve); r.until.After(limit) {
		r.until = limit
	}
}

// failedIn adds to tx this delivery's record, failed with cause, for a
// delivery that holds no lease (its take failed, or its lease was lost).
// If the run's document, as read in tx, is missing, it creates it as a
// failed run whose lease has ended: no record is left without a parent
// that the sweep finds, and the next delivery takes the event over at once.
func (r *Run) failedIn(tx *firestore.Transaction, doc *firestore.DocumentSnapshot, cause error) error {
	if !doc.Exists() {
		ended := maps.Clone(r.fields)
		maps.Copy(ended, map[string]any{
			"state": StateFailed, "finishedAt": firestore.ServerTimestamp,
			lock.FieldOwner: r.executionID, lock.FieldAcquiredAt: firestore.ServerTimestamp,
			lock.FieldRenewedAt: firestore.ServerTimestamp, lock.FieldLeaseSeconds: 0, lock.FieldHolds: []string{},
		})
		if err := tx.Create(r.ref, ended); err != nil {
			return err
		}
	}
	return tx.Create(r.record, delivery(r.msg.Job, Failed, cause))
}

// Deliver handles one delivery as execution executionID. A nil error means
// acknowledge: the event ran here, is done, or (with ErrBadPayload, nothing
// written) can never succeed. Any other error means Pub/Sub should deliver
// again: the run failed or could not be marked done (its lease is freed
// where that is safe, else it ends by itself), or it is in progress
// elsewhere (ErrInProgress).
func (r *Runner) Deliver(ctx context.Context, executionID string, ev Event) (o Outcome, err error) {
	defer func() { r.delivered(ctx, ev, o, err) }()
	run, err := r.runOf(ev, executionID)
	if err != nil {
		return "", err
	}
	job, ref := run.msg.Job, run.ref
	if r.lockErr != nil {
		return "", r.lockErr
	}
	locker, err := r.locker.ForOwner(executionID)
	if err != nil {
		return "", err
	}
	lease, err := r.take(ctx, locker, ref, lock.WithFields(run.fields), lock.WithCheck(func(s *firestore.DocumentSnapshot) error {
		if s.Data()["state"] == StateDone {
			return errDone
		}
		return nil
	}))
	switch {
	case errors.Is(err, errDone):
		return AlreadyDone, r.record(ctx, ref, executionID, job, AlreadyDone, nil)
	case errors.Is(err, lock.ErrHeld):
		err = fmt.Errorf("%w: %v", ErrInProgress, err)
		return InProgress, errors.Join(err, r.record(ctx, ref, executionID, job, InProgress, nil))
	case err != nil:
		return Failed, errors.Join(err, r.recordFailed(ctx, run, err))
	}

	run.start(lease)
	kctx, stop := ctx, func() {}
	if !plantNoKeepAlive.Load() {
		kctx, stop = lease.KeepAlive(ctx)
	}
	runErr := r.jobs[job](kctx, run)
	lost := context.Cause(kctx)
	stop()
	if errors.Is(lost, lock.ErrNotHeld) {
		runErr = errors.Join(runErr, fmt.Errorf("jobs: the run's lease was lost while it ran: %w", lost))
	}
	return r.finish(ctx, run, runErr)
}

// take acquires the event's lease; while another delivery holds it live,
// it waits (woken by a snapshot listener on the run, or when the holder's
// lease would end) within r.wait and ctx, then answers ErrHeld.
func (r *Runner) take(ctx context.Context, locker *lock.Locker, run *firestore.DocumentRef, opts ...lock.AcquireOption) (*lock.Lease, error) {
	wctx, cancel := context.WithTimeout(ctx, r.wait)
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
					if _, err := it.Next(); err != nil {
						return
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

// settle bounds the calls a delivery makes after its context ended (read
// back, record): past one lease they matter no more, since the lease ends
// by itself.
func (r *Runner) settle() time.Duration { return min(10*time.Second, r.lease) }

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
func (r *Runner) finish(ctx context.Context, run *Run, runErr error) (Outcome, error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), run.lease.Duration())
	defer cancel()
	// An answer lost on a connection that stays open would hold an attempt
	// to the end: each gets a fifth of the lease (at least a second).
	perAttempt := max(run.lease.Duration()/5, time.Second)
	for attempt := 0; ; attempt++ {
		actx, cancelAttempt := context.WithTimeout(fctx, perAttempt)
		o, result, err := r.finishOnce(actx, run, runErr)
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
func (r *Runner) finishOnce(ctx context.Context, run *Run, runErr error) (o Outcome, result, err error) {
	job := run.msg.Job
	err = r.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		o, result = "", nil
		snaps, err := tx.GetAll([]*firestore.DocumentRef{run.ref, run.record})
		if err != nil {
			return err
		}
		if rec := snaps[1]; rec.Exists() { // our own commit landed unheard
			o = Outcome(fmt.Sprint(rec.Data()["outcome"]))
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
			return tx.Create(run.record, delivery(job, o, nil))
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
			return tx.Create(run.record, delivery(job, o, result))
		}
	})
	return o, result, err
}

func delivery(job string, o Outcome, err error) map[string]any {
	d := map[string]any{"outcome": string(o), "job": job, "at": firestore.ServerTimestamp}
	if err != nil {
		d["error"] = err.Error()
	}
	return d
}

// recordFailed records a delivery that failed before it held the lease
// (see failedIn), also after ctx ended.
func (r *Runner) recordFailed(ctx context.Context, run *Run, cause error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.settle())
	defer cancel()
	err := r.client.RunTransaction(cctx, func(ctx context.Context, tx *firestore.Transaction) error {
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
func (r *Runner) record(ctx context.Context, ref *firestore.DocumentRef, executionID, job string, o Outcome, runErr error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.settle())
	defer cancel()
	if _, err := ref.Collection("deliveries").Doc(executionID).Create(cctx, delivery(job, o, runErr)); err != nil {
		return fmt.Errorf("jobs: record delivery %s: %w", executionID, err)
	}
	return nil
}
