// Package telemetry names firelock's OpenTelemetry instruments (CONTRACT
// §9) and makes them from a metric.MeterProvider, for the library packages
// (lock, booking, sale, jobs, payment), which each take a provider as an option.
//
// It depends on the OpenTelemetry API only, never on the SDK or an
// exporter: an application that sets no provider records into the global
// one, a no-op until it sets one, and pays next to nothing. The SDK and the
// exporters are wired where firelock runs: functions (Cloud Monitoring,
// deployed) and cmd/firelock-local (Prometheus at /metrics, locally).
package telemetry

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Instrument names (CONTRACT §9). Units: seconds for durations; counters
// and gauges carry a UCUM annotation only ({request}), which exporters drop
// from names: Prometheus shows firelock_booking_requests_total.
const (
	LockAcquireDuration   = "firelock.lock.acquire.duration"  // histogram, s; Result
	LockLeaseLost         = "firelock.lock.lease.lost"        // counter
	BookingRequests       = "firelock.booking.requests"       // counter; Operation, Code
	BookingDuration       = "firelock.booking.duration"       // histogram, s; Operation
	SaleAdmissions        = "firelock.sale.admissions"        // counter; Screening
	SaleWaiting           = "firelock.sale.waiting"           // gauge; Screening
	SaleActivePasses      = "firelock.sale.active_passes"     // gauge; Screening
	JobsRuns              = "firelock.jobs.runs"              // counter; Job, Outcome
	Payments              = "firelock.payments"               // counter; Outcome (CONTRACT §10)
	AppCheckVerifications = "firelock.appcheck.verifications" // counter; Result: valid | missing | invalid (CONTRACT §12)
	CheckIns              = "firelock.checkins"               // counter; Result: a scan's result (CONTRACT §13)
)

// Attribute keys (CONTRACT §9). Every value comes from a small fixed set
// (a screening id: from the sales one admitter looks after), never a user,
// a seat or a lock key.
const (
	Result    = attribute.Key("firelock.result")    // acquired | held | error
	Operation = attribute.Key("firelock.operation") // book | hold | extend | confirm | release | cancel
	Code      = attribute.Key("firelock.code")      // ok | a CONTRACT §3 or §7 code
	Screening = attribute.Key("firelock.screening")
	Job       = attribute.Key("firelock.job")
	Outcome   = attribute.Key("firelock.outcome")
)

// Values of Result.
const (
	Acquired = "acquired"
	Held     = "held"
	Error    = "error"
	// App Check (CONTRACT §12): a token verified, none sent, or one refused.
	Valid   = "valid"
	Missing = "missing"
	Invalid = "invalid"
)

// Scope is the instrumentation scope of every firelock instrument, plus the
// package that records it (github.com/firelock/firelock/lock, ...).
const Scope = "github.com/firelock/firelock"

// DurationBuckets are the bucket bounds, in seconds, of the duration
// histograms: from a 5 ms commit on a warm connection to a minute's wait
// for a lock. The SDK's default bounds (0 to 10000) suit milliseconds.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Meter is the meter of package pkg (e.g. "lock") from mp, or from the
// global provider when mp is nil. The global provider is a no-op until the
// application sets one; instruments made from it before then record into
// the provider set later.
func Meter(mp metric.MeterProvider, pkg string) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(Scope + "/" + pkg)
}

// Counter makes an Int64Counter; an error (only for an invalid name, which
// these are not) goes to otel.Handle and a no-op counter stands in.
func Counter(m metric.Meter, name, unit, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil || c == nil {
		if err != nil {
			otel.Handle(err)
		}
		return noop.Int64Counter{}
	}
	return c
}

// Seconds makes a Float64Histogram in seconds with DurationBuckets.
func Seconds(m metric.Meter, name, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil || h == nil {
		if err != nil {
			otel.Handle(err)
		}
		return noop.Float64Histogram{}
	}
	return h
}

// Gauge makes an Int64ObservableGauge, observed by a callback the caller
// registers.
func Gauge(m metric.Meter, name, unit, desc string) metric.Int64ObservableGauge {
	g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil || g == nil {
		if err != nil {
			otel.Handle(err)
		}
		return noop.Int64ObservableGauge{}
	}
	return g
}

// Attrs is a measurement option carrying kvs, built once: recording with a
// prepared option allocates nothing.
func Attrs(kvs ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}
