package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func init() {
	scenarios = append(scenarios, scenario{"metrics", "booking with and without metrics", benchBookingMetrics})
}

// metricsRounds: the two variants alternate this many times each, so that
// a drift of the shared machine's load falls on both alike.
const metricsRounds = 4

// benchBookingMetrics: the distinct-seats booking at cfg.concurrency
// clients, on a Service without a meter provider (the global no-op, what a
// user who wants no metrics gets) and on one with an SDK provider whose
// reader is collected every second (as a scrape or a periodic export
// would), alternating. CONTRACT §9's goal: metrics cost at most 3% of
// booking throughput.
func benchBookingMetrics(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	name := fmt.Sprintf("booking metrics, distinct seats, %d clients", cfg.concurrency)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	collected := make(chan struct{})
	cctx, stop := context.WithCancel(ctx)
	go func() {
		defer close(collected)
		for t := time.NewTicker(time.Second); ; {
			select {
			case <-cctx.Done():
				t.Stop()
				return
			case <-t.C:
				var rm metricdata.ResourceMetrics
				reader.Collect(cctx, &rm)
			}
		}
	}()
	defer func() { stop(); <-collected }()

	variants := []struct {
		variant string
		svc     *booking.Service
	}{
		{"no meter provider (global no-op)", booking.New(c)},
		{"SDK provider, collected every 1 s", booking.New(c, booking.WithMeterProvider(mp))},
	}
	var sums [2]result
	round := cfg.duration / metricsRounds
	for i := range 2 * metricsRounds {
		v := i % 2
		svc := variants[v].svc
		screening := fmt.Sprint("metrics-", v, "-", time.Now().UnixNano())
		if err := bigScreening(ctx, c, screening); err != nil {
			return nil, nil, err
		}
		var next atomic.Int64
		r := measure(ctx, name, variants[v].variant, cfg.concurrency, round, func(ctx context.Context, w, _ int) error {
			seat := seatN(next.Add(1))
			_, _, err := svc.Book(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seat}, RequestID: screening + "/" + seat})
			return err
		}, nil)
		s := &sums[v]
		s.Scenario, s.Variant = r.Scenario, r.Variant
		s.RPCsPerOp = r.RPCsPerOp
		s.Ops += r.Ops
		s.Errors += r.Errors
		s.OpsPerS += r.OpsPerS / metricsRounds
		s.P50ms += r.P50ms / metricsRounds
		s.P99ms += r.P99ms / metricsRounds
		if r.Note != "" {
			s.Note = r.Note
		}
	}
	for _, v := range variants {
		v.svc.Close()
	}
	sums[1].Note = fmt.Sprintf("%d alternating rounds of %v each; throughput and latencies are their means", 2*metricsRounds, round)
	return sums[:], []comparison{
		{name, "bookings/s, metrics on vs off", sums[1].OpsPerS, sums[0].OpsPerS, ratio(sums[1].OpsPerS, sums[0].OpsPerS), "higher (goal: at least 0.97)"},
	}, nil
}
