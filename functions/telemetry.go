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
	texporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/trace"
	"go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// TracesEnv turns on the export of traces to Cloud Trace when it is
// "cloud" (deploy.sh sets it): a span per function call, a child of the
// request's trace (the traceparent the logs carry), with the booking
// operation, Firestore's own calls and the lock's commits inside it.
// Sampling follows the request's (Cloud Run samples requests and says so
// in traceparent); OTEL_TRACES_SAMPLER overrides it.
const TracesEnv = "FIRELOCK_TRACES"

func init() {
	metrics, traces := os.Getenv(MetricsEnv) == "cloud", os.Getenv(TracesEnv) == "cloud"
	if !metrics && !traces {
		return
	}
	log := NewLogger(os.Stdout)
	res, err := instanceResource(context.Background())
	if err != nil {
		log.Error("telemetry: no metrics or traces exported", "error", err.Error())
		return
	}
	if metrics {
		if err := exportToCloudMonitoring(res); err != nil {
			log.Error("metrics: not exported to Cloud Monitoring", "error", err.Error())
		}
	}
	if traces {
		if err := exportToCloudTrace(res); err != nil {
			log.Error("traces: not exported to Cloud Trace", "error", err.Error())
		}
	}
}

// cloudProject is the project to export to, when the environment names it
// ("": the exporters take Application Default Credentials' project).
func cloudProject() string { return ProjectID() }

// instanceResource describes this function instance: Cloud Monitoring
// maps it to a generic_task (location: the region, namespace: firelock,
// job: the function, task_id: the instance).
func instanceResource(ctx context.Context) (*resource.Resource, error) {
	opts := []resource.Option{resource.WithDetectors(gcp.NewDetector()), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceNamespace("firelock"))}
	if fn := os.Getenv("K_SERVICE"); fn != "" { // the function's name, as Cloud Run sets it
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(fn)))
	}
	return resource.New(ctx, opts...)
}

// exportToCloudMonitoring sets the global meter provider to one that
// exports to Cloud Monitoring.
func exportToCloudMonitoring(res *resource.Resource) error {
	var opts []mexporter.Option
	if p := cloudProject(); p != "" {
		opts = append(opts, mexporter.WithProjectID(p))
	}
	exp, err := mexporter.New(opts...)
	if err != nil {
		return fmt.Errorf("Cloud Monitoring exporter: %w", err)
	}
	exportMetrics(exp, res, exportInterval())
	return nil
}

// exportToCloudTrace sets the global tracer provider to one that exports
// to Cloud Trace, in batches, and once more at SIGTERM.
func exportToCloudTrace(res *resource.Resource) error {
	var opts []texporter.Option
	if p := cloudProject(); p != "" {
		opts = append(opts, texporter.WithProjectID(p))
	}
	exp, err := texporter.New(opts...)
	if err != nil {
		return fmt.Errorf("Cloud Trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	atSIGTERM(tp.Shutdown)
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
	atSIGTERM(mp.Shutdown)
	return mp
}

var (
	sigtermMu        sync.Mutex
	sigtermShutdowns []func(context.Context) error
)

// atSIGTERM has shutdown called (with the others, at once) when the
// process gets SIGTERM, Cloud Run's notice before it stops an instance;
// then SIGTERM does what it does by default: it ends the process. The
// providers' shutdowns export what was recorded since their last export:
// without them, up to an interval of counts and a batch of spans would be
// lost with every instance.
func atSIGTERM(shutdown func(context.Context) error) {
	sigtermMu.Lock()
	defer sigtermMu.Unlock()
	sigtermShutdowns = append(sigtermShutdowns, shutdown)
	if len(sigtermShutdowns) > 1 {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { // lives as long as the process
		<-term
		ctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		sigtermMu.Lock()
		var wg sync.WaitGroup
		for _, f := range sigtermShutdowns {
			wg.Go(func() {
				if err := f(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "telemetry: final export:", err)
				}
			})
		}
		sigtermMu.Unlock()
		wg.Wait()
		cancel()
		signal.Reset(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
}

// spacedExporter holds an export back until exportGap after the previous
// one ended: the periodic ones are far apart already, but the flush at
// shutdown may come right after one, and Cloud Monitoring would refuse its
// points. The gap is counted from the end of the previous export, when its
// points have arrived, so a slow write cannot eat into it.
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
	defer func() { e.last = time.Now() }()
	return e.Exporter.Export(ctx, rm)
}
