package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// printExporter writes each export as one JSON line on stdout: when it
// arrived, and the sums it carries by name. The first export takes
// firstTakes to arrive, as a write to Cloud Monitoring takes its time on a
// slow network or a loaded machine: the spacing must hold between
// arrivals, not only between starts.
type printExporter struct{ first *bool }

const firstTakes = 300 * time.Millisecond

func (printExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (printExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (printExporter) ForceFlush(context.Context) error { return nil }
func (printExporter) Shutdown(context.Context) error   { return nil }
func (e printExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	if *e.first {
		*e.first = false
		time.Sleep(firstTakes)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					sums[m.Name] += p.Value
				}
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"at": time.Now(), "sums": sums})
	fmt.Println("EXPORT " + string(b))
	return nil
}

// The child of TestSIGTERMFlushesMetrics: it exports every hour, so only
// the flush at SIGTERM can show its counts.
func TestSIGTERMFlushesMetricsChild(t *testing.T) {
	if os.Getenv("FIRELOCK_SIGTERM_CHILD") != "1" {
		t.Skip("run by TestSIGTERMFlushesMetrics")
	}
	first := true
	mp := functions.ExportMetrics(printExporter{first: &first}, resource.Empty(), time.Hour)
	c, _ := otel.Meter("test").Int64Counter(telemetry.BookingRequests)
	c.Add(context.Background(), 1)
	mp.ForceFlush(context.Background()) // an export just now: the flush must keep its distance
	c.Add(context.Background(), 1)
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(30 * time.Second)
	t.Fatal("still alive 30 s after SIGTERM")
}

// Deployed, an instance that Cloud Run stops gets SIGTERM: the counts since
// the last export go out then (no sooner than ExportGap after it, or Cloud
// Monitoring refuses them), and the process still ends by SIGTERM.
func TestSIGTERMFlushesMetrics(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGTERMFlushesMetricsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FIRELOCK_SIGTERM_CHILD=1")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child: %v, want it killed by SIGTERM; output:\n%s", err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child ended %v, want by SIGTERM; output:\n%s", exit, out)
	}
	type export struct {
		At   time.Time        `json:"at"`
		Sums map[string]int64 `json:"sums"`
	}
	var exports []export
	for _, line := range strings.Split(string(out), "\n") {
		if j, ok := strings.CutPrefix(line, "EXPORT "); ok {
			var e export
			if err := json.Unmarshal([]byte(j), &e); err != nil {
				t.Fatal(err)
			}
			exports = append(exports, e)
		}
	}
	if len(exports) != 2 || exports[1].Sums[telemetry.BookingRequests] != 2 {
		t.Fatalf("exports %+v, want two, the last (at SIGTERM) with both counts; output:\n%s", exports, out)
	}
	if gap := exports[1].At.Sub(exports[0].At); gap < functions.ExportGap {
		t.Errorf("the flush came %v after the previous export, want at least %v", gap, functions.ExportGap)
	}
}
