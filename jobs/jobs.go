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
	"sync/atomic"
	"time"
	_ "time/tzdata"
	"unicode/utf8" // schedules' zones resolve on any runtime image

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
	"go.opentelemetry.io/otel/metric"
)

// Collection is where a Runner keeps one run document per event, unless
// WithCollection says otherwise.
const Collection = "jobRuns"

// The states of a run document and the outcomes of a delivery (the
// package doc shows the documents).
const (
	// StateRunning: a delivery holds the event's lease and runs its body.
	StateRunning = "running"
	// StateDone: the event ran to completion; duplicates acknowledge
	// already_done without running.
	StateDone = "done"
	// StateFailed: the last run failed and freed its lease (leaseSeconds
	// 0, no holders), so the next delivery takes the event over at once;
	// the document stays for its delivery records, and is swept with them
	// a week after, like a done run.
	StateFailed = "failed"

	// Ran: this delivery ran the body to completion and marked it done.
	Ran Outcome = "ran"
	// AlreadyDone: the event was done before; the body did not run.
	AlreadyDone Outcome = "already_done"
	// InProgress: another delivery runs the event (ErrInProgress).
	InProgress Outcome = "in_progress"
	// Failed: the run failed, or could not take or mark the event.
	Failed Outcome = "failed"
)

// DefaultLease is how long a run holds its event without renewing; the
// keep-alive renews it every third of that while the job runs.
const DefaultLease = 60 * time.Second

// Outcome is what one delivery did, as its record says.
type Outcome string

// ErrBadPayload: the message is not {"job": <known job>, "schedule"?:
// <5-field cron>, "timeZone"?: <IANA zone>, "seconds"?: <1 to MaxSeconds>},
// or the event is not a Pub/Sub message. Retrying cannot fix it, so the
// function acknowledges it (Acknowledge); nothing is written.
var ErrBadPayload = errors.New("jobs: bad payload")

// Acknowledge reports whether a delivery that ended with err (from Deliver
// or Events.Do) should be acknowledged: err is nil (the event ran, or was
// done already) or wraps ErrBadPayload (no delivery can succeed). Return
// nil from the function then, and err otherwise so that Pub/Sub delivers
// again.
func Acknowledge(err error) bool { return err == nil || errors.Is(err, ErrBadPayload) }

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
// fence its writes with, and what the event is. Its error fails the run,
// and Pub/Sub delivers again.
type Func func(ctx context.Context, run *Run) error

// Run is one run of an event, built by the Runner (or by Events.Do) for
// its body. Its accessors send no RPC.
type Run struct {
	lease       *lock.Lease
	msg         Message // a scheduled job's message; zero for Events.Do
	name        string  // what the records call the run: the job, or the event type
	label       string  // the field that carries name: "job" in jobRuns
	key         string
	slot        time.Time
	until       time.Time
	executionID string
	fields      map[string]any         // the run document's fields beside the lease's
	ref         *firestore.DocumentRef // jobRuns/{key}
	record      *firestore.DocumentRef // this delivery's record
	landed      string                 // the result a done mark of this delivery recorded, found after the fact
	committed   bool                   // the body said its done mark committed (Committed)
}

// Lease is the run's lease on its event (the run document): fence every
// write with it (Guard in a Firestore transaction, Token outside). No RPC.
func (r *Run) Lease() *lock.Lease { return r.lease }

// Message is the run's parsed message; zero for Events.Do. No RPC.
func (r *Run) Message() Message { return r.msg }

// Key is the event key, the run document's ID: the same for every
// delivery of the event, so a job that writes outside Firestore uses it to
// make its writes idempotent. No RPC.
func (r *Run) Key() string { return r.key }

// Slot is the event's schedule slot; zero for a message without schedule.
// No RPC.
func (r *Run) Slot() time.Time { return r.slot }

// Until is when a long-running job should stop: for a scheduled message
// the next tick of its schedule after its slot (NextSlot), when the next
// run starts; else the run's start plus the message's Seconds, if any;
// else zero: make one pass and return. Either way it is never later than
// the run's start plus MaxSeconds less RunReserve, so a run is never
// planned past the function's timeout. It may lie in the past for a late
// delivery (make one pass then), and never extends the context's
// deadline: stop at whichever comes first. No RPC.
func (r *Run) Until() time.Time { return r.until }

