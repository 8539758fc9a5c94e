package report

// Issue #48, item 9: the report's percentiles on small samples, and a
// screening without a sale.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/sale"
)

// Quantile is the nearest rank: the smallest value that at least q of the
// sample are at or below, so every percentile is a time someone had. Two
// buyers who waited 1.1 s and 9.8 s have a p90 of 9.8 s, not 1.1 s.
func TestQuantileIsTheNearestRank(t *testing.T) {
	s := func(secs ...float64) []time.Duration {
		out := make([]time.Duration, len(secs))
		for i, v := range secs {
			out[i] = time.Duration(v * float64(time.Second))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   float64 // seconds
	}{
		{"empty", nil, 0.5, 0},
		{"one, p50", s(4), 0.5, 4},
		{"one, p90", s(4), 0.9, 4},
		{"two, p50: the lower", s(1.1, 9.8), 0.5, 1.1},
		{"two, p90: the upper", s(1.1, 9.8), 0.9, 9.8},
		{"two, p0: the least", s(1.1, 9.8), 0, 1.1},
		{"two, p100: the most", s(1.1, 9.8), 1, 9.8},
		{"three, p50: the middle", s(1, 2, 3), 0.5, 2},
		{"three, p90", s(1, 2, 3), 0.9, 3},
		{"four, p50: the second", s(1, 2, 3, 4), 0.5, 2},
		{"four, p75: the third exactly", s(1, 2, 3, 4), 0.75, 3},
		{"four, p90", s(1, 2, 3, 4), 0.9, 4},
		{"ten, p90: the ninth", s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9},
		{"ten, p91: the tenth", s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.91, 10},
		{"eight, p90: 7 of 8 is under 90%", s(1, 1, 1, 1, 12, 40.5, 41.5, 110.5), 0.9, 110.5},
	} {
		if got := Quantile(tc.sorted, tc.q).Seconds(); got != tc.want {
			t.Errorf("%s: Quantile(%v, %v) = %v s, want %v s", tc.name, tc.sorted, tc.q, got, tc.want)
		}
	}
	// A hundred samples 1..100: p99 is 99, p50 50, however q*n rounds.
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Second
	}
	for q, want := range map[float64]float64{0.5: 50, 0.9: 90, 0.99: 99, 0.07: 7, 0.29: 29, 0.57: 57} {
		if got := Quantile(hundred, q).Seconds(); got != want {
			t.Errorf("Quantile(1..100 s, %v) = %v s, want %v s", q, got, want)
		}
	}
}

// A screening without a sale has no report: Read says so with
// sale.ErrNoSale, rather than reporting an empty sale of state "".
func TestTheReportOfAScreeningWithoutASale(t *testing.T) {
	fs := firelocktest.NewClient(t)
	ctx := context.Background()
	if _, err := fs.Collection(booking.Screenings).Doc("free").Set(ctx, booking.Screening{
		Title: "Nosferatu", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 4}); err != nil {
		t.Fatal(err)
	}
	if r, err := Build(ctx, fs, "free", time.Now()); !errors.Is(err, sale.ErrNoSale) {
		t.Fatalf("the report of a screening without a sale: %v, %v; want sale.ErrNoSale", r, err)
	}
}

// The page writes its times in the screening's own zone when it names one
// (issue #50.4), with the zone's short name, whatever the operator's zone.
func TestTheReportWritesTimesInTheScreeningsZone(t *testing.T) {
	fs := firelocktest.NewClient(t)
	ctx := context.Background()
	opens := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	if _, err := fs.Collection(booking.Screenings).Doc("zoned").Set(ctx, map[string]any{
		"title": "Nosferatu", "startsAt": opens.Add(2 * time.Hour), "rows": []string{"A"}, "seatsPerRow": 4, "timeZone": "America/New_York",
		"sale": map[string]any{"opensAt": opens, "admitPerMinute": 60, "maxActive": 2}}); err != nil {
		t.Fatal(err)
	}
	r, err := Build(ctx, fs, "zoned", opens.Add(time.Minute).In(time.FixedZone("CET", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Opening().Label, "Opened Sat 28 Nov, 10:00:00 EST"; got != want {
		t.Errorf("the opening: %q, want %q", got, want)
	}
	if got := r.ZoneName(); got != "EST" {
		t.Errorf("the page's zone: %q, want EST", got)
	}
}
