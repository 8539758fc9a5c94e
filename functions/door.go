package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/ticket"
)

// The functions of CONTRACT §13: CheckIn (scanners), TransferTicket (a
// ticket's user) and TicketKeys (anyone: the public keys).

type checkInRequest struct {
	ScreeningID string  `json:"screeningId"`
	Gate        string  `json:"gate"`
	Code        string  `json:"code"`
	Nonce       string  `json:"nonce"`
	Direction   string  `json:"direction"`
	ScannedAt   *string `json:"scannedAt"`
	Offline     bool    `json:"offline"`
}

// CheckIn is the scanners' HTTP function of CONTRACT §13: a ticket's code
// scanned at a gate, in or out. Only a caller whose ID token carries the
// custom claim scanner: true (or operator: true) may (403 not_scanner).
// Every scan the door decides is recorded; what is refused before the code
// is read (401, 403, 400 invalid_argument) writes nothing.
func (a *API) CheckIn(w http.ResponseWriter, r *http.Request) {
	var req checkInRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		who := callerOf(ctx)
		if !who.Scanner && !who.Operator {
			return 0, nil, errorf(http.StatusForbidden, "not_scanner", "only scanners check tickets in: the account needs the custom claim scanner: true (firelock scanners grant EMAIL), then a fresh ID token")
		}
		in := door.Request{Scanner: uid, ScreeningID: req.ScreeningID, Gate: req.Gate, Code: req.Code, Nonce: req.Nonce, Direction: req.Direction, Offline: req.Offline}
		if req.ScannedAt != nil {
			at, err := time.Parse(time.RFC3339Nano, *req.ScannedAt)
			if err != nil {
				return 0, nil, errorf(http.StatusBadRequest, "invalid_argument", "scannedAt %q is not an RFC 3339 time", *req.ScannedAt)
			}
			in.ScannedAt = at
		}
		scan, err := a.Door.CheckIn(ctx, in)
		result := scan.Result
		var refused *door.Refusal
		if errors.As(err, &refused) {
			result = refused.Result
		}
		a.Log.InfoContext(ctx, "scanned", "executionId", execID, "uid", uid, "screeningId", req.ScreeningID, "gate", req.Gate,
			"nonce", req.Nonce, "result", result, "code", door.Code(err), "offline", req.Offline)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, scan, nil
	})
}

type transferRequest struct {
	TicketID string `json:"ticketId"`
	ToEmail  string `json:"toEmail"`
}

// TransferTicket is the HTTP function of CONTRACT §13 that gives a ticket
// to another account: version + 1 and a new code, in one commit. It
// answers the ticket without its code, which only its new user reads.
func (a *API) TransferTicket(w http.ResponseWriter, r *http.Request) {
	var req transferRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if req.TicketID == "" || req.ToEmail == "" {
			return 0, nil, errorf(http.StatusBadRequest, "invalid_argument", "ticketId and toEmail are required")
		}
		t, err := a.Tickets.Transfer(ctx, uid, req.TicketID, req.ToEmail, a.Accounts)
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "ticket transferred", "executionId", execID, "uid", uid, "ticketId", t.ID, "to", t.UID, "version", t.Version)
		return http.StatusOK, t, nil
	})
}

// TicketKeysMaxAge is how long browsers and the CDN keep GET /TicketKeys.
// A rotation lists a new key at least this long before it signs
// (docs/door.md).
const TicketKeysMaxAge = 300 * time.Second

// TicketKeys is GET /TicketKeys of CONTRACT §13: the public keys of ticket
// codes as a JWK Set (RFC 8037), no token needed, cached by browsers and
// the CDN for TicketKeysMaxAge.
func (a *API) TicketKeys(w http.ResponseWriter, r *http.Request) {
	if a.getOnly(w, r) {
		return
	}
	if a.initErr != nil {
		a.writeError(w, r, "", fmt.Errorf("%w: %v", errNotReady, a.initErr))
		return
	}
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(TicketKeysMaxAge/time.Second)))
	answered(r, http.StatusOK, "ok")
	writeJSON(w, http.StatusOK, a.TicketKeySet.Public())
}

// doorError maps the errors of CONTRACT §13 (the door's and the tickets');
// nil for others.
func doorError(err error) *apiError {
	var refused *door.Refusal
	if errors.As(err, &refused) {
		ae := &apiError{status: http.StatusConflict, Code: door.Code(err), Msg: strings.TrimPrefix(err.Error(), "door: "),
			Result: refused.Result, TicketID: refused.TicketID, SeatID: refused.Seat}
		switch refused.Result {
		case door.ResultInvalid:
			ae.status = http.StatusBadRequest
		case door.ResultAlreadyIn, door.ResultConflict:
			ae.Gate = refused.Gate
			if !refused.At.IsZero() {
				at := refused.At.UTC()
				ae.At = &at
			}
		case door.ResultWrongScreening:
			ae.ScreeningID = refused.ScreeningID
		}
		return ae
	}
	switch {
	case errors.Is(err, door.ErrNonceReused):
		return errorf(http.StatusConflict, "nonce_reused", "%s", strings.TrimPrefix(err.Error(), "door: nonce reused: "))
	case errors.Is(err, door.ErrInvalidArgument):
		return errorf(http.StatusBadRequest, "invalid_argument", "%s", strings.TrimPrefix(err.Error(), door.ErrInvalidArgument.Error()+": "))
	case errors.Is(err, door.ErrInvalidDoor):
		return errorf(http.StatusBadRequest, "invalid_door", "%s", strings.TrimPrefix(err.Error(), "door: "))
	case errors.Is(err, ticket.ErrTicketNotFound):
		return errorf(http.StatusNotFound, "ticket_not_found", "no such ticket")
	case errors.Is(err, ticket.ErrUserNotFound):
		return errorf(http.StatusNotFound, "user_not_found", "no account has that email: the ticket goes to an existing account only")
	case errors.Is(err, ticket.ErrCancelled):
		return errorf(http.StatusConflict, "ticket_cancelled", "the ticket is cancelled: its booking was cancelled or refunded")
	case errors.Is(err, booking.ErrTicketUsed):
		return errorf(http.StatusConflict, "ticket_used", "%s", strings.TrimPrefix(err.Error(), "booking: "))
	}
	return nil
}

// authAccounts finds accounts by email for transfers (ticket.Users) with
// Firebase Auth's GetUserByEmail.
type authAccounts struct{ client *auth.Client }

func (u authAccounts) UIDByEmail(ctx context.Context, email string) (string, error) {
	rec, err := u.client.GetUserByEmail(ctx, email)
	switch {
	case auth.IsUserNotFound(err):
		return "", fmt.Errorf("%w: %s", ticket.ErrUserNotFound, email)
	case err != nil:
		return "", fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	return rec.UID, nil
}
