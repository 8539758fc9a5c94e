package functions_test

import (
	"testing"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
	"github.com/firelock/firelock/payment"
)

// What a function answers and what firelock.booking.requests counts agree:
// a 409 seat_taken counts under firelock.code="seat_taken", and every
// answer of a booking function counts once under its own code.
func TestBookingAnswersCountUnderTheirCodes(t *testing.T) {
	e := newEnv(t)
	m := telemetrytest.New(t)
	// A booking service recording into m, wired as NewAPI wires one: the
	// payments (CancelBooking, ReleaseHold) go through it too.
	ledger := payment.NewLedger(e.fs)
	e.api.Bookings = booking.New(e.fs, booking.WithGate(e.api.Sales), booking.WithTill(ledger), booking.WithMeterProvider(m.Provider))
	e.api.Payments = payment.New(e.fs, e.api.Bookings, ledger, payment.ConfigFromEnv())
	t.Cleanup(e.api.Bookings.Close)

	answers := []struct {
		op string
		r  response
	}{
		{"book", e.book("alice", "m1", "F12")},
		{"book", e.book("bob", "m2", "F12")},
		{"book", e.book("bob", "m3", "Z99")},
		{"hold", e.call("HoldSeats", token(t, "bob"), map[string]any{"screeningId": "s1", "seats": []string{"F13"}, "requestId": "m4"})},
		{"confirm", e.call("ConfirmHold", token(t, "bob"), map[string]any{"holdId": "nope"})},
		{"cancel", e.call("CancelBooking", token(t, "bob"), map[string]any{"bookingId": "nope"})},
	}
	if r := answers[1].r; r.Status != 409 || r.code() != "seat_taken" {
		t.Fatalf("booking a booked seat answered %d %q, want 409 seat_taken", r.Status, r.code())
	}
	if n := m.Value(t, telemetry.BookingRequests, telemetry.Operation.String("book"), telemetry.Code.String("seat_taken")); n != 1 {
		t.Fatalf("seat_taken counted %v times, want 1: %s", n, m.Dump(t, telemetry.BookingRequests))
	}
	want := map[[2]string]float64{}
	for _, a := range answers {
		code := a.r.code()
		if code == "" {
			code = "ok"
		}
		want[[2]string{a.op, code}]++
	}
	for k, n := range want {
		if got := m.Value(t, telemetry.BookingRequests, telemetry.Operation.String(k[0]), telemetry.Code.String(k[1])); got != n {
			t.Errorf("answered %v %v times, counted %v: %s", k, n, got, m.Dump(t, telemetry.BookingRequests))
		}
	}
	if got := m.Value(t, telemetry.BookingRequests); got != float64(len(answers)) {
		t.Errorf("%v requests counted for %d answers", got, len(answers))
	}
}
