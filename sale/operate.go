package sale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Running a sale (CONTRACT §8): the operators' actions.
const (
	ActionConfigure = "configure"
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionClose     = "close"
	ActionRevoke    = "revoke"
	// ActionConfigureDoor sets the screening's door (CONTRACT §13):
	// screenings/{id}.door {opensAt, gates, reentry}. It needs no sale, and
	// is accepted after a close and after the screening's start.
	ActionConfigureDoor = "configure-door"
)

// Actions lists the actions Operate knows, in the order operators meet them.
var Actions = []string{ActionConfigure, ActionPause, ActionResume, ActionClose, ActionRevoke, ActionConfigureDoor}

// Log holds each sale's operations log: saleLog/{screeningId}/entries/{auto}
// {at, uid, email, action, reason?, before?, after?}, appended in the commit
// of every accepted action that changed something.
const Log = "saleLog"

// Operator is who runs an action: a Firebase Auth user with the custom
// claim operator: true, or the command line (its UID says so).
type Operator struct {
	UID   string
	Email string
}

// Operation is one action on a screening's sale.
type Operation struct {
	ScreeningID string
	Action      string
	// Sale (configure) holds §7 fields as decoded JSON: opensAt an RFC 3339
	// string, the others numbers (DecodeSale). They are merged over the
	// sale's §7 fields as stored: a field left out keeps its value, null
	// resets passSeconds or maxSeatsPerUser to its default, and a stored
	// field §7 does not know is dropped. A new sale needs opensAt,
	// admitPerMinute and maxActive.
	Sale map[string]any
	// Door (configure-door) holds the door's fields as decoded JSON
	// (door.DecodeJSON): opensAt an RFC 3339 string, gates a list of names,
	// reentry true or false. They are merged over the door as stored; a
	// new door needs opensAt and gates.
	Door   map[string]any
	UID    string // revoke: whose pass ends
	Reason string
	By     Operator
}

// Outcome is a sale after an action: its state (as the admitter will
// publish it within 2 s) and its fields as stored (opensAt in RFC 3339).
type Outcome struct {
	ScreeningID string `json:"screeningId"`
	// State and Sale are the sale's; a screening without a sale (a
	// configure-door of one) has neither.
	State string         `json:"state,omitempty"`
	Sale  map[string]any `json:"sale,omitempty"`
	// Door is the screening's door (opensAt in RFC 3339), if it has one.
	Door map[string]any `json:"door,omitempty"`
	// Changed is false for an action that changed nothing (pausing a paused
	// sale): it was answered and not logged.
	Changed bool `json:"-"`
}

// HoldRevoker releases a user's hold for an operator's revoke;
// *booking.Service is one (and *payment.Service, which also expires a
// paying hold's session). Revoke releases the revoked user's live holds
// through it, so a payment that completes for one later is refunded as
// revoked (CONTRACT §10a).
type HoldRevoker interface {
	RevokeHold(ctx context.Context, uid, holdID string) (booking.Hold, error)
}

