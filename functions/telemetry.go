package functions

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	mexporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/metric"
	"go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// MetricsEnv turns on the export of the metrics of CONTRACT §9 to Cloud
// Monitoring when it is "cloud" (deploy.sh sets it; anything else, or
// nothing, leaves the global provider a no-op). They appear there as
// workload.googleapis.com/firelock.booking.requests and so on, with the
// attributes as labels (firelock_operation, ...), on a generic_task
// resource per function instance (job: the function, task_id: the
// instance).
const MetricsEnv = "FIRELOCK_METRICS"

// Export timing. Cloud Monitoring refuses a point of a time series whose
// end time lies less than its minimum sampling period after the series'
// last point (5 s as documented now, 10 s before), and every export writes
// a point of every series. So the export interval is never below 10 s: 60 s
// by default (the SDK's), or OTEL_METRIC_EXPORT_INTERVAL (milliseconds, as
// the SDK reads it) when that is at least 10 s. The flush at shutdown comes
// at any time, so it waits until exportGap has passed since the previous
// export: within the 10 s that Cloud Run (Cloud Functions gen2) leaves an
// instance between SIGTERM and SIGKILL.
const (
	defaultExportInterval = 60 * time.Second
	minExportInterval     = 10 * time.Second
	exportGap             = 5 * time.Second
	shutdownBudget        = 9 * time.Second
)

func init() {
	if os.Getenv(MetricsEnv) != "cloud" {
		return
	}
	if err := exportToCloudMonitoring(context.Background()); err != nil {
		NewLogger(os.Stdout).Error("metrics: not exported to Cloud Monitoring", "error", err.Error())
	}
}

// exportToCloudMonitoring sets the global meter provider to one that
// exports to Cloud Monitoring, in this function's project (or the one of
// Application Default Credentials), as this instance's resource.
func exportToCloudMonitoring(ctx context.Context) error {
	var opts []mexporter.Option
	if p := ProjectID(); p != "" && p != "*detect-project-id*" {
		opts = append(opts, mexporter.WithProjectID(p))
	}
	exp, err := mexporter.New(opts...)
	if err != nil {
		return fmt.Errorf("Cloud Monitoring exporter: %w", err)
	}
	attrs := []resource.Option{resource.WithDetectors(gcp.NewDetector()), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceNamespace("firelock"))}
	if fn := os.Getenv("K_SERVICE"); fn != "" { // the function's name, as Cloud Run sets it
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceName(fn)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	exportMetrics(exp, res, exportInterval())
	return nil
}

// exportInterval is the periodic export's interval (see minExportInterval).
func exportInterval() time.Duration {
	ms, err := strconv.Atoi(os.Getenv("OTEL_METRIC_EXPORT_INTERVAL"))
	if err != nil || ms <= 0 {
		return defaultExportInterval
	}
	return max(time.Duration(ms)*time.Millisecond, minExportInterval)
}

// exportMetrics makes the global meter provider export through exp every
// interval, and once more when the instance is told to stop (SIGTERM).
func exportMetrics(exp sdkmetric.Exporter, res *resource.Resource, interval time.Duration) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&spacedExporter{Exporter: exp}, sdkmetric.WithInterval(interval))))
	otel.SetMeterProvider(mp)
	flushOnSIGTERM(mp)
	return mp
}

// flushOnSIGTERM exports what was recorded since the last export when the
// process gets SIGTERM (Cloud Run's notice before it stops an instance),
// then lets SIGTERM do what it does by default: end the process. Without
// it, up to an interval of counts would be lost with every instance.
func flushOnSIGTERM(mp *sdkmetric.MeterProvider) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { // lives as long as the process
		<-term
		ctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		if err := mp.Shutdown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "metrics: final export:", err)
		}
		cancel()
		signal.Reset(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
}

// spacedExporter holds an export back until exportGap after the previous
// one: the periodic ones are far apart already, but the flush at shutdown
// may come right after one, and Cloud Monitoring would refuse its points.
type spacedExporter struct {
	sdkmetric.Exporter
	mu   sync.Mutex
	last time.Time
}

func (e *spacedExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if wait := exportGap - time.Since(e.last); !e.last.IsZero() && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	e.last = time.Now()
	return e.Exporter.Export(ctx, rm)
}
