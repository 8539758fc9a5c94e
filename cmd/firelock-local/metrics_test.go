package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
)

// The local functions server serves the metrics of CONTRACT §9 at /metrics
// in the Prometheus text format: after a booking, and a second one of the
// same seat (409 seat_taken), their series are there under the exporter's
// standard names.
func TestMetricsShowABookingAndA409(t *testing.T) {
	ctx := context.Background()
	project, port := functionsServer(t)
	fs := firelocktest.NewClientFor(t, project)
	screening := fmt.Sprintf("metrics-%d", time.Now().UnixNano())
	if _, err := fs.Collection(booking.Screenings).Doc(screening).Set(ctx, booking.Screening{
		Title: "metrics", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 5,
	}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := emulators.SignIn("metrics@example.com", "metrics-password")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	book := func(requestID string) int {
		body := fmt.Sprintf(`{"screeningId": %q, "seats": ["A1"], "requestId": %q}`, screening, requestID)
		req, _ := http.NewRequest(http.MethodPost, base+"/BookSeats", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("BookSeats %s: %d %s", requestID, resp.StatusCode, b)
		return resp.StatusCode
	}
	if code := book("m1"); code != http.StatusCreated {
		t.Fatalf("booking answered %d, want 201", code)
	}
	if code := book("m2"); code != http.StatusConflict {
		t.Fatalf("booking a booked seat answered %d, want 409", code)
	}

	resp, err := http.Get(base + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix([]byte(resp.Header.Get("Content-Type")), []byte("text/plain")) {
		t.Fatalf("%s: %d %s", MetricsPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`(?m)^firelock_booking_requests_total\{[^}]*firelock_code="ok",firelock_operation="book"[^}]*\} [1-9]`,
		`(?m)^firelock_booking_requests_total\{[^}]*firelock_code="seat_taken",firelock_operation="book"[^}]*\} [1-9]`,
		`(?m)^firelock_booking_duration_seconds_bucket\{[^}]*firelock_operation="book"[^}]*le="0\.005"`,
		`(?m)^firelock_booking_duration_seconds_count\{[^}]*firelock_operation="book"[^}]*\} [2-9]`,
		`(?m)^# TYPE firelock_booking_requests_total counter$`,
	} {
		if !regexp.MustCompile(want).Match(b) {
			t.Errorf("no line matching %s in %s:\n%s", want, MetricsPath, b)
		}
	}
}