// Operate runs an operator's action on a sale, in one transaction with its
// log entry, and answers the sale as it is then. Every action is
// idempotent: one that would change nothing answers the same and logs
// nothing.
//
//   - configure creates the sale or changes it: before opensAt any field,
//     from opensAt on all but opensAt (ErrStarted). Every field is checked
//     as the admitter and the Gate check it; a refused configure changes
//     nothing (ErrInvalidSale, naming the field, the value and its type).
//     New rates and maxActive take effect within 2 s, passSeconds for
//     passes admitted after, maxSeatsPerUser for holds and bookings after.
//   - pause stops admissions (places kept, joins and live passes go on);
//     resume starts them again. sales/{id}.state shows it within 2 s.
//   - close stops selling for good: joins, holds and bookings answer
//     sale_closed; live holds may still be confirmed while they live.
//     After a close only revoke (and configure-door, the door's) is
//     accepted (ErrClosed).
//   - configure-door sets the screening's door (CONTRACT §13), with or
//     without a sale, before or after its opening, a close or the start:
//     the fields given over the door as stored, every field checked
//     (door.ErrInvalidDoor, a *door.FieldError naming the field, the value
//     and its type). The log's before and after are the door's fields.
//   - revoke ends op.UID's pass now: the place turns expired (a waiting
//     place leaves the line) and the user's live holds are released through
//     holds, so the slot frees within 2 s.
//
// Errors: booking.ErrScreeningNotFound, ErrNoSale (an action other than
// configure on a screening without a sale), booking.ErrInvalidArgument
// (an unknown action, a field that does not belong to the action, a
// revoke without a place), ErrInvalidSale, door.ErrInvalidDoor,
// ErrStarted, ErrClosed.
func (s *Service) Operate(ctx context.Context, op Operation, holds HoldRevoker) (Outcome, error) {
	if err := checkOperation(op); err != nil {
		return Outcome{}, err
	}
	ref := s.client.Collection(booking.Screenings).Doc(op.ScreeningID)
	var out Outcome
	var release []string // revoke: the live holds to release
	run := func(ctx context.Context, tx *firestore.Transaction) error {
		out, release = Outcome{}, nil
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%w: %q", booking.ErrScreeningNotFound, op.ScreeningID)
		}
		if err != nil {
			return err
		}
		now := snap.ReadTime
		cur, hasSale := snap.Data()["sale"].(map[string]any)
		if !hasSale && op.Action != ActionConfigure && op.Action != ActionConfigureDoor {
			return fmt.Errorf("%w: screening %q (configure one first)", ErrNoSale, op.ScreeningID)
		}
		ctl := controlOf(snap)
		started := false
		if at, ok := snap.Data()["startsAt"].(time.Time); ok && !now.Before(at) {
			started = true
		}
		if (ctl.Closed || started) && op.Action != ActionClose && op.Action != ActionRevoke && op.Action != ActionConfigureDoor {
			why := "an operator closed it"
			if started {
				why = "the screening has started"
			}
			return fmt.Errorf("%w: %s; only revoke is accepted now", ErrClosed, why)
		}
		before := saleView(cur, ctl)
		var entry map[string]any
		curDoor, hasDoor, derr := door.ConfigOf(snap)
		switch op.Action {
		case ActionConfigureDoor:
			stored, _ := snap.Data()[door.Field].(map[string]any)
			if derr != nil {
				stored = nil // no door as stored: configure-door replaces it
			}
			next, err := door.Merged(stored, op.Door)
			if err != nil {
				return err
			}
			if hasDoor && next.Equal(curDoor) {
				break
			}
			if err := tx.Update(ref, []firestore.Update{{Path: door.Field, Value: next.Fields()}}); err != nil {
				return err
			}
			entry = map[string]any{"after": next.View()}
			if hasDoor {
				entry["before"] = curDoor.View()
			}
			curDoor, hasDoor = next, true
		case ActionConfigure:
			next, err := s.configured(cur, hasSale, op.Sale, snap.Data()["startsAt"], now)
			if err != nil {
				return err
			}
			if hasSale && maps.EqualFunc(next, cur, sameValue) {
				break
			}
			if err := tx.Update(ref, []firestore.Update{{Path: "sale", Value: next}}); err != nil {
				return err
			}
			cur, hasSale = next, true
			entry = map[string]any{"before": before, "after": saleView(next, ctl)}
			if len(before) == 0 {
				delete(entry, "before")
			}
		case ActionPause, ActionResume, ActionClose:
			next := ctl
			switch op.Action {
			case ActionPause:
				next.Paused = true
			case ActionResume:
				next.Paused = false
			case ActionClose:
				next.Closed = true
			}
			if next == ctl || (op.Action == ActionClose && started) {
				break
			}
			c := map[string]any{"paused": next.Paused, "closed": next.Closed, "updatedAt": firestore.ServerTimestamp}
			if next.Closed {
				c["closedAt"] = firestore.ServerTimestamp
			}
			if err := tx.Update(ref, []firestore.Update{{Path: FieldControl, Value: c}}); err != nil {
				return err
			}
			ctl = next
			entry = map[string]any{"before": before, "after": saleView(cur, ctl)}
		case ActionRevoke:
			place, err := tx.Get(s.Pass(op.ScreeningID, op.UID))
			if status.Code(err) == codes.NotFound {
				return fmt.Errorf("%w: user %q has no place in the sale of %q", booking.ErrInvalidArgument, op.UID, op.ScreeningID)
			}
			if err != nil {
				return err
			}
			p, err := placeOf(place)
			if err != nil {
				return err
			}
			release = liveHolds(place, now)
			if _, done := place.Data()[FieldRevokedAt]; done {
				// Revoked already: this is the revoke sent again (its answer
				// was lost, or a release failed). Its commit and its log
				// entry stand, revokedAt with them; only the holds it
				// could not release are left, released below.
				break
			}
			live := p.Status == StatusWaiting || p.Status == StatusAdmitted
			if !live && len(release) == 0 {
				break // expired or done already, and nothing held: nothing to change
			}
			// revokedAt goes on the place in this commit, whatever its
			// status: a confirm of one of its holds reads the place in its
			// own commit and is refused from now on, before the holds
			// are released below.
			ups := []firestore.Update{{Path: FieldRevokedAt, Value: now}}
			if live {
				ups = append(ups, firestore.Update{Path: "status", Value: StatusExpired})
			}
			if p.Status == StatusAdmitted && p.PassUntil != nil && p.PassUntil.After(now) {
				ups = append(ups, firestore.Update{Path: "passUntil", Value: now})
			}
			if err := tx.Update(place.Ref, ups, firestore.LastUpdateTime(place.UpdateTime)); err != nil {
				return err
			}
			afterStatus := p.Status
			if live {
				afterStatus = StatusExpired
			}
			entry = map[string]any{
				"before": revoked(op.UID, p.Email, map[string]any{"status": p.Status}),
				"after":  revoked(op.UID, p.Email, map[string]any{"status": afterStatus, "holdsReleased": len(release)}),
			}
		}
		out = Outcome{ScreeningID: op.ScreeningID, Changed: entry != nil}
		if hasSale {
			out.State, out.Sale = stateOf(cur, ctl, started, now), saleView(cur, Control{})
		}
		if hasDoor {
			out.Door = curDoor.View()
		}
		if entry == nil {
			return nil
		}
		maps.Copy(entry, map[string]any{"at": firestore.ServerTimestamp, "uid": op.By.UID, "email": op.By.Email, "action": op.Action})
		if op.Reason != "" {
			entry["reason"] = op.Reason
		}
		return tx.Create(s.client.Collection(Log).Doc(op.ScreeningID).Collection("entries").NewDoc(), entry)
	}
	// An operator's action must not lose to the traffic it acts on (a
	// revoke raced by the user's own bots on the place): a transaction
	// aborted by contention is tried again, with backoff, until ctx ends.
	err := retryTransient(ctx, func() error { return s.client.RunTransaction(ctx, run) })
	if err != nil {
		return Outcome{}, err
	}
	if len(release) > 0 && holds == nil {
		return out, errors.New("sale: revoke: the user holds seats, and no HoldRevoker was given to release them")
	}
	var errs []error
	for _, id := range release {
		if _, err := holds.RevokeHold(ctx, op.UID, id); err != nil {
			errs = append(errs, fmt.Errorf("release hold %s: %w", id, err))
		}
	}
	if len(release) > 0 {
		out.Changed = true
	}
	return out, errors.Join(errs...)
}

