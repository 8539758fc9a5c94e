package jobs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/metric"
)

// WithMeterProvider records the OpenTelemetry metrics into mp: a Runner's
// firelock.jobs.runs (a counter), once per delivery, by firelock.job and
// firelock.outcome; and the metrics of the event leases' lock
// (lock.WithMeterProvider). Without it (or with nil) they go to the global
// provider, a no-op until the application sets one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// Outcomes beside a delivery record's, for deliveries that never reach a run.
const (
	// outcomeBadPayload: a message no retry can fix, acknowledged unrun.
	outcomeBadPayload = "bad_payload"
	// unknownJob names the job of a message that names none of the table's:
	// the job attribute takes the table's names only.
	unknownJob = "unknown"
)

type jobMetrics struct {
	mp   metric.MeterProvider // for the Runner's Locker
	runs metric.Int64Counter
}

func newJobMetrics(mp metric.MeterProvider) *jobMetrics {
	return &jobMetrics{mp: mp, runs: telemetry.Counter(telemetry.Meter(mp, "jobs"), telemetry.JobsRuns, "{delivery}",
		"Deliveries of scheduled-job events by job and outcome: ran, already_done, in_progress, failed, or bad_payload.")}
}

// delivered counts one delivery of ev that ended with o and err.
func (r *Runner) delivered(ctx context.Context, ev Event, o Outcome, err error) {
	if r.metrics == nil {
		return
	}
	outcome := string(o)
	switch {
	case errors.Is(err, ErrBadPayload):
		outcome = outcomeBadPayload
	case outcome == "":
		outcome = string(Failed)
	}
	var m struct {
		Job string `json:"job"`
	}
	job := unknownJob
	if json.Unmarshal(ev.Data, &m) == nil && r.jobs[m.Job] != nil {
		job = m.Job
	}
	r.metrics.runs.Add(ctx, 1, metric.WithAttributes(telemetry.Job.String(job), telemetry.Outcome.String(outcome)))
}
