package report

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/sale"
)

// LogEntry is one entry of the sale's operations log (CONTRACT §8,
// saleLog/{id}/entries): who did what, when and why.
type LogEntry struct {
	At     time.Time      `json:"at"`
	UID    string         `json:"uid"`
	Email  string         `json:"email,omitempty"`
	Action string         `json:"action"`
	Reason string         `json:"reason,omitempty"`
	Before map[string]any `json:"before,omitempty"`
	After  map[string]any `json:"after,omitempty"`
}

// ReadLog reads a sale's log, oldest first.
func ReadLog(ctx context.Context, fs *firestore.Client, id string) ([]LogEntry, error) {
	snaps, err := fs.Collection(sale.Log).Doc(id).Collection("entries").OrderBy("at", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("salereport: the log of %s: %w", id, err)
	}
	out := make([]LogEntry, 0, len(snaps))
	for _, s := range snaps {
		d := s.Data()
		var e LogEntry
		e.At, _ = d["at"].(time.Time)
		e.UID, _ = d["uid"].(string)
		e.Email, _ = d["email"].(string)
		e.Action, _ = d["action"].(string)
		e.Reason, _ = d["reason"].(string)
		e.Before, _ = d["before"].(map[string]any)
		e.After, _ = d["after"].(map[string]any)
		out = append(out, e)
	}
	return out, nil
}

// Who is who acted: the operator's email, else their uid.
func (e LogEntry) Who() string {
	if e.Email != "" {
		return e.Email
	}
	return e.UID
}

// Change says what an entry changed, in words, with times in loc written
// by format: "maxActive 2 → 3"; a revoke names the person by email and uid.
func (e LogEntry) Change(loc *time.Location, format func(time.Time) string) string {
	word := func(k string, v any) string {
		switch x := v.(type) {
		case nil:
			return "default"
		case string:
			if k == "opensAt" {
				if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
					return format(t.In(loc))
				}
			}
			return x
		case time.Time:
			return format(x.In(loc))
		case float64:
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(v)
	}
	if e.Action == sale.ActionRevoke {
		user, _ := e.After["user"].(string)
		who := user
		if email, _ := e.After["userEmail"].(string); email != "" {
			who = fmt.Sprintf("%s (uid %s)", email, user)
		}
		return fmt.Sprintf("%s: %s → %s", who, word("", e.Before["status"]), word("", e.After["status"]))
	}
	var keys []string
	for k := range e.After {
		keys = append(keys, k)
	}
	for k := range e.Before {
		if _, ok := e.After[k]; !ok {
			keys = append(keys, k)
		}
	}
	order := map[string]int{"opensAt": 1, "admitPerMinute": 2, "maxActive": 3, "passSeconds": 4, "maxSeatsPerUser": 5}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(order[a], order[b]), strings.Compare(a, b)) })
	var out []string
	for _, k := range keys {
		if k == "paused" || k == "closed" {
			continue
		}
		b, had := e.Before[k]
		a := e.After[k]
		switch {
		case had && fmt.Sprint(b) == fmt.Sprint(a):
		case had:
			out = append(out, fmt.Sprintf("%s %s → %s", k, word(k, b), word(k, a)))
		default:
			out = append(out, fmt.Sprintf("%s %s", k, word(k, a)))
		}
	}
	return strings.Join(out, ", ")
}

// Span is a stretch of time [From, To).
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Limits are a sale's rate and maxActive from At on.
type Limits struct {
	At             time.Time `json:"at"`
	AdmitPerMinute int       `json:"admitPerMinute"`
	MaxActive      int       `json:"maxActive"`
}

// story is what the log tells of a sale, up to the end of the report:
// when it was paused, its limits over time, and when it closed.
type story struct {
	pauses []Span
	limits []Limits // in time order; the first holds from the start
	closed time.Time
	end    time.Time // the end of what is judged: now, the close or the start
}

func intOf(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case float64:
		return int(x), x == math.Trunc(x)
	case int:
		return x, true
	}
	return 0, false
}

// tell reads the sale's story from its log, as of now.
func (st *Sale) tell(now time.Time) story {
	s := story{end: now.UTC()}
	if !st.StartsAt.IsZero() && st.StartsAt.Before(s.end) {
		s.end = st.StartsAt
	}
	// The limits from the start: as the sale was created, or as the
	// first change found them, or (no change logged) as they are.
	first := Limits{At: st.OpensAt, AdmitPerMinute: st.AdmitPerMinute, MaxActive: st.MaxActive}
	var changes []Limits
	var pausedAt time.Time
	for _, e := range st.Log {
		switch e.Action {
		case sale.ActionPause:
			if pausedAt.IsZero() {
				pausedAt = e.At
			}
		case sale.ActionResume:
			if !pausedAt.IsZero() {
				s.pauses = append(s.pauses, Span{pausedAt, e.At})
				pausedAt = time.Time{}
			}
		case sale.ActionClose:
			if s.closed.IsZero() {
				s.closed = e.At
			}
		case sale.ActionConfigure:
			rate, okR := intOf(e.After["admitPerMinute"])
			active, okA := intOf(e.After["maxActive"])
			if !okR || !okA {
				continue
			}
			if len(changes) == 0 && e.Before != nil { // the first change tells what held before it
				if r, ok := intOf(e.Before["admitPerMinute"]); ok {
					first.AdmitPerMinute = r
				}
				if a, ok := intOf(e.Before["maxActive"]); ok {
					first.MaxActive = a
				}
			} else if len(changes) == 0 { // the sale's creation
				first = Limits{At: e.At, AdmitPerMinute: rate, MaxActive: active}
				continue
			}
			changes = append(changes, Limits{At: e.At, AdmitPerMinute: rate, MaxActive: active})
		}
	}
	if !s.closed.IsZero() && s.closed.Before(s.end) {
		s.end = s.closed
	}
	if !pausedAt.IsZero() {
		s.pauses = append(s.pauses, Span{pausedAt, later(pausedAt, s.end)})
	}
	s.limits = append([]Limits{first}, changes...)
	return s
}

// limitsAt are the limits in force at t.
func (s story) limitsAt(t time.Time) Limits {
	l := s.limits[0]
	for _, c := range s.limits[1:] {
		if !c.At.After(t) {
			l = c
		}
	}
	return l
}

// pausedAt: the sale was paused at t.
func (s story) pausedAt(t time.Time) bool {
	for _, p := range s.pauses {
		if !t.Before(p.From) && t.Before(p.To) {
			return true
		}
	}
	return false
}

// pausedWithin is how much of [from, to) the sale was paused.
func (s story) pausedWithin(from, to time.Time) time.Duration {
	var d time.Duration
	for _, p := range s.pauses {
		a, b := later(p.From, from), earlier(p.To, to)
		if b.After(a) {
			d += b.Sub(a)
		}
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