// MaxReason is the longest reason an action may give, in characters.
const MaxReason = 500

// FieldRevokedAt is when an operator revoked a place (CONTRACT §8): the
// commit of the revoke, on the place beside its expired status. A revoked
// waiting place left the line then; a revoked pass ended then (passUntil
// moves to it too).
const FieldRevokedAt = "revokedAt"

// revoked is a revoke's before or after in the log: whose place (uid, and
// email when the place has one) and fields.
func revoked(uid, email string, fields map[string]any) map[string]any {
	fields["user"] = uid
	if email != "" {
		fields["userEmail"] = email
	}
	return fields
}

// checkOperation refuses an unknown action and fields that do not belong
// to the action, before anything is read.
func checkOperation(op Operation) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", booking.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	switch {
	case op.ScreeningID == "":
		return bad("screeningId is required")
	case len(op.ScreeningID) > 200 || lock.ValidateKey(op.ScreeningID) != nil:
		return bad("screeningId %q is not a valid id", op.ScreeningID)
	case !slices.Contains(Actions, op.Action):
		return bad("unknown action %q (the actions are %v)", op.Action, Actions)
	case op.Action == ActionConfigure && op.Sale == nil:
		return bad("configure needs sale: the §7 fields to set")
	case op.Action != ActionConfigure && op.Sale != nil:
		return bad("sale belongs to configure only, not %s", op.Action)
	case op.Action == ActionConfigureDoor && op.Door == nil:
		return bad("configure-door needs door: the §13 fields to set (opensAt, gates, reentry)")
	case op.Action != ActionConfigureDoor && op.Door != nil:
		return bad("door belongs to configure-door only, not %s", op.Action)
	case op.Action == ActionRevoke && op.UID == "":
		return bad("revoke needs uid: whose pass ends")
	case op.Action == ActionRevoke && (len(op.UID) > 128 || lock.ValidateKey(op.UID) != nil):
		return bad("uid %q is not a Firebase Auth uid", op.UID)
	case op.Action != ActionRevoke && op.UID != "":
		return bad("uid belongs to revoke only, not %s", op.Action)
	case utf8.RuneCountInString(op.Reason) > MaxReason:
		return bad("reason is longer than %d characters", MaxReason)
	}
	return nil
}