// MarkDone adds to tx the event's done mark and this delivery's record
// (outcome ran), so that the effect the body writes in tx and the mark
// commit together or not at all: a redelivery after a lost answer finds
// the event done instead of applying the effect again. tx must have called
// Lease().Guard(tx) first, which fences the mark like the effect. Once tx
// commits the event is done: the Runner does not mark it again, and an
// error the body returns afterwards is not retried. A transaction retried
// after an earlier attempt committed unheard fails (the record exists). It
// adds two writes to tx, and no RPC of its own.
func (r *Run) MarkDone(tx *firestore.Transaction) error { return r.MarkDoneWith(tx, "") }

// MarkDoneWith is MarkDone that also records result, the body's own word
// for what it did ("paid", "refunded"), on this delivery's record. When
// the body's commit lands but its answer is lost, the body returns an
// error while the event is done; the delivery then acknowledges, and
// Landed gives the result back so the caller can say what was done. No RPC
// of its own.
func (r *Run) MarkDoneWith(tx *firestore.Transaction, result string) error {
	if err := tx.Update(r.ref, []firestore.Update{
		{Path: "state", Value: StateDone},
		{Path: "finishedAt", Value: firestore.ServerTimestamp},
	}); err != nil {
		return err
	}
	d := r.delivery(Ran, nil)
	if result != "" {
		d["result"] = result
	}
	return tx.Create(r.record, d)
}

// Committed tells the run that the transaction carrying its done mark
// (MarkDone, in a transaction guarded by Lease) has committed: its
// RunTransaction returned nil. The event is then done and this delivery
// recorded, so settling the run needs no transaction of its own (a delivery
// saves its begin, its read and its commit). Call it only then; without it
// the run is settled as before, by a transaction that reads what the body
// left. No RPC.
func (r *Run) Committed() { r.committed = true }

// Landed is the result this delivery's done mark recorded (MarkDoneWith)
// if the body's commit landed while the body saw an error, and "" if it
// did not (the body then knows its result itself). Read it after the
// delivery returned. No RPC.
func (r *Run) Landed() string { return r.landed }

// Runner delivers scheduled-job events to jobs: each event runs once, on
// the per-event leases of Events in its collection (jobRuns unless
// WithCollection says otherwise), its run documents naming the job in the
// field job. Safe for concurrent use.
type Runner struct {
	events  *Events
	jobs    map[string]Func
	metrics *jobMetrics
}

// config is what the options set, for a Runner or an Events.
type config struct {
	collection string // a Runner's; "" is Collection
	lease      time.Duration
	wait       time.Duration
	lockOpts   []lock.Option
	mp         metric.MeterProvider // nil: the global provider
}

// Option configures a Runner (New) or an Events (NewEvents). Options send
// no RPC.
type Option func(*config)

// WithCollection keeps a Runner's run documents in the collection at path
// (default Collection, "jobRuns"). NewEvents takes its collection as an
// argument instead, and ignores this option.
func WithCollection(path string) Option { return func(c *config) { c.collection = path } }

// WithLease sets how long a run holds its event without renewing (default
// DefaultLease); a crashed run blocks its event at most this long. The
// keep-alive renews it a third in: one write each.
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithWait sets how long a delivery that meets a live run waits for it to
// finish or for its lease to end before answering ErrInProgress (default:
// the lease plus 10s, so a crashed run is taken over by the next delivery).
func WithWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// WithLockOptions passes options to the Locker of the event leases (e.g.
// lock.WithClientOptions). Each delivery takes its event as an owner of its
// own, the delivery's execution ID, whatever WithOwner says.
func WithLockOptions(opts ...lock.Option) Option {
	return func(c *config) { c.lockOpts = opts }
}

func newConfig(opts []Option) config {
	c := config{lease: DefaultLease}
	for _, o := range opts {
		o(&c)
	}
	if c.wait == 0 {
		c.wait = c.lease + 10*time.Second
	}
	return c
}

// New returns a Runner for jobs, a table from job name to body: a message
// naming another job is a bad payload. No RPC.
func New(client *firestore.Client, jobs map[string]Func, opts ...Option) *Runner {
	c := newConfig(opts)
	coll := c.collection
	if coll == "" {
		coll = Collection
	}
	return &Runner{events: newEvents(client, coll, "job", c), jobs: jobs, metrics: newJobMetrics(c.mp)}
}

// RunsKept is how long a run document (done or failed) and its delivery
// records outlive the run's lease before Sweep may delete them: a week,
// beyond Pub/Sub's longest redelivery, so a late duplicate still finds its
// event done.
const RunsKept = 7 * 24 * time.Hour

