package door

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// Config is a screening's door (CONTRACT §13): screenings/{id}.door
// {opensAt, gates, reentry}. Operators set it (OperateSale's
// configure-door); a screening without one answers every scan door_closed.
type Config struct {
	// OpensAt: before it, by Firestore's clock, every scan is door_closed.
	OpensAt time.Time
	// Gates are the gates scanners scan at; a scan names one of them.
	Gates []string
	// Reentry: an exit turns a ticket out, and it may come in again.
	// Without it, an exit answers no_reentry and a ticket goes in once.
	Reentry bool
}

// Field is the screening document's field that holds the door.
const Field = "door"

// Limits of a door's configuration.
const MaxGates = 32

// ConfigFields are the door's fields, in the order operators meet them.
var ConfigFields = []string{"opensAt", "gates", "reentry"}

// gatePattern is a gate's name: it travels in URLs (scan.html?gate=G) and
// metric-free logs, so letters, digits, _ and -, 1 to 32 of them.
var gatePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ErrInvalidDoor: a configure-door would store a door that is no door; the
// error is a *FieldError naming the field, the value and its type (400
// invalid_door).
var ErrInvalidDoor = errors.New("door: invalid door")

// FieldError says which field of a door is wrong and why.
type FieldError struct {
	Field   string // "opensAt", "gates", "reentry"; "door" for the whole
	Value   any
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "door" {
		return e.Problem
	}
	return fmt.Sprintf("door.%s %s, not %s", e.Field, e.Problem, describe(e.Value))
}

// Unwrap makes every FieldError an ErrInvalidDoor.
func (e *FieldError) Unwrap() error { return ErrInvalidDoor }

// ParseConfig checks a door's fields m, as stored (opensAt a timestamp) or,
// fromJSON, as configure-door sends them (opensAt an RFC 3339 string): a
// wrong field is a *FieldError. opensAt and gates (1 to MaxGates distinct
// names of 1 to 32 letters, digits, _ or -) are required; reentry is true
// or false (absent or null: false).
func ParseConfig(m map[string]any, fromJSON bool) (Config, error) {
	for k := range m {
		if !slices.Contains(ConfigFields, k) {
			return Config{}, &FieldError{Field: "door", Problem: fmt.Sprintf("door has an unknown field %q (the fields are %s)", k, strings.Join(ConfigFields, ", "))}
		}
	}
	var c Config
	ok := false
	switch v := m["opensAt"].(type) {
	case time.Time:
		c.OpensAt, ok = v, !fromJSON
	case string:
		if fromJSON {
			var err error
			c.OpensAt, err = time.Parse(time.RFC3339Nano, v)
			ok = err == nil
		}
	}
	if !ok {
		want := "must be a timestamp"
		if fromJSON {
			want = "must be an RFC 3339 time, e.g. \"2026-12-01T18:30:00Z\""
		}
		return Config{}, &FieldError{Field: "opensAt", Value: m["opensAt"], Problem: want}
	}
	c.OpensAt = c.OpensAt.Truncate(time.Microsecond) // as Firestore keeps it
	gates, ok := m["gates"].([]any)
	if !ok || len(gates) == 0 || len(gates) > MaxGates {
		if s, isStrings := m["gates"].([]string); isStrings && len(s) > 0 && len(s) <= MaxGates {
			gates = make([]any, len(s))
			for i, g := range s {
				gates[i] = g
			}
		} else {
			return Config{}, &FieldError{Field: "gates", Value: m["gates"], Problem: fmt.Sprintf("must be a list of 1 to %d gate names", MaxGates)}
		}
	}
	for _, g := range gates {
		name, ok := g.(string)
		if !ok || !gatePattern.MatchString(name) {
			return Config{}, &FieldError{Field: "gates", Value: g, Problem: "must hold gate names of 1 to 32 letters, digits, _ or -"}
		}
		if slices.Contains(c.Gates, name) {
			return Config{}, &FieldError{Field: "gates", Value: g, Problem: "must name each gate once"}
		}
		c.Gates = append(c.Gates, name)
	}
	switch v := m["reentry"].(type) {
	case nil:
	case bool:
		c.Reentry = v
	default:
		return Config{}, &FieldError{Field: "reentry", Value: v, Problem: "must be true or false"}
	}
	return c, nil
}

