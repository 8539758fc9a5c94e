package sale

import (
	"context"
	"testing"
	"time"

	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
)

// The admitter counts its admissions and reports, while it holds the sale,
// the numbers of sales/{id} as it knows them each tick (they are published
// less often): waiting and live passes, by screening. Once it lets the sale
// go, the gauges stop.
func TestAdmitterMetricsReportItsNumbers(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(time.Hour), 600, 2, 600))
	m := telemetrytest.New(t)
	svc := New(e.fs, append(testOptions(e.log), WithMeterProvider(m.Provider))...)
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	e.joinAndOpen(5)
	screening := telemetry.Screening.String(e.id)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(30*time.Second)) }()
	var waiting, active float64
	seen := false
	for !seen {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("the run ended (%v) before its gauges showed 3 waiting and 2 passes: waiting %v, active %v; sales/%s: %+v",
				err, waiting, active, e.id, e.public())
		case <-time.After(100 * time.Millisecond):
		}
		waiting = m.Value(t, telemetry.SaleWaiting, screening)
		active = m.Value(t, telemetry.SaleActivePasses, screening)
		seen = waiting == 3 && active == 2
	}
	// sales/{id} follows within numbersEvery.
	for deadline := time.Now().Add(numbersEvery + 2*time.Second); ; time.Sleep(100 * time.Millisecond) {
		if p := e.public(); p.Waiting == 3 && p.Active == 2 {
			break
		} else if time.Now().After(deadline) {
			t.Errorf("sales/%s shows %d waiting, %d active; the gauges showed 3 and 2", e.id, p.Waiting, p.Active)
			break
		}
	}
	cancel()
	<-done

	admitted := 0
	for _, p := range e.places() {
		if p.Status == StatusAdmitted {
			admitted++
		}
	}
	if n := m.Value(t, telemetry.SaleAdmissions, screening); n != float64(admitted) || admitted != 2 {
		t.Errorf("admissions counted %v, %d places admitted, want 2: %s", n, admitted, m.Dump(t, telemetry.SaleAdmissions))
	}
	for _, name := range []string{telemetry.SaleAdmissions, telemetry.SaleWaiting, telemetry.SaleActivePasses} {
		points, _ := m.Points(t, name)
		for _, p := range points {
			if p.Attrs.Len() != 1 {
				t.Errorf("%s %v: want firelock.screening only", name, p)
			}
		}
	}
	// The run let the sale go: its gauges report nothing more.
	if points, _ := m.Points(t, telemetry.SaleWaiting); len(points) != 0 {
		t.Errorf("after the run, waiting still reports %v", points)
	}
	// The admitter's lock records into the same provider.
	if n := m.Value(t, telemetry.LockAcquireDuration, telemetry.Result.String(telemetry.Acquired)); n < 1 {
		t.Errorf("the admitter's lease was never counted acquired: %s", m.Dump(t, telemetry.LockAcquireDuration))
	}
}
