// Package jobs runs scheduled jobs exactly once per event (CONTRACT §4).
//
// Cloud Scheduler publishes {"job", "schedule", "timeZone"} to the topic
// scheduled-jobs and Pub/Sub delivers each message at least once; Scheduler
// itself may publish a tick twice (a new message, a new id). The event of a
// message with a schedule is its schedule slot: the latest tick of the cron
// schedule at or before the message's publish time (ticks are the instants
// at which the zone's wall clock matches the schedule: see Slot), keyed
// {job}@{slot in RFC 3339 UTC}, so every publish of one tick is one event. A message without a schedule is its own event (CloudEvent
// source and id).
//
// Each event gets a lease document jobRuns/{eventKey} with the lease fields
// of CONTRACT §1 plus state "running" | "done" | "failed", job, eventId,
// finishedAt (and slot). Under that lease, kept alive, the job body runs;
// on success the document turns "done" in a transaction guarded by the
// lease, and stays, so a later duplicate acknowledges without running. A
// run that fails stays too, "failed" with its lease ended and released, so
// the next delivery takes it over at once and its delivery records keep a
// parent for the sweep (a week after, like done runs).
//
// What "exactly once" covers: the done mark, and every effect the body
// commits in the same transaction as the mark. A body that commits its
// effect in a transaction guarded by its lease calls Run.MarkDone in it:
// effect and mark commit together or not at all, so a commit whose answer
// is lost is found done by the redelivery, never applied again. Effects
// committed apart from the mark are fenced (a run that lost its event
// writes nothing) but may be applied again by a redelivery if the mark
// after them is lost: they must be idempotent. A job that writes outside
// Firestore cannot commit with the mark, so it makes each write idempotent
// by the event key (Run.Key, the same for every delivery of the event: an
// idempotency key, a request ID, a document ID) and fences it with
// Lease().Token where the store can refuse lower tokens.
//
// No event is lost. A delivery acknowledges (returns nil) only when the
// event is done, ran to completion here, or can never succeed (a bad
// payload). A delivery that meets a live lease waits for it, within its own
// budget and context: it acknowledges already_done if the run finishes,
// takes the run over if its lease ends (the holder crashed), and otherwise
// records in_progress and returns ErrInProgress so Pub/Sub delivers again.
// A run's done mark (or, after a failure, the freeing of its lease) is
// retried while its lease lasts, past the delivery's deadline too; a run
// that fails, or cannot be marked done, returns an error. Every delivery is
// recorded in jobRuns/{eventKey}/deliveries/{executionId} with its outcome.
//
// A job body gets its Run: the run's lease, the event's key, slot and
// message, and Until, when a long-running job should stop. A body that may
// outlive its lease (it is cancelled when the lease is lost, but a write may
// be in flight) must make its writes conditional on it: in a transaction
// that calls Lease().Guard, or with preconditions that a concurrent run
// would break (see Example).
package jobs
