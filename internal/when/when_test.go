package when

import (
	"testing"
	"time"
)

func TestFormatShowsTheZoneAsAnOffset(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		loc         *time.Location
		full, clock string
	}{
		{time.UTC, "2026-03-02 10:00:00 UTC", "10:00:00 UTC"},
		{time.FixedZone("CET", 3600), "2026-03-02 11:00:00 UTC+01:00", "11:00:00 UTC+01:00"},
		{time.FixedZone("", -(3*3600 + 1800)), "2026-03-02 06:30:00 UTC-03:30", "06:30:00 UTC-03:30"},
		{time.FixedZone("IST", 5*3600+1800), "2026-03-02 15:30:00 UTC+05:30", "15:30:00 UTC+05:30"},
	} {
		if got := Format(at.In(c.loc)); got != c.full {
			t.Errorf("Format in %v: %q, want %q", c.loc, got, c.full)
		}
		if got := Clock(at.In(c.loc)); got != c.clock {
			t.Errorf("Clock in %v: %q, want %q", c.loc, got, c.clock)
		}
	}
}
