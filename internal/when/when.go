// Package when writes instants with their zone.
//
// Words, Exact and Clock (issue #50.4) are the one format every page
// shows, the sale report and the checkout page as the web app
// (web/src/app/when.ts, Intl.DateTimeFormat in British English): "Sat 28
// Nov, 16:00 CET", to the second in a log, with the zone's short name
// (Short: "CET", or "GMT+5:30" for a zone that has none).
//
// Format, Clock and Zone write the zone as an offset from UTC, which no
// abbreviation makes ambiguous (IST is three zones): "2026-03-02 11:00:00
// UTC+01:00", for make run's banner and the report's JSON.
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

// Words is t in its location as people read a screening's time: "Sat 28 Nov, 16:00 CET".
func Words(t time.Time) string { return t.Format("Mon 2 Jan, 15:04") + " " + Short(t) }

// Exact is Words to the second: "Sat 28 Nov, 16:00:05 CET".
func Exact(t time.Time) string { return t.Format("Mon 2 Jan, 15:04:05") + " " + Short(t) }

// ClockWords is t's time of day with the zone's short name: "16:00:05 CET".
func ClockWords(t time.Time) string { return t.Format("15:04:05") + " " + Short(t) }

// Short is the zone's short name at t, as Intl.DateTimeFormat's en-GB
// "short" writes it: its abbreviation ("CET", "UTC"), or, for a zone that
// has none, the offset from GMT ("GMT+5:30", "GMT-3").
func Short(t time.Time) string {
	name, off := t.Zone()
	if name != "" && name[0] != '+' && name[0] != '-' {
		return name
	}
	if off == 0 {
		return "GMT"
	}
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	if m := off % 3600 / 60; m != 0 {
		return fmt.Sprintf("GMT%c%d:%02d", sign, off/3600, m)
	}
	return fmt.Sprintf("GMT%c%d", sign, off/3600)
}
