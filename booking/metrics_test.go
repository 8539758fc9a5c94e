package booking

import (
	"context"
	"testing"

	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
)

// Every operation counts once, when it returns, under its operation and
// the code of its answer (Code), and records its duration under its
// operation: nothing else rides along (no user, seat or screening).
func TestMetricsCountEachOperationUnderItsCode(t *testing.T) {
	fs, _ := newScreening(t)
	ctx := context.Background()
	m := telemetrytest.New(t)
	svc := New(fs, WithMeterProvider(m.Provider))
	t.Cleanup(svc.Close)

	b, _, err := svc.Book(ctx, "e1", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Book(ctx, "e2", Request{UID: "u2", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r2"}); Code(err) != "seat_taken" {
		t.Fatalf("booking a booked seat: %v, want seat_taken", err)
	}
	svc.Book(ctx, "e3", Request{UID: "u2", ScreeningID: "s1", Seats: []string{"Z9"}, RequestID: "r3"})   // no such seat
	svc.Book(ctx, "e4", Request{UID: "u2", ScreeningID: "nope", Seats: []string{"A2"}, RequestID: "r4"}) // no such screening
	h, _, err := svc.Hold(ctx, "e5", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A2"}, RequestID: "r5"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Hold(ctx, "e6", Request{UID: "u2", ScreeningID: "s1", Seats: []string{"A2"}, RequestID: "r6"}, 0); Code(err) != "seat_held" {
		t.Fatalf("holding a held seat: %v, want seat_held", err)
	}
	if _, err := svc.ExtendHold(ctx, "u1", h.ID, DefaultHold); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.ConfirmHold(ctx, "u1", h.ID); err != nil {
		t.Fatal(err)
	}
	svc.ConfirmHold(ctx, "u1", "no-such-hold")
	h2, _, err := svc.Hold(ctx, "e7", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A3"}, RequestID: "r7"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ReleaseHold(ctx, "u1", h2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, "u2", b.ID); Code(err) != "permission_denied" {
		t.Fatalf("cancelling another's booking: %v, want permission_denied", err)
	}
	if _, err := svc.Cancel(ctx, "u1", b.ID); err != nil {
		t.Fatal(err)
	}

	want := map[[2]string]float64{
		{"book", "ok"}: 1, {"book", "seat_taken"}: 1, {"book", "invalid_argument"}: 1, {"book", "screening_not_found"}: 1,
		{"hold", "ok"}: 2, {"hold", "seat_held"}: 1, {"extend", "ok"}: 1,
		{"confirm", "ok"}: 1, {"confirm", "hold_not_found"}: 1, {"release", "ok"}: 1,
		{"cancel", "permission_denied"}: 1, {"cancel", "ok"}: 1,
	}
	points, _ := m.Points(t, telemetry.BookingRequests)
	got := map[[2]string]float64{}
	for _, p := range points {
		op, _ := p.Attrs.Value(telemetry.Operation)
		code, _ := p.Attrs.Value(telemetry.Code)
		got[[2]string{op.AsString(), code.AsString()}] += p.Value
		if p.Attrs.Len() != 2 {
			t.Errorf("%v: want firelock.operation and firelock.code only", p)
		}
	}
	if len(got) != len(want) {
		t.Errorf("requests by (operation, code) = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("requests%v = %v, want %v", k, got[k], n)
		}
	}
	durations, unit := m.Points(t, telemetry.BookingDuration)
	if unit != "s" {
		t.Errorf("duration unit %q, want s", unit)
	}
	perOp := map[string]float64{}
	for _, p := range durations {
		op, _ := p.Attrs.Value(telemetry.Operation)
		perOp[op.AsString()] += p.Value
		if p.Attrs.Len() != 1 || p.Sum <= 0 {
			t.Errorf("%v (sum %v): want firelock.operation only, and a positive duration", p, p.Sum)
		}
	}
	if want := map[string]float64{"book": 4, "hold": 3, "extend": 1, "confirm": 2, "release": 1, "cancel": 2}; len(perOp) != len(want) {
		t.Errorf("durations per operation = %v, want %v", perOp, want)
	} else {
		for op, n := range want {
			if perOp[op] != n {
				t.Errorf("durations of %s = %v, want %v", op, perOp[op], n)
			}
		}
	}
}
