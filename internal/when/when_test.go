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

// The one format of every page (issue #50.4), as web/src/app/when.ts writes it, in two zones.
func TestWordsGiveTheZonesShortName(t *testing.T) {
	winter := time.Date(2026, 11, 28, 15, 0, 5, 0, time.UTC)
	summer := time.Date(2026, 7, 4, 18, 30, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	for _, c := range []struct {
		at                  time.Time
		words, exact, clock string
	}{
		{winter.In(berlin), "Sat 28 Nov, 16:00 CET", "Sat 28 Nov, 16:00:05 CET", "16:00:05 CET"},
		{summer.In(berlin), "Sat 4 Jul, 20:30 CEST", "Sat 4 Jul, 20:30:00 CEST", "20:30:00 CEST"},
		{winter.In(london), "Sat 28 Nov, 15:00 GMT", "Sat 28 Nov, 15:00:05 GMT", "15:00:05 GMT"},
		{summer.In(london), "Sat 4 Jul, 19:30 BST", "Sat 4 Jul, 19:30:00 BST", "19:30:00 BST"},
		{winter.In(time.FixedZone("", 5*3600+1800)), "Sat 28 Nov, 20:30 GMT+5:30", "Sat 28 Nov, 20:30:05 GMT+5:30", "20:30:05 GMT+5:30"},
		{winter.In(time.FixedZone("", -3*3600)), "Sat 28 Nov, 12:00 GMT-3", "Sat 28 Nov, 12:00:05 GMT-3", "12:00:05 GMT-3"},
		{winter, "Sat 28 Nov, 15:00 UTC", "Sat 28 Nov, 15:00:05 UTC", "15:00:05 UTC"},
	} {
		if got := Words(c.at); got != c.words {
			t.Errorf("Words: %q, want %q", got, c.words)
		}
		if got := Exact(c.at); got != c.exact {
			t.Errorf("Exact: %q, want %q", got, c.exact)
		}
		if got := ClockWords(c.at); got != c.clock {
			t.Errorf("ClockWords: %q, want %q", got, c.clock)
		}
	}
}
