package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
	"github.com/firelock/firelock/lock"
)

// Each TryAcquire, and each Acquire as a whole (not each of its tries),
// records one duration under its result.
func TestMetricsRecordEachAcquisitionOnceByResult(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	m := telemetrytest.New(t)
	a := newLocker(t, c, lock.WithMeterProvider(m.Provider))
	b := newLocker(t, c, lock.WithMeterProvider(m.Provider))
	count := func(result string) float64 {
		return m.Value(t, telemetry.LockAcquireDuration, telemetry.Result.String(result))
	}

	lease, err := a.TryAcquire(ctx, "metrics-results")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	if _, err := b.TryAcquire(ctx, "metrics-results"); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("second TryAcquire: %v, want ErrHeld", err)
	}
	if _, err := b.TryAcquire(ctx, "no/such/key"); !errors.Is(err, lock.ErrInvalidKey) {
		t.Fatalf("TryAcquire of a bad key: %v, want ErrInvalidKey", err)
	}
	if got := [3]float64{count(telemetry.Acquired), count(telemetry.Held), count(telemetry.Error)}; got != [3]float64{1, 1, 1} {
		t.Fatalf("acquired, held, error = %v, want one each; %s", got, m.Dump(t, telemetry.LockAcquireDuration))
	}

	// Acquire waits, trying many times, and gives up when ctx ends: one
	// duration, held, at least as long as the wait.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(wctx, "metrics-results"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a held key: %v, want the deadline", err)
	}
	if got := count(telemetry.Held); got != 2 {
		t.Fatalf("held = %v after an Acquire that waited, want 2 (one per call, not per try); %s", got, m.Dump(t, telemetry.LockAcquireDuration))
	}
	points, unit := m.Points(t, telemetry.LockAcquireDuration)
	if unit != "s" {
		t.Errorf("unit %q, want s", unit)
	}
	for _, p := range points {
		if v, _ := p.Attrs.Value(telemetry.Result); v.AsString() == telemetry.Held && p.Sum < 0.3 {
			t.Errorf("held durations add up to %.3fs, want at least the 0.3 s Acquire waited", p.Sum)
		}
		if p.Attrs.Len() != 1 {
			t.Errorf("point %v: want firelock.result only (never a key or an owner)", p)
		}
	}

	// An Acquire that waits and gets the key counts as acquired.
	go func() { time.Sleep(100 * time.Millisecond); lease.Release(ctx) }()
	got, err := b.Acquire(ctx, "metrics-results")
	if err != nil {
		t.Fatal(err)
	}
	got.Release(ctx)
	if n := count(telemetry.Acquired); n != 2 {
		t.Fatalf("acquired = %v, want 2", n)
	}
}

// An Acquire that found the key held and whose context ends while a
// later try is on the wire gave up waiting: it counts as held, as one whose
// context ends between tries does, never as an error. Every answer comes
// 300 ms late, so the deadline strikes inside a try (the waits between
// tries are at most 3 ms), and the first try is answered well before the
// deadline.
func TestMetricsCountAnAcquireWhoseDeadlineStrikesMidTryAsHeld(t *testing.T) {
	t.Parallel() // its own project, proxy and meter provider; built for a loaded machine (above)
	m := telemetrytest.New(t)
	p, l, direct := proxied(t, lock.WithMeterProvider(m.Provider), lock.WithBackoff(time.Millisecond, 2*time.Millisecond))
	ctx := context.Background()
	holder := newLocker(t, direct)
	lease, err := holder.TryAcquire(ctx, "metrics-mid-try")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	// Its connection opened and its commit client proven before answers
	// slow down (a dial and two RPCs, each answer 300 ms late, would take
	// half the budget of the first try, which tests beside it on a loaded
	// machine stretched past the deadline).
	warmUp(t, l)
	if err := p.Delay(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// 5 s: every try takes at least 300 ms on the wire and the waits are
	// milliseconds, so the deadline still strikes inside a try; the first
	// try (two answers, 600 ms late in all) has time to be answered on a
	// loaded machine (CI's run of 11-29 13:20 cut it off at 2 s: an error,
	// not held).
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := l.Acquire(wctx, "metrics-mid-try"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a held key: %v, want the deadline", err)
	}
	held := m.Value(t, telemetry.LockAcquireDuration, telemetry.Result.String(telemetry.Held))
	failed := m.Value(t, telemetry.LockAcquireDuration, telemetry.Result.String(telemetry.Error))
	if held != 1 || failed != 0 {
		t.Fatalf("held, error = %v, %v, want 1, 0; %s", held, failed, m.Dump(t, telemetry.LockAcquireDuration))
	}
}

// A lease taken over after it ended counts as lost once, however many of
// its operations find it lost; leases released cleanly never count.
func TestMetricsCountALostLeaseOnce(t *testing.T) {
	t.Parallel() // its own project and meter provider; it waits a lease out, which a loaded machine only lengthens
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	m := telemetrytest.New(t)
	a := newLocker(t, c, lock.WithMeterProvider(m.Provider), lock.WithLeaseDuration(time.Second))
	b := newLocker(t, c, lock.WithMeterProvider(m.Provider))

	clean, err := a.TryAcquire(ctx, "metrics-clean")
	if err != nil {
		t.Fatal(err)
	}
	if err := clean.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := a.TryAcquire(ctx, "metrics-lost")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseEnd(time.Second)
	other, err := b.TryAcquire(ctx, "metrics-lost")
	if err != nil {
		t.Fatalf("takeover after the lease ended: %v", err)
	}
	if n := m.Value(t, telemetry.LockLeaseLost); n != 0 {
		t.Fatalf("lease.lost = %v before the holder found out, want 0", n)
	}
	for range 2 {
		if err := lease.Renew(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Renew of a lease taken over: %v, want ErrNotHeld", err)
		}
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release of a lease taken over: %v, want ErrNotHeld", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := m.Value(t, telemetry.LockLeaseLost); n != 1 {
		t.Fatalf("lease.lost = %v, want 1: %s", n, m.Dump(t, telemetry.LockLeaseLost))
	}
}
