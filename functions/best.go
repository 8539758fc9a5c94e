package functions

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/firelock/firelock/booking"
)

// Best available seats (CONTRACT §11): HoldSeats with count in place of
// seats. count and together are decoded here, strictly, so that each wrong
// value gets its own message instead of encoding/json's.

var wholeNumber = regexp.MustCompile(`^-?[0-9]+$`)

// best is the request's best-available form: ok false for a request of
// seats. It refuses count and seats together, together without count, and
// a count or together of the wrong type or range.
func (req holdRequest) best(uid string) (booking.BestRequest, bool, error) {
	if req.Count == nil {
		if req.Together != nil {
			return booking.BestRequest{}, false, errorf(http.StatusBadRequest, "invalid_argument", "together goes with count (best available seats), not with seats")
		}
		return booking.BestRequest{}, false, nil
	}
	if req.Seats != nil {
		return booking.BestRequest{}, false, errorf(http.StatusBadRequest, "invalid_argument", "send seats or count, not both: seats names the seats, count asks for the best available")
	}
	raw := string(req.Count)
	n, err := strconv.Atoi(raw)
	if !wholeNumber.MatchString(raw) || err != nil || n < 1 || n > booking.MaxSeats {
		return booking.BestRequest{}, false, errorf(http.StatusBadRequest, "invalid_argument", "count must be a whole number from 1 to %d, not %s", booking.MaxSeats, shown(raw))
	}
	together := true
	switch string(req.Together) {
	case "", "true":
	case "false":
		together = false
	default:
		return booking.BestRequest{}, false, errorf(http.StatusBadRequest, "invalid_argument", "together must be true or false, not %s", shown(string(req.Together)))
	}
	return booking.BestRequest{UID: uid, ScreeningID: req.ScreeningID, Count: n, Apart: !together, RequestID: req.RequestID}, true, nil
}

// shown is a JSON value as a message quotes it: at most 40 characters.
func shown(raw string) string {
	if len(raw) > 40 {
		return raw[:37] + "..."
	}
	return raw
}

// noSeatsError is the answer of no_seats_together: 409 with the seats left.
func noSeatsError(err error) *apiError {
	var ne *booking.NoSeatsError
	if !errors.As(err, &ne) {
		return errorf(http.StatusConflict, "no_seats_together", "no seats together are left")
	}
	left := ne.SeatsLeft
	msg := "no " + strconv.Itoa(ne.Count) + " free seats side by side are left in one row"
	if ne.Apart {
		msg = "fewer than " + strconv.Itoa(ne.Count) + " seats are left"
	}
	return &apiError{status: http.StatusConflict, Code: "no_seats_together", Msg: msg, SeatsLeft: &left}
}
