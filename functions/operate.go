package functions

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/sale"
)

type operateRequest struct {
	ScreeningID string          `json:"screeningId"`
	Action      string          `json:"action"`
	Sale        json.RawMessage `json:"sale"`
	Door        json.RawMessage `json:"door"` // configure-door (CONTRACT §13)
	UID         string          `json:"uid"`
	Reason      string          `json:"reason"`
}

// OperateSale is the operators' HTTP function of CONTRACT §8: configure,
// pause, resume, close or revoke a screening's sale, or configure its door
// (configure-door with door, CONTRACT §13). Only a caller whose ID
// token carries the custom claim operator: true may (403 not_operator);
// every accepted action that changes something is logged in saleLog.
func (a *API) OperateSale(w http.ResponseWriter, r *http.Request) {
	var req operateRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		who := callerOf(ctx)
		if !who.Operator {
			return 0, nil, errorf(http.StatusForbidden, "not_operator", "only operators run sales: the account needs the custom claim operator: true (firelock operators grant EMAIL), then a fresh ID token")
		}
		op := sale.Operation{ScreeningID: req.ScreeningID, Action: req.Action, UID: req.UID, Reason: req.Reason, By: sale.Operator{UID: who.UID, Email: who.Email}}
		if len(req.Sale) > 0 && string(req.Sale) != "null" {
			var err error
			if op.Sale, err = sale.DecodeSale(req.Sale); err != nil {
				return 0, nil, err
			}
		}
		if len(req.Door) > 0 && string(req.Door) != "null" {
			var err error
			if op.Door, err = door.DecodeJSON(req.Door); err != nil {
				return 0, nil, err
			}
		}
		out, err := a.Sales.Operate(ctx, op, a.Payments) // a paying hold's session is expired at once
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "operated a sale", "executionId", execID, "uid", uid, "screeningId", out.ScreeningID, "action", op.Action, "state", out.State, "changed", out.Changed, "reason", op.Reason)
		return http.StatusOK, out, nil
	})
}
