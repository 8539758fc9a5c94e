package booking

import (
	"context"
	"time"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
)

// Operations, as firelock.booking.requests and firelock.booking.duration
// name them (firelock.operation).
const (
	metricOpBook    = "book"
	metricOpHold    = "hold"
	metricOpExtend  = "extend"
	metricOpConfirm = "confirm"
	metricOpRelease = "release"
	metricOpCancel  = "cancel"
)

// WithMeterProvider records the Service's metrics (CONTRACT §9) into mp:
// firelock.booking.requests (by operation and Code) and
// firelock.booking.duration (by operation), once per call of Book, Hold,
// ExtendHold, ConfirmHold, ReleaseHold and Cancel. Without it (or with
// nil) they go to the global provider, a no-op until the application sets
// one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Service) { s.metrics = newBookingMetrics(mp) }
}

type bookingMetrics struct {
	requests metric.Int64Counter
	duration metric.Float64Histogram
	// Prepared attribute sets: recording allocates nothing.
	byCode map[string]map[string]metric.MeasurementOption // operation, code
	byOp   map[string]metric.MeasurementOption
}

func newBookingMetrics(mp metric.MeterProvider) *bookingMetrics {
	m := telemetry.Meter(mp, "booking")
	bm := &bookingMetrics{
		requests: telemetry.Counter(m, telemetry.BookingRequests, "{request}",
			"Booking operations by operation and outcome: ok or the CONTRACT §3/§7 code the HTTP functions answer with."),
		duration: telemetry.Seconds(m, telemetry.BookingDuration, "Time a booking operation took, whatever its outcome."),
		byCode:   map[string]map[string]metric.MeasurementOption{},
		byOp:     map[string]metric.MeasurementOption{},
	}
	for _, op := range []string{metricOpBook, metricOpHold, metricOpExtend, metricOpConfirm, metricOpRelease, metricOpCancel} {
		bm.byOp[op] = telemetry.Attrs(telemetry.Operation.String(op))
		bm.byCode[op] = map[string]metric.MeasurementOption{}
		for _, code := range Codes {
			bm.byCode[op][code] = telemetry.Attrs(telemetry.Operation.String(op), telemetry.Code.String(code))
		}
	}
	return bm
}

// start begins operation op: its span (a child of ctx's) and its clock.
// The returned func, deferred with the operation's error, records the
// operation's count and duration and ends the span.
func (m *bookingMetrics) start(ctx context.Context, op string) (context.Context, func(*error)) {
	begun := time.Now()
	ctx, span := tracer.Start(ctx, telemetry.BookingSpan+op)
	return ctx, func(err *error) {
		code := Code(*err)
		if m != nil {
			m.requests.Add(ctx, 1, m.byCode[op][code])
			m.duration.Record(ctx, time.Since(begun).Seconds(), m.byOp[op])
		}
		if span.IsRecording() {
			span.SetAttributes(telemetry.Code.String(code))
			if code == "internal" || code == "unavailable" {
				span.SetStatus(codes.Error, (*err).Error())
			}
		}
		span.End()
	}
}

var tracer = telemetry.Tracer("booking")
