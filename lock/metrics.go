package lock

import (
	"context"
	"errors"
	"time"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// WithMeterProvider records the Locker's OpenTelemetry metrics into mp:
// firelock.lock.acquire.duration (a histogram in seconds, by
// firelock.result: acquired, held or error) and firelock.lock.lease.lost
// (a counter). Without it (or with nil) they go to the global provider, a
// no-op until the application sets one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(l *Locker) error {
		l.metrics = newLockMetrics(mp)
		return nil
	}
}

// lockMetrics are a Locker's instruments, shared by the Lockers ForOwner
// derives from it.
type lockMetrics struct {
	acquire metric.Float64Histogram
	lost    metric.Int64Counter
	results map[string]metric.MeasurementOption
}

func newLockMetrics(mp metric.MeterProvider) *lockMetrics {
	m := telemetry.Meter(mp, "lock")
	lm := &lockMetrics{
		acquire: telemetry.Seconds(m, telemetry.LockAcquireDuration,
			"Time a TryAcquire or an Acquire (its whole wait) took, by result: acquired, held (another owner holds a key; for Acquire: still held when its context ended) or error."),
		lost: telemetry.Counter(m, telemetry.LockLeaseLost, "{lease}",
			"Leases their holder found lost (taken over, released by someone else, or not renewed in time): once per lease."),
		results: map[string]metric.MeasurementOption{},
	}
	for _, r := range []string{telemetry.Acquired, telemetry.Held, telemetry.Error} {
		lm.results[r] = telemetry.Attrs(telemetry.Result.String(r))
	}
	return lm
}

// acquired records an acquisition that started at start and ended with err.
func (m *lockMetrics) acquired(ctx context.Context, start time.Time, err error) {
	if m == nil {
		return
	}
	r := telemetry.Error
	switch {
	case err == nil:
		r = telemetry.Acquired
	case errors.Is(err, ErrHeld):
		r = telemetry.Held
	}
	m.acquire.Record(ctx, time.Since(start).Seconds(), m.results[r])
}

// leaseLost counts a lease that ended lost: Lease.end calls it once.
func (m *lockMetrics) leaseLost() {
	if m != nil {
		m.lost.Add(context.Background(), 1)
	}
}

var tracer = telemetry.Tracer("lock")

// traceCommit starts the span of one commit of the lock (a grant,
// renewal or release: the documents are not named, only counted) inside
// the trace ctx carries; outside one (a renewal of a lease taken with a
// bare context) it starts none, so renewals never make traces of their
// own. The returned func, deferred with the commit's error, ends it.
func traceCommit(ctx context.Context, writes int) (context.Context, func(*error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(*error) {}
	}
	ctx, span := tracer.Start(ctx, telemetry.LockCommitSpan)
	if !span.IsRecording() {
		return ctx, func(*error) { span.End() }
	}
	span.SetAttributes(attribute.Int("firelock.writes", writes))
	return ctx, func(err *error) {
		if *err != nil {
			span.SetStatus(codes.Error, (*err).Error())
		}
		span.End()
	}
}
