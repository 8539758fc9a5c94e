// Package when writes instants the one way operators read them, in the
// sale report and in make run's banner, as the web console writes them
// (web/src/app/when.ts): "2026-03-02 11:00:00 UTC+01:00". The zone is
// always shown, as an offset from UTC, which no abbreviation makes
// ambiguous (IST is three zones).
package when

import (
	"fmt"
	"time"
)

// Format is t in its location: date, time to the second, zone.
func Format(t time.Time) string { return t.Format("2006-01-02 15:04:05") + " " + Zone(t) }

// Clock is t's time of day in its location, with the zone: "11:00:00 UTC+01:00".
func Clock(t time.Time) string { return t.Format("15:04:05") + " " + Zone(t) }

// Zone is t's offset from UTC: "UTC", "UTC+01:00", "UTC-03:30".
func Zone(t time.Time) string {
	_, off := t.Zone()
	if off == 0 {
		return "UTC"
	}
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off%3600/60)
}
