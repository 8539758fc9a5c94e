// Package telemetrytest reads what firelock's instruments recorded, through
// the OpenTelemetry SDK's ManualReader, for tests.
package telemetrytest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Reader is a MeterProvider with a ManualReader: give Provider to the
// package under test, then collect.
type Reader struct {
	Provider *sdkmetric.MeterProvider
	reader   *sdkmetric.ManualReader
}

// New returns a Reader whose provider is shut down when t ends.
func New(t testing.TB) *Reader {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return &Reader{Provider: mp, reader: r}
}

// Point is one data point of an instrument: its attributes and its value
// (a sum's or gauge's value, a histogram's count).
type Point struct {
	Attrs attribute.Set
	Value float64
	Sum   float64 // a histogram's sum of values
}

func (p Point) String() string {
	return fmt.Sprintf("{%s}=%v", p.Attrs.Encoded(attribute.DefaultEncoder()), p.Value)
}

// Points collects and returns the data points of the instrument name
// (none if it recorded nothing), and its unit.
func (r *Reader) Points(t testing.TB, name string) ([]Point, string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	var out []Point
	unit := ""
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			unit = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, Point{Attrs: p.Attributes, Value: float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = append(out, Point{Attrs: p.Attributes, Value: float64(p.Value)})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, Point{Attrs: p.Attributes, Value: float64(p.Count), Sum: p.Sum})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return out, unit
}

// Value adds up the points of name whose attributes include every one of
// want (a histogram: its counts).
func (r *Reader) Value(t testing.TB, name string, want ...attribute.KeyValue) float64 {
	t.Helper()
	points, _ := r.Points(t, name)
	total := 0.0
	for _, p := range points {
		if has(p.Attrs, want) {
			total += p.Value
		}
	}
	return total
}

// Dump lists every point of name, for failure messages.
func (r *Reader) Dump(t testing.TB, name string) string {
	t.Helper()
	points, _ := r.Points(t, name)
	s := make([]string, len(points))
	for i, p := range points {
		s[i] = p.String()
	}
	return name + " " + strings.Join(s, " ")
}

func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}
