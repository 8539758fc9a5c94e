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