// Deliveries is the subcollection of a run document that holds one record
// per delivery.
const Deliveries = "deliveries"

// Swept names lease documents for Sweep: those of Collection whose lease
// ended at least After ago, with their Subcollections.
type Swept struct {
	Collection     string
	After          time.Duration
	Subcollections []string
}

// Runs is the Swept of the run documents in collection (a Runner's, by
// default Collection, or an Events'): RunsKept after their lease ended,
// their delivery records first.
func Runs(collection string) Swept {
	return Swept{Collection: collection, After: RunsKept, Subcollections: []string{Deliveries}}
}

// Sweep returns a job body that deletes the lease documents each Swept
// names once their lease ended at least its After ago, by Firestore's
// clock, never a live one (lock.SweepEnded for each: one query per 300
// documents, then a delete each, conditioned on the update time read). It
// is idempotent, so a rerun after a lost done mark is harmless. Which
// collections to sweep is the application's to say: its lock collections,
// say a day after, and Runs(Collection) for the runs.
func Sweep(client *firestore.Client, swept ...Swept) Func {
	return func(ctx context.Context, _ *Run) error {
		var errs []error
		for _, s := range swept {
			if _, err := lock.SweepEnded(ctx, client, s.Collection, s.After, s.Subcollections...); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// EventKey is the document ID of an event: a hash of its CloudEvent source
// and id, since Pub/Sub message ids are unique per topic only. No RPC.
func EventKey(source, id string) string {
	h := sha256.Sum256([]byte(source + "\n" + id))
	return hex.EncodeToString(h[:16])
}

// SlotKey is the document ID of a scheduled event: {job}@{slot}, the slot
// in RFC 3339 UTC, e.g. rollupCounters@2026-11-22T10:00:00Z. No RPC.
func SlotKey(job string, slot time.Time) string {
	return job + "@" + slot.UTC().Format(time.RFC3339)
}

// Event is one delivery of a scheduled-job message (FromCloudEvent makes
// one from a Pub/Sub CloudEvent).
type Event struct {
	Source string // CloudEvent source, e.g. //pubsub.googleapis.com/projects/p/topics/scheduled-jobs
	ID     string // CloudEvent id: the Pub/Sub message id
	// PublishTime is the message's publish time (Pub/Sub's clock): it
	// places a scheduled message in its slot.
	PublishTime time.Time
	Data        []byte // the message data: Message as JSON
}

// Message is the data of a scheduled-job message, as JSON: {"job",
// "schedule"?, "timeZone"?, "seconds"?}, these keys exactly.
type Message struct {
	Job      string `json:"job"`
	Schedule string `json:"schedule,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// Seconds is how long a run without schedule keeps at it (Run.Until):
	// 0, or 1 to MaxSeconds.
	Seconds int `json:"seconds,omitempty"`
}

// MaxSeconds bounds Message.Seconds: a delivery's deadline is its
// function's timeout, at most 540 s for an event-triggered Cloud Function,
// and a run cannot outlast it.
const MaxSeconds = 540

// RunReserve is the part of the function's timeout that a run keeps after
// its Until: for the job's own wind-down (handing work over to the next
// run, say) and for marking the run done. Until is never later than the
// run's start plus MaxSeconds less RunReserve.
const RunReserve = 45 * time.Second

// Parse parses and checks the message data against the Runner's jobs
// (ErrBadPayload, saying what is wrong). No RPC.
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
	run := &Run{msg: m, name: m.Job, label: r.events.label, key: EventKey(ev.Source, ev.ID), executionID: executionID,
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
	r.events.place(run, executionID)
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
	return tx.Create(r.record, r.delivery(Failed, cause))
}

// Deliver handles one delivery of ev as execution executionID and says
// what it did. Acknowledge the message (Acknowledge(err) reports it) when
// the error is nil, the event having run here (Ran) or been done already
// (AlreadyDone), or when it wraps ErrBadPayload: the message can never
// succeed, and nothing was written. Any other error means Pub/Sub should
// deliver again: the run failed or could not be marked done (its lease is
// freed where that is safe, else it ends by itself), or it is in progress
// elsewhere (ErrInProgress). Costs are those of Events.Do; a bad payload
// costs no RPC.
func (r *Runner) Deliver(ctx context.Context, executionID string, ev Event) (o Outcome, err error) {
	defer func() { r.delivered(ctx, ev, o, err) }()
	run, err := r.runOf(ev, executionID)
	if err != nil {
		return "", err
	}
	return r.events.run(ctx, run, r.jobs[run.msg.Job])
}
