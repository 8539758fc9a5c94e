package sale

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
)

// configure-door (CONTRACT §13) sets screenings/{id}.door on a screening
// with or without a sale, after a close too, merging the fields given over
// the door as stored; it logs before and after in saleLog, and an action
// that changes nothing logs nothing. A wrong field changes nothing and
// says which field, its value and its type.
func TestConfigureDoor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 5, nil) // no sale
	ctx := context.Background()
	opens := time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)
	op := func(fields map[string]any) (Outcome, error) {
		return e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionConfigureDoor, Door: fields, By: olive, Reason: "doors"}, nil)
	}
	stored := func() map[string]any {
		snap, err := e.fs.Collection(booking.Screenings).Doc(e.id).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := snap.Data()["door"].(map[string]any)
		return d
	}
	logged := func() []map[string]any {
		snaps, err := e.fs.Collection(Log).Doc(e.id).Collection("entries").OrderBy("at", firestore.Asc).Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, s := range snaps {
			out = append(out, s.Data())
		}
		return out
	}
	for _, c := range []struct {
		fields map[string]any
		field  string // the field the message names
	}{
		{map[string]any{"gates": []any{"A"}}, "a new door needs opensAt and gates"},
		{map[string]any{"opensAt": "tomorrow", "gates": []any{"A"}}, `door.opensAt must be an RFC 3339 time, e.g. "2026-12-01T18:30:00Z", not the string "tomorrow"`},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z"}, "door.gates must be a list of 1 to 32 gate names, not null"},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{}}, "door.gates must be a list of 1 to 32 gate names, not an array"},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{"A", "A"}}, `door.gates must name each gate once, not the string "A"`},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{"A B"}}, `door.gates must hold gate names of 1 to 32 letters, digits, _ or -, not the string "A B"`},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{1.0}}, "door.gates must hold gate names of 1 to 32 letters, digits, _ or -, not the number 1"},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{"A"}, "reentry": "yes"}, `door.reentry must be true or false, not the string "yes"`},
		{map[string]any{"opensAt": "2026-12-01T18:30:00Z", "gates": []any{"A"}, "exits": []any{"B"}}, `door has an unknown field "exits"`},
	} {
		_, err := op(c.fields)
		if !errors.Is(err, door.ErrInvalidDoor) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("configure-door %v: %v, want ErrInvalidDoor saying %q", c.fields, err, c.field)
		}
	}
	if stored() != nil || len(logged()) != 0 {
		t.Fatalf("refused configures wrote %v and logged %v", stored(), logged())
	}
	out, err := op(map[string]any{"opensAt": opens.Format(time.RFC3339), "gates": []any{"A", "B"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.State != "" || out.Sale != nil || out.Door["opensAt"] != "2026-12-01T18:30:00Z" || out.Door["reentry"] != false {
		t.Fatalf("answer %+v", out)
	}
	d := stored()
	if !d["opensAt"].(time.Time).Equal(opens) || len(d["gates"].([]any)) != 2 || d["reentry"] != false {
		t.Fatalf("stored %v", d)
	}
	// The same again changes nothing; reentry alone keeps the rest.
	if _, err := op(map[string]any{"gates": []any{"A", "B"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := op(map[string]any{"reentry": true}); err != nil {
		t.Fatal(err)
	}
	if d := stored(); d["reentry"] != true || len(d["gates"].([]any)) != 2 {
		t.Fatalf("after reentry: %v", d)
	}
	entries := logged()
	if len(entries) != 2 || entries[0]["action"] != ActionConfigureDoor || entries[0]["before"] != nil || entries[1]["reason"] != "doors" ||
		entries[1]["before"].(map[string]any)["reentry"] != false || entries[1]["after"].(map[string]any)["reentry"] != true || entries[1]["email"] != olive.Email {
		t.Fatalf("log %v", entries)
	}
	// Other actions still need a sale; configure-door goes on after a close.
	if _, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionPause, By: olive}, nil); !errors.Is(err, ErrNoSale) {
		t.Fatalf("pause without a sale: %v", err)
	}
	if _, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionConfigureDoor, By: olive}, nil); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("configure-door without door: %v", err)
	}
	if _, err := e.svc.Operate(ctx, Operation{ScreeningID: e.id, Action: ActionPause, Door: map[string]any{"reentry": true}, By: olive}, nil); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("pause with a door: %v", err)
	}
	e.setSaleDoc(saleOpening(time.Now().Add(-time.Hour), 60, 10, 60))
	e.operate(e.svc, ActionClose, nil)
	if out, err := op(map[string]any{"gates": []any{"A", "B", "C"}}); err != nil || len(out.Door["gates"].([]any)) != 3 || out.State != StateClosed {
		t.Fatalf("configure-door after a close: %+v %v", out, err)
	}
}

// setSaleDoc gives the screening a sale, as an admin would.
func (e *env) setSaleDoc(sale map[string]any) {
	e.t.Helper()
	if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Update(context.Background(), []firestore.Update{{Path: "sale", Value: sale}}); err != nil {
		e.t.Fatal(err)
	}
}
