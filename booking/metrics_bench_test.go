package booking

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// What recording one operation costs (a count, a duration, the code worked
// out from its error, and its span on the global tracer provider, a no-op
// here), beside the milliseconds a booking's commit
// takes: go test -run '^$' -bench BenchmarkRecord ./booking/
func BenchmarkRecordOperation(b *testing.B) {
	seatTaken := &SeatsError{Kind: ErrSeatTaken, Seats: []string{"A1"}}
	for _, c := range []struct {
		name string
		m    *bookingMetrics
	}{
		{"no-op provider", newBookingMetrics(noop.NewMeterProvider())},
		{"SDK provider", newBookingMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))},
	} {
		for _, e := range []struct {
			name string
			err  error
		}{{"ok", nil}, {"seat_taken", seatTaken}, {"wrapped", errors.Join(errors.New("x"), seatTaken)}} {
			b.Run(c.name+"/"+e.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						err := e.err
						_, done := c.m.start(ctx, metricOpBook)
						done(&err)
					}
				})
			})
		}
	}
}