// Fields is the door as stored: screenings/{id}.door.
func (c Config) Fields() map[string]any {
	gates := make([]any, len(c.Gates))
	for i, g := range c.Gates {
		gates[i] = g
	}
	return map[string]any{"opensAt": c.OpensAt, "gates": gates, "reentry": c.Reentry}
}

// View is the door as operators see it (opensAt in RFC 3339): in OperateSale's
// answer and in the log's before and after.
func (c Config) View() map[string]any {
	v := c.Fields()
	v["opensAt"] = c.OpensAt.UTC().Format(time.RFC3339Nano)
	return v
}

// Equal says whether two doors are the same door.
func (c Config) Equal(o Config) bool {
	return c.OpensAt.Equal(o.OpensAt) && slices.Equal(c.Gates, o.Gates) && c.Reentry == o.Reentry
}

// HasGate says whether gate is one of the door's.
func (c Config) HasGate(gate string) bool { return slices.Contains(c.Gates, gate) }

// Open says whether the door is open at Firestore time now.
func (c Config) Open(now time.Time) bool { return !now.Before(c.OpensAt) }

// ConfigOf reads the door of a screening snapshot: ok false when it has
// none (no field, or null), ErrInvalidDoor (a *FieldError) when what it
// holds is no door.
func ConfigOf(screening *firestore.DocumentSnapshot) (c Config, ok bool, err error) {
	v, present := screening.Data()[Field]
	if !present || v == nil {
		return Config{}, false, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return Config{}, false, &FieldError{Field: "door", Problem: fmt.Sprintf("screenings/%s.door is %s, not an object", screening.Ref.ID, describe(v))}
	}
	c, err = ParseConfig(m, false)
	return c, err == nil, err
}

// Merged is configure-door's door: the fields set (JSON forms; null resets
// reentry) over the door as stored (cur, nil for none), checked.
func Merged(cur map[string]any, set map[string]any) (Config, error) {
	merged := map[string]any{}
	for k, v := range cur {
		if !slices.Contains(ConfigFields, k) {
			continue // written by hand: configure-door replaces it
		}
		if t, ok := v.(time.Time); ok {
			v = t.UTC().Format(time.RFC3339Nano)
		}
		merged[k] = v
	}
	for k, v := range set {
		merged[k] = v
	}
	if _, ok := merged["opensAt"]; !ok && cur == nil {
		return Config{}, &FieldError{Field: "door", Problem: "a new door needs opensAt and gates, e.g. {\"opensAt\": \"2026-12-01T18:30:00Z\", \"gates\": [\"A\", \"B\"]}"}
	}
	return ParseConfig(merged, true)
}

// DecodeJSON decodes configure-door's door object as OperateSale takes it:
// each field's value as encoding/json gives it. A field given twice is
// ErrInvalidDoor; a value that is not one object is
// booking.ErrInvalidArgument.
func DecodeJSON(raw []byte) (map[string]any, error) {
	notObject := fmt.Errorf("%w: door must be an object, e.g. {\"opensAt\": \"2026-12-01T18:30:00Z\", \"gates\": [\"A\", \"B\"], \"reentry\": false}", booking.ErrInvalidArgument)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject
	}
	out := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		key, _ := t.(string)
		if _, seen := out[key]; seen {
			return nil, &FieldError{Field: "door", Problem: fmt.Sprintf("door.%s appears more than once", key)}
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, notObject
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	return out, nil
}

// describe names a value and its JSON type, for FieldError.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case int64, int:
		return fmt.Sprintf("the number %d", x)
	case time.Time:
		return "the timestamp " + x.UTC().Format(time.RFC3339Nano)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%v (a %T)", v, v)
}
