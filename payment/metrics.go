package payment

import (
	"context"
	"errors"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/metric"
)

// paymentMetrics records firelock.payments (CONTRACT §10): what happened
// to money, once each: a payment confirmed (paid) or booked late
// (late_accepted), a refund made, a session expired, a delivery of an event
// done before (duplicate), a delivery refused for its signature.
type paymentMetrics struct {
	mp       metric.MeterProvider // for the event leases' lock
	payments metric.Int64Counter
}

func newPaymentMetrics(mp metric.MeterProvider) *paymentMetrics {
	return &paymentMetrics{mp: mp, payments: telemetry.Counter(telemetry.Meter(mp, "payment"), telemetry.Payments, "{event}",
		"What happened to payments: paid, late_accepted, refunded, expired, duplicate, invalid_signature (CONTRACT §10).")}
}

// counted are the outcomes of firelock.payments.
var counted = map[string]bool{
	OutcomePaid: true, OutcomeLateAccepted: true, OutcomeRefunded: true, OutcomeExpired: true,
	OutcomeDuplicate: true, OutcomeInvalidSignature: true,
}

func (m *paymentMetrics) count(ctx context.Context, outcome string) {
	if counted[outcome] {
		m.payments.Add(ctx, 1, metric.WithAttributes(telemetry.Outcome.String(outcome)))
	}
}

// delivered counts a webhook delivery's outcome. A refund is counted where
// it is recorded (settle), whoever made it.
func (m *paymentMetrics) delivered(ctx context.Context, outcome string, err error) {
	if outcome == OutcomeRefunded || (err != nil && !errors.Is(err, ErrInvalidSignature)) {
		return
	}
	m.count(ctx, outcome)
}
