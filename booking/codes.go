package booking

import (
	"context"
	"errors"

	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Codes is every value Code returns: "ok" and the CONTRACT §3, §7, §11 and
// §13 error codes a booking operation can end with.
var Codes = []string{
	"ok", "invalid_argument", "permission_denied", "screening_not_found", "booking_not_found", "hold_not_found",
	"seat_taken", "seat_held", "seat_busy", "screening_started", "hold_expired",
	"sale_not_open", "not_admitted", "seat_limit", "sale_closed", "payment_required", "hold_confirmed", "no_seats_together", "ticket_used", "unavailable", "internal",
}

// Code is the CONTRACT §3 (or §7, for a gate's refusal) code of the error a
// booking operation returned: "ok" for nil, "unavailable" for a deadline,
// a cancellation or a database that is busy or out of reach (safe to
// retry), "internal" for anything else. It is the one mapping from errors
// to codes: the HTTP functions answer with it and firelock.booking.requests
// counts under it, so the two always agree.
func Code(err error) string {
	var se *SeatsError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &se) && errors.Is(err, ErrSeatTaken):
		return "seat_taken"
	case errors.As(err, &se) && errors.Is(err, ErrSeatHeld):
		return "seat_held"
	case errors.As(err, &se):
		return "seat_busy"
	case errors.Is(err, ErrScreeningStarted):
		return "screening_started"
	case errors.Is(err, ErrHoldNotFound):
		return "hold_not_found"
	case errors.Is(err, ErrHoldExpired):
		return "hold_expired"
	case errors.Is(err, ErrInvalidArgument), errors.Is(err, lock.ErrInvalidKey):
		return "invalid_argument"
	case errors.Is(err, ErrScreeningNotFound):
		return "screening_not_found"
	case errors.Is(err, ErrBookingNotFound):
		return "booking_not_found"
	case errors.Is(err, ErrForbidden):
		return "permission_denied"
	case errors.Is(err, ErrSaleNotOpen):
		return "sale_not_open"
	case errors.Is(err, ErrNotAdmitted):
		return "not_admitted"
	case errors.Is(err, ErrSeatLimit):
		return "seat_limit"
	case errors.Is(err, ErrSaleClosed):
		return "sale_closed"
	case errors.Is(err, ErrPaymentRequired):
		return "payment_required"
	case errors.Is(err, ErrHoldConfirmed):
		return "hold_confirmed"
	case errors.Is(err, ErrNoSeatsTogether):
		return "no_seats_together"
	case errors.Is(err, ErrTicketUsed):
		return "ticket_used"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "unavailable"
	}
	// A call the database cancelled or timed out (under load the emulator
	// answers "Canceled: call already cancelled") is no fault of the
	// caller's, and every operation is safe to retry.
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted:
		return "unavailable"
	}
	return "internal"
}
