package door

import (
	"context"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/metric"
)

// WithMeterProvider records firelock.checkins (CONTRACT §9, §13) into mp:
// once per scan recorded, by its result. Without it (or with nil) it goes
// to the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Service) { s.metrics = newDoorMetrics(mp) }
}

type doorMetrics struct {
	checkins metric.Int64Counter
	byResult map[string]metric.MeasurementOption
}

func newDoorMetrics(mp metric.MeterProvider) *doorMetrics {
	m := &doorMetrics{
		checkins: telemetry.Counter(telemetry.Meter(mp, "door"), telemetry.CheckIns, "{scan}",
			"Scans recorded at the door, by result: admitted, exited, already_in, conflict, ... (CONTRACT §13)."),
		byResult: map[string]metric.MeasurementOption{},
	}
	for _, r := range Results {
		m.byResult[r] = telemetry.Attrs(telemetry.Result.String(r))
	}
	return m
}

func (m *doorMetrics) count(ctx context.Context, result string) {
	if opt, ok := m.byResult[result]; ok {
		m.checkins.Add(ctx, 1, opt)
	}
}
