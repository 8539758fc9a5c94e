package sale

import (
	"context"
	"sync"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// WithMeterProvider records the admitter's metrics (CONTRACT §9) into mp:
// firelock.sale.admissions, and the gauges firelock.sale.waiting and
// firelock.sale.active_passes, each by firelock.screening; and the metrics
// of the admitter's lock (lock.WithMeterProvider). Without it (or with nil)
// they go to the global provider, a no-op until the application sets one.
//
// A screening id is an attribute value here, as the contract says, so the
// series are as many as the sales: an admitter reports only the sales
// whose lease it holds (those with a sale that has not started, or started
// within the last hour), and a sale's gauges stop when its admitter lets
// it go.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meter = meterOption{mp} }
}

// meterOption is the provider WithMeterProvider gave (nil: the global).
type meterOption struct{ mp metric.MeterProvider }

// admitMetrics are an Admitter's instruments and the levels its gauges
// report: each sale's as the admitter knew them at its last tick (what it
// publishes in sales/{id}, at most every numbersEvery).
type admitMetrics struct {
	admissions metric.Int64Counter
	mu         sync.Mutex
	levels     map[string]saleLevels // by screening id: the sales this admitter holds
}

type saleLevels struct {
	waiting, active int64
	attrs           metric.MeasurementOption
}

func newAdmitMetrics(mp metric.MeterProvider) *admitMetrics {
	m := telemetry.Meter(mp, "sale")
	am := &admitMetrics{
		admissions: telemetry.Counter(m, telemetry.SaleAdmissions, "{admission}", "People admitted from a sale's waiting room."),
		levels:     map[string]saleLevels{},
	}
	waiting := telemetry.Gauge(m, telemetry.SaleWaiting, "{person}", "People waiting in a sale's line, as its admitter counted them at its last tick (sales/{id}.waiting, published at most every 5 s).")
	active := telemetry.Gauge(m, telemetry.SaleActivePasses, "{pass}", "Passes live in a sale, as its admitter counted them at its last tick (sales/{id}.active, published at most every 5 s).")
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		am.mu.Lock()
		defer am.mu.Unlock()
		for _, lv := range am.levels {
			o.ObserveInt64(waiting, lv.waiting, lv.attrs)
			o.ObserveInt64(active, lv.active, lv.attrs)
		}
		return nil
	}, waiting, active)
	if err != nil {
		otel.Handle(err)
	}
	return am
}

// admitted counts n admissions to sale id that committed.
func (m *admitMetrics) admitted(ctx context.Context, id string, n int64) {
	if m != nil && n > 0 {
		m.admissions.Add(ctx, n, telemetry.Attrs(telemetry.Screening.String(id)))
	}
}

// published notes the levels of sale id as the admitter knows them now (nil:
// nothing known yet).
func (m *admitMetrics) published(id string, p *Public) {
	if m == nil || p == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lv, ok := m.levels[id]
	if !ok {
		lv.attrs = telemetry.Attrs(telemetry.Screening.String(id))
	}
	lv.waiting, lv.active = p.Waiting, p.Active
	m.levels[id] = lv
}

// forget stops reporting sale id: the admitter let it go (its lease was
// released or lost, or the sale needs no more looking after).
func (m *admitMetrics) forget(id string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.levels, id)
	m.mu.Unlock()
}
