package functions

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/firelock/firelock/sale"
)

type joinRequest struct {
	ScreeningID string `json:"screeningId"`
}

// queueAnswer is JoinQueue's answer (CONTRACT §7).
type queueAnswer struct {
	ScreeningID string     `json:"screeningId"`
	QueueID     string     `json:"queueId"`
	Status      string     `json:"status"`
	PassUntil   *time.Time `json:"passUntil,omitempty"`
}

// JoinQueue is the HTTP function of CONTRACT §7: 201 with a new place in
// the queue of the screening's sale, 200 with the place the caller has.
func (a *API) JoinQueue(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	a.serveGuarded(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if req.ScreeningID == "" {
			return 0, nil, errorf(http.StatusBadRequest, "invalid_argument", "screeningId is required")
		}
		who := callerOf(ctx)
		p, created, err := a.Sales.Join(ctx, uid, req.ScreeningID, sale.JoinerEmail(who.Email), sale.JoinerVerified(who.EmailVerified),
			sale.JoinerAppCheck(who.AppCheck))
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "joined the queue", "executionId", execID, "queueId", p.ID, "uid", uid, "screeningId", p.ScreeningID, "status", p.Status, "created", created)
		answer := queueAnswer{ScreeningID: p.ScreeningID, QueueID: p.ID, Status: p.Status, PassUntil: p.PassUntil}
		if created {
			return http.StatusCreated, answer, nil
		}
		return http.StatusOK, answer, nil
	})
}

const saleClosedMessage = "the sale is closed: it takes no new joins, holds or bookings (live holds may still be confirmed)"

// saleError maps the errors of package sale (CONTRACT §7, §8); nil for any
// other error. The Gate's answers to holds and bookings are booking
// errors, mapped by booking.Code (toAPIError).
func saleError(err error) *apiError {
	switch {
	case errors.Is(err, sale.ErrNoSale):
		return errorf(http.StatusConflict, "no_sale", "the screening has no sale")
	case errors.Is(err, sale.ErrMisconfigured):
		// Nobody can join until an admin fixes it; the message says what.
		return errorf(http.StatusConflict, "no_sale", "%s", strings.TrimPrefix(err.Error(), "sale: "))
	case errors.Is(err, sale.ErrEmailNotVerified):
		return errorf(http.StatusForbidden, "email_not_verified", "this sale lets in verified email addresses only: verify yours (the link in the verification email), sign in again, then join")
	case errors.Is(err, sale.ErrSoldOut):
		return errorf(http.StatusConflict, "sold_out", "sold out: no seat is free and no hold is live")
	case errors.Is(err, sale.ErrJoinTimedOut):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the queue is busy; try again")
	case errors.Is(err, sale.ErrClosed): // booking's refusals (sale_not_open, ...) are booking.Code's
		return errorf(http.StatusConflict, "sale_closed", saleClosedMessage)
	case errors.Is(err, sale.ErrInvalidSale):
		return errorf(http.StatusBadRequest, "invalid_sale", "%s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "sale: invalid sale: "), "sale: "))
	case errors.Is(err, sale.ErrStarted):
		return errorf(http.StatusConflict, "sale_started", "%s", strings.TrimPrefix(err.Error(), "sale: "))
	}
	return nil
}
