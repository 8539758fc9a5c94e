// Package jobs runs scheduled jobs exactly once per event (CONTRACT §4).
//
// Cloud Scheduler publishes {"job": name} to the topic scheduled-jobs and
// Pub/Sub delivers each message at least once. Each event (CloudEvent source
// and id) gets a lease document jobRuns/{eventKey} with the lease fields of
// CONTRACT §1 plus state "running" | "done", job, eventId and finishedAt.
// Under that lease, kept alive, the job body runs; on success the document
// turns "done" (a write guarded by the lease's fencing token) and stays, so a
// later duplicate acknowledges without running. A failed run releases the
// lease and returns an error so Pub/Sub retries; a crashed run is taken over
// by a redelivery once its lease has ended. Every delivery is recorded in
// jobRuns/{eventKey}/deliveries/{executionId} with its outcome.
package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/lock"
)

// Collection holds one document per event.
const Collection = "jobRuns"

// States and outcomes (CONTRACT §4).
const (
	StateRunning = "running"
	StateDone    = "done"

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

// ErrBadPayload: the message is not {"job": <known job>}. Retrying cannot
// fix it, so the function acknowledges it (and writes nothing).
var ErrBadPayload = errors.New("jobs: bad payload")

var errDone = errors.New("jobs: event done")

// Func is a job body. It gets a context that is cancelled if the run's
// lease is lost.
type Func func(ctx context.Context) error

// Runner delivers events to jobs. Safe for concurrent use.
type Runner struct {
	client *firestore.Client
	jobs   map[string]Func
	lease  time.Duration
}

// New returns a Runner for the given jobs, leasing each event for lease
// (0 means DefaultLease).
func New(client *firestore.Client, jobs map[string]Func, lease time.Duration) *Runner {
	if lease == 0 {
		lease = DefaultLease
	}
	return &Runner{client: client, jobs: jobs, lease: lease}
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
		"rollupCounters": func(ctx context.Context) error {
			_, err := counter.RollupAll(ctx, client)
			return err
		},
		"sweepExpired": func(ctx context.Context) error {
			var errs []error
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

// Event is one delivery of a scheduled-job message.
type Event struct {
	Source string // CloudEvent source, e.g. //pubsub.googleapis.com/projects/p/topics/scheduled-jobs
	ID     string // CloudEvent id: the Pub/Sub message id
	Data   []byte // the message data: {"job": "rollupCounters"}
}

// Job parses and checks the message data.
func (r *Runner) Job(data []byte) (string, error) {
	var p struct {
		Job string `json:"job"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadPayload, err)
	}
	if _, ok := r.jobs[p.Job]; !ok {
		known := make([]string, 0, len(r.jobs))
		for k := range r.jobs {
			known = append(known, k)
		}
		slices.Sort(known)
		return "", fmt.Errorf("%w: unknown job %q (known: %s)", ErrBadPayload, p.Job, strings.Join(known, ", "))
	}
	return p.Job, nil
}

// Deliver handles one delivery as execution executionID. A nil error means
// acknowledge (the event ran here, is done, or runs elsewhere); an error
// means Pub/Sub should deliver again. ErrBadPayload writes nothing.
func (r *Runner) Deliver(ctx context.Context, executionID string, ev Event) (Outcome, error) {
	if ev.Source == "" || ev.ID == "" {
		return "", fmt.Errorf("%w: event without source or id", ErrBadPayload)
	}
	job, err := r.Job(ev.Data)
	if err != nil {
		return "", err
	}
	key := EventKey(ev.Source, ev.ID)
	run := r.client.Collection(Collection).Doc(key)
	locker, err := lock.New(r.client, Collection, lock.WithOwner(executionID), lock.WithLeaseDuration(r.lease))
	if err != nil {
		return "", err
	}
	lease, err := locker.TryAcquire(ctx, key,
		lock.WithFields(map[string]any{"state": StateRunning, "job": job, "eventId": ev.ID}),
		lock.WithCheck(func(s *firestore.DocumentSnapshot) error {
			if s.Data()["state"] == StateDone {
				return errDone
			}
			return nil
		}))
	switch {
	case errors.Is(err, errDone):
		return AlreadyDone, r.record(ctx, run, executionID, job, AlreadyDone, nil)
	case errors.Is(err, lock.ErrHeld):
		return InProgress, r.record(ctx, run, executionID, job, InProgress, nil)
	case err != nil:
		return "", err
	}

	kctx, stop := lease.KeepAlive(ctx)
	runErr := r.jobs[job](kctx)
	lost := context.Cause(kctx)
	stop()
	if runErr == nil && errors.Is(lost, lock.ErrNotHeld) {
		runErr = fmt.Errorf("jobs: the run's lease was lost while it ran: %w", lost)
	}
	if runErr != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		rerr := r.record(cctx, run, executionID, job, Failed, runErr)
		lease.Release(cctx) // let the retry take it at once; a lost lease is already free
		return Failed, errors.Join(runErr, rerr)
	}
	err = r.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := lease.Guard(tx); err != nil {
			return err
		}
		if err := tx.Update(run, []firestore.Update{
			{Path: "state", Value: StateDone},
			{Path: "finishedAt", Value: firestore.ServerTimestamp},
		}); err != nil {
			return err
		}
		return tx.Create(run.Collection("deliveries").Doc(executionID), delivery(job, Ran, nil))
	})
	if err != nil {
		return Failed, fmt.Errorf("jobs: %s ran but could not be marked done: %w", job, err)
	}
	return Ran, nil
}

func delivery(job string, o Outcome, err error) map[string]any {
	d := map[string]any{"outcome": string(o), "job": job, "at": firestore.ServerTimestamp}
	if err != nil {
		d["error"] = err.Error()
	}
	return d
}

func (r *Runner) record(ctx context.Context, run *firestore.DocumentRef, executionID, job string, o Outcome, runErr error) error {
	if _, err := run.Collection("deliveries").Doc(executionID).Create(ctx, delivery(job, o, runErr)); err != nil {
		return fmt.Errorf("jobs: record delivery %s: %w", executionID, err)
	}
	return nil
}
