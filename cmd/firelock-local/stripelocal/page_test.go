package stripelocal

import (
	"slices"
	"testing"
	"time"
)

func TestCheckoutListsSeatsInSeatOrder(t *testing.T) {
	seats := []string{"E10", "E9", "AA2", "B1", "E1", "A12"} // as stored: sorted bytewise, or any order
	slices.SortFunc(seats, compareSeats)
	if want := []string{"A12", "AA2", "B1", "E1", "E9", "E10"}; !slices.Equal(seats, want) {
		t.Fatalf("sorted %v, want %v", seats, want)
	}
}

func TestCountdownIsMinutesAndSecondsNeverNegative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute:                      "10:00",
		9*time.Minute + 1500*time.Millisecond: "9:02",
		500 * time.Millisecond:                "0:01",
		0:                                     "0:00",
		-3 * time.Second:                      "0:00",
	} {
		if got := countdown(d); got != want {
			t.Errorf("countdown(%v) = %q, want %q", d, got, want)
		}
	}
}

// The checkout page writes the screening's time as every page does (issue
// #50.4): in its own zone when it names one, with the zone's short name.
func TestCheckoutWritesTheScreeningsTimeWithItsZone(t *testing.T) {
	at := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	if got, want := screeningWhen(map[string]any{"startsAt": at, "timeZone": "Europe/Berlin"}), "Sat 28 Nov, 16:00 CET"; got != want {
		t.Errorf("in Berlin: %q, want %q", got, want)
	}
	if got, want := screeningWhen(map[string]any{"startsAt": at, "timeZone": "Europe/London"}), "Sat 28 Nov, 15:00 GMT"; got != want {
		t.Errorf("in London: %q, want %q", got, want)
	}
	if got := screeningWhen(map[string]any{"startsAt": at, "timeZone": "Not/AZone"}); got == "" {
		t.Error("an unknown zone: no time at all, want the machine's zone")
	}
	if got := screeningWhen(map[string]any{}); got != "" {
		t.Errorf("no start: %q, want nothing", got)
	}
}
