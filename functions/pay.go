package functions

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/payment"
)

type checkoutRequest struct {
	HoldID    string `json:"holdId"`
	ReturnURL string `json:"returnUrl"`
}

// CheckoutHold is the HTTP function of CONTRACT §10: 201 with the Checkout
// Session that pays for the caller's hold (the hold turns paying), 200 with
// the same for a retry.
func (a *API) CheckoutHold(w http.ResponseWriter, r *http.Request) {
	var req checkoutRequest
	a.serveGuarded(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if err := requireHoldID(req.HoldID); err != nil {
			return 0, nil, err
		}
		origin, err := a.returnOrigin(r, req.ReturnURL)
		if err != nil {
			return 0, nil, err
		}
		c, created, err := a.Payments.Checkout(ctx, payment.CheckoutRequest{UID: uid, HoldID: req.HoldID, ReturnURL: req.ReturnURL, Origin: origin})
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "checkout", "executionId", execID, "holdId", c.HoldID, "uid", uid, "amount", c.Amount, "currency", c.Currency, "heldUntil", c.HeldUntil, "created", created)
		if created {
			return http.StatusCreated, c, nil
		}
		return http.StatusOK, c, nil
	})
}

// returnOrigin checks where Stripe's page may send the buyer back: a
// returnUrl must be an http(s) URL on an origin the deployment allows
// (CORS), or Stripe would redirect the buyer anywhere a caller names.
// Without one, the caller's own origin is used (it must be allowed too).
func (a *API) returnOrigin(r *http.Request, returnURL string) (string, error) {
	if returnURL == "" {
		origin := r.Header.Get("Origin")
		if origin == "" || !a.CORS.allows(origin) {
			return "", errorf(http.StatusBadRequest, "invalid_argument", "returnUrl is required (the page Stripe sends the buyer back to, on an allowed origin)")
		}
		return origin, nil
	}
	u, err := url.Parse(returnURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(returnURL) > 2000 {
		return "", errorf(http.StatusBadRequest, "invalid_argument", "returnUrl must be an absolute http(s) URL of at most 2000 bytes")
	}
	if origin := u.Scheme + "://" + u.Host; !a.CORS.allows(origin) {
		return "", errorf(http.StatusBadRequest, "invalid_argument", "returnUrl's origin %s is not one this deployment allows (%s)", origin, AllowedOriginsEnv)
	}
	return "", nil
}

// MaxWebhookBody bounds a Stripe event's body (Stripe's events are a few
// kilobytes; a Checkout Session with many line items, tens).
const MaxWebhookBody = 512 << 10

// StripeWebhook is the HTTP function Stripe calls with its events
// (CONTRACT §10). It takes no ID token: the Stripe-Signature header proves
// the body. 200 once the event is done (applied here or before, or an event
// firelock ignores); 400 for a bad signature or a body that is not an
// event; 503 with Retry-After when it could not be applied yet, so that
// Stripe delivers it again.
func (a *API) StripeWebhook(w http.ResponseWriter, r *http.Request) {
	r = withTrace(r, a.Project)
	r, span := startSpan(r)
	defer span.End()
	execID, _ := lock.NewExecutionID()
	if a.initErr != nil {
		a.writeError(w, r, execID, errNotReady)
		return
	}
	if r.Method != http.MethodPost {
		a.writeError(w, r, execID, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "use POST"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.writeError(w, r, execID, errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "the body is larger than %d bytes", MaxWebhookBody))
			return
		}
		a.writeError(w, r, execID, errorf(http.StatusBadRequest, "invalid_argument", "the body could not be read: %v", err))
		return
	}
	rc, err := a.Payments.HandleWebhook(r.Context(), execID, body, r.Header.Get("Stripe-Signature"))
	if err != nil {
		a.writeError(w, r, execID, err)
		return
	}
	a.Log.InfoContext(r.Context(), "stripe event", "executionId", execID, "eventId", rc.EventID, "type", rc.Type, "holdId", rc.HoldID, "outcome", rc.Outcome)
	answered(r, http.StatusOK, "ok")
	writeJSON(w, http.StatusOK, map[string]any{"received": true, "outcome": rc.Outcome})
}

// paymentError maps the errors of package payment (CONTRACT §10); nil for
// any other error.
func paymentError(err error) *apiError {
	msg := func(prefix string) string { return strings.TrimPrefix(strings.TrimPrefix(err.Error(), prefix), ": ") }
	switch {
	case errors.Is(err, payment.ErrInvalidSignature):
		return errorf(http.StatusBadRequest, "invalid_signature", "%s", msg("payment: invalid signature"))
	case errors.Is(err, payment.ErrBadEvent):
		return errorf(http.StatusBadRequest, "invalid_argument", "%s", msg("payment: bad event"))
	case errors.Is(err, payment.ErrNotPriced):
		return errorf(http.StatusConflict, "not_priced", "%s", msg("payment: the screening is not priced"))
	case errors.Is(err, payment.ErrStripeUnavailable):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the payment service cannot be reached; nothing changed: try again")
	case errors.Is(err, payment.ErrNotConfigured):
		return errorf(http.StatusServiceUnavailable, "unavailable", "%s", msg("payment: payments are not configured"))
	case errors.Is(err, jobs.ErrInProgress):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the event is being applied by another delivery; try again")
	}
	return nil
}
