// Package jobs runs each event exactly once to completion, although it is
// delivered at least once: scheduled jobs (Cloud Scheduler -> Pub/Sub -> a
// CloudEvent function) with Runner, and any other at-least-once delivery
// (a webhook's events, a queue's messages) with Events.
//
//	runner := jobs.New(client, map[string]jobs.Func{
//		"dailyReport": func(ctx context.Context, run *jobs.Run) error { ... },
//	})
//	functions.CloudEvent("RunScheduledJob", func(ctx context.Context, e event.Event) error {
//		ev, err := jobs.FromCloudEvent(e)
//		if err == nil {
//			execID, _ := lock.NewExecutionID()
//			_, err = runner.Deliver(ctx, execID, ev)
//		}
//		if jobs.Acknowledge(err) {
//			return nil
//		}
//		return err // Pub/Sub delivers again
//	})
//
// # Events
//
// Cloud Scheduler publishes a message {"job", "schedule"?, "timeZone"?,
// "seconds"?} (Message) to a topic, and Pub/Sub delivers each message at
// least once; Scheduler itself may publish one tick twice (a new message,
// a new id). The event of a message with a schedule is its schedule slot:
// the latest tick of the 5-field cron schedule at or before the message's
// publish time, on the zone's wall clock (default UTC; see Slot), keyed
// {job}@{slot in RFC 3339 UTC} (SlotKey), e.g.
// rollupCounters@2026-11-22T10:00:00Z, so every publish of one tick is one
// event. A message without a schedule is its own event, keyed by a hash of
// its CloudEvent source and id (EventKey).
//
// # The documents
//
// Each event gets a run document {collection}/{eventKey} (Runner's
// collection is jobRuns unless WithCollection says otherwise). It is a
// lease document of package lock, whose fields it shares, plus fields of
// its own:
//
//	owner, acquiredAt, renewedAt, leaseSeconds, expireAt, holds
//	                          the run's lease (see package lock): owner is the delivery's execution ID
//	state       string     "running", then "done" or "failed"
//	job         string     the job (a Runner's; an Events' label field holds the run's name)
//	eventId     string     the CloudEvent id (a Runner's)
//	slot        timestamp  the schedule slot, for a scheduled message
//	finishedAt  timestamp  server time the run was marked done or failed
//
// and one record per delivery, {collection}/{eventKey}/deliveries/{executionId}:
//
//	outcome  string     "ran" | "already_done" | "in_progress" | "failed"
//	job      string     the run's name, in the label field
//	at       timestamp  server time of the record
//	error    string     why a delivery failed, if it did
//	result   string     the body's own word for what it did (MarkDoneWith)
//
// Under the run's lease, kept alive, the job body runs; on success the
// document turns "done" in a transaction guarded by the lease, and stays,
// so a later duplicate acknowledges without running. A run that fails stays
// too, "failed" with its lease ended and released (leaseSeconds 0, no
// holders), so the next delivery takes it over at once and its delivery
// records keep a parent for Sweep (Runs: a week after, like done runs).
//
// # What "exactly once" covers
//
// The done mark, and every effect the body commits in the same transaction
// as the mark. A body that commits its effect in a transaction guarded by
// its lease calls Run.MarkDone in it: effect and mark commit together or
// not at all, so a commit whose answer is lost is found done by the
// redelivery, never applied again. Effects committed apart from the mark
// are fenced (a run that lost its event writes nothing) but may be applied
// again by a redelivery if the mark after them is lost: they must be
// idempotent. A job that writes outside Firestore cannot commit with the
// mark, so it makes each write idempotent by the event key (Run.Key, the
// same for every delivery of the event: an idempotency key, a request ID, a
// document ID) and fences it with Lease().Token where the store can refuse
// lower tokens.
//
// # No event is lost
//
// A delivery acknowledges (Acknowledge) only when the event is done, ran to
// completion here, or can never succeed (ErrBadPayload). A delivery that
// meets a live lease waits for it, within its own budget (WithWait) and
// context: it acknowledges already_done if the run finishes, takes the run
// over if its lease ends (the holder crashed), and otherwise records
// in_progress and returns ErrInProgress so Pub/Sub delivers again. A run's
// done mark (or, after a failure, the freeing of its lease) is retried
// while its lease lasts, past the delivery's deadline too; a run that
// fails, or cannot be marked done, returns an error. The function's
// timeout must exceed the run's lease (DefaultLease, 60 s).
//
// A job body gets its Run: the run's lease, the event's key, slot and
// message, and Until, when a long-running job should stop. A body that may
// outlive its lease (its context is cancelled when the lease is lost, but
// a write may be in flight) must make its writes conditional on it: in a
// transaction that calls Lease().Guard, or with preconditions that a
// concurrent run would break (see Example).
//
// # Costs
//
// A first delivery costs the grant of its lease (one commit), the body's
// own RPCs, a renewal a third into the lease while the body runs, and the
// settling transaction (two reads, one commit; none when the body called
// Run.Committed); a duplicate of a done event costs a read and a write.
//
// # Testing
//
// The package firelocktest runs your tests against the real Firestore
// emulator, a project per test, with a fault proxy to lose answers.
package jobs