// configured is the sale that configure makes of cur with the fields set
// (JSON forms), as it is stored: checked, or ErrInvalidSale; opensAt fixed
// once the sale has opened (ErrStarted).
func (s *Service) configured(cur map[string]any, hasSale bool, set map[string]any, startsAt any, now time.Time) (map[string]any, error) {
	merged := map[string]any{}
	for k, v := range cur { // as JSON would carry it
		if !slices.Contains(saleFields, k) {
			continue // written by hand: configure replaces it (the log's before keeps it)
		}
		switch x := v.(type) {
		case time.Time:
			merged[k] = x.UTC().Format(time.RFC3339Nano)
		case int64:
			merged[k] = float64(x)
		default:
			merged[k] = v
		}
	}
	for k, v := range set {
		if v == nil && (k == "passSeconds" || k == "maxSeatsPerUser") {
			delete(merged, k)
			continue
		}
		merged[k] = v
	}
	c, err := s.checkSale(merged, startsAt, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSale, err)
	}
	// Firestore keeps microseconds: compare and store at that precision,
	// so the same configure again is the same sale.
	c.OpensAt = c.OpensAt.Truncate(time.Microsecond)
	if hasSale {
		if was, ok := cur["opensAt"].(time.Time); ok && !now.Before(was) && !c.OpensAt.Equal(was) {
			return nil, fmt.Errorf("%w: it opened at %s; opensAt can no longer change (admitPerMinute, maxActive, passSeconds and maxSeatsPerUser still can)",
				ErrStarted, was.UTC().Format(time.RFC3339))
		}
	}
	next := map[string]any{"opensAt": c.OpensAt, "admitPerMinute": int64(c.AdmitPerMinute), "maxActive": int64(c.MaxActive)}
	if _, ok := merged["passSeconds"]; ok {
		next["passSeconds"] = int64(c.PassSeconds)
	}
	if _, ok := merged["maxSeatsPerUser"]; ok {
		next["maxSeatsPerUser"] = int64(c.MaxSeatsPerUser)
	}
	if c.RequireVerifiedEmail { // false is the default: stored only when true
		next["requireVerifiedEmail"] = true
	}
	return next, nil
}

// sameValue compares stored sale fields (opensAt by instant).
func sameValue(x, y any) bool {
	if a, ok := x.(time.Time); ok {
		b, ok := y.(time.Time)
		return ok && a.Equal(b)
	}
	return x == y
}

// saleView is a sale's fields as operators see them (opensAt in RFC 3339),
// with the operators' state when ctl is given.
func saleView(sale map[string]any, ctl Control) map[string]any {
	out := map[string]any{}
	for k, v := range sale {
		if t, ok := v.(time.Time); ok {
			v = t.UTC().Format(time.RFC3339Nano)
		}
		out[k] = v
	}
	if ctl.Paused {
		out["paused"] = true
	}
	if ctl.Closed {
		out["closed"] = true
	}
	return out
}

// stateOf is the state the admitter publishes for a sale at now, as far as
// the sale's own documents tell (a sold-out sale is published soldout).
func stateOf(sale map[string]any, ctl Control, started bool, now time.Time) string {
	switch {
	case started || ctl.Closed:
		return StateClosed
	case ctl.Paused:
		return StatePaused
	}
	if at, ok := sale["opensAt"].(time.Time); ok && now.Before(at) {
		return StateScheduled
	}
	return StateOpen
}

// liveHolds lists the holds a place's tally counts live at now.
func liveHolds(place *firestore.DocumentSnapshot, now time.Time) []string {
	var ids []string
	holds, _ := place.Data()[fieldHolds].(map[string]any)
	for id, v := range holds {
		h, _ := v.(map[string]any)
		if until, _ := h["until"].(time.Time); now.Before(until) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// retryTransient runs f again while it fails Aborted (its transaction lost
// to contention after the client's own attempts) or Canceled by the store
// while ctx is live, waiting 100 ms doubling to 2 s between runs, until ctx
// ends. The Firestore emulator answers a commit CANCELLED ("call already
// cancelled") when a listener on a document it changes was closed by its
// client and not yet forgotten (sale/seatmap.go, seatMapCancelledRetries):
// a buyer's page that stopped watching the screening made an operator's
// pause answer 503 (CI 2026-11-29 22:45). The transaction reads again, so a
// commit that did land is found done, not done twice.
func retryTransient(ctx context.Context, f func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if c := status.Code(err); (c != codes.Aborted && c != codes.Canceled) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}
