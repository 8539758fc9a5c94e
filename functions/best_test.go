package functions_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
)

func seatsOf(r response) []string {
	list, _ := r.Body["seats"].([]any)
	out := make([]string, len(list))
	for i, s := range list {
		out[i], _ = s.(string)
	}
	return out
}

// HoldSeats with count (CONTRACT §11): the server holds the best block,
// answers 201 with the hold and 200 with the same hold for a retry;
// together false takes seats apart when no block is left.
func TestHoldSeatsWithCountHoldsTheBestSeats(t *testing.T) {
	e := newEnv(t) // rows A-J of 20
	tok := token(t, "bess")
	body := map[string]any{"screeningId": "s1", "count": 2, "requestId": "best-1"}
	r := e.call("HoldSeats", tok, body)
	if r.Status != http.StatusCreated || fmt.Sprint(seatsOf(r)) != "[G10 G11]" || str(r, "status") != "held" || str(r, "heldUntil") == "" {
		t.Fatalf("best 2: %d %v, want 201 with G10 G11 (the middle of the row two thirds back)", r.Status, r.Body)
	}
	again := e.call("HoldSeats", tok, body)
	if again.Status != http.StatusOK || str(again, "holdId") != str(r, "holdId") || fmt.Sprint(seatsOf(again)) != "[G10 G11]" {
		t.Fatalf("retry: %d %v, want 200 with the same hold", again.Status, again.Body)
	}
	three := e.call("HoldSeats", tok, map[string]any{"screeningId": "s1", "count": 3, "together": true, "requestId": "best-2", "holdSeconds": 60})
	if three.Status != http.StatusCreated || len(seatsOf(three)) != 3 {
		t.Fatalf("best 3: %d %v", three.Status, three.Body)
	}
	st := e.holdState()
	if len(st.holds) != 2 || len(st.seats) != 5 {
		t.Fatalf("%d holds, %d seat documents; want 2 and 5", len(st.holds), len(st.seats))
	}
	st.check(t)
}

// No block of the count left: 409 no_seats_together with seatsLeft, and
// nothing held; together false still gets seats apart.
func TestHoldSeatsWithCountAnswersNoSeatsTogether(t *testing.T) {
	e := newEnv(t)
	if _, err := e.fs.Doc("screenings/small").Set(context.Background(), booking.Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 3}); err != nil {
		t.Fatal(err)
	}
	if r := e.call("HoldSeats", token(t, "olga"), map[string]any{"screeningId": "small", "seats": []string{"A2"}, "requestId": "o"}); r.Status != http.StatusCreated {
		t.Fatalf("hold A2: %d %v", r.Status, r.Body)
	}
	tok := token(t, "nils")
	r := e.call("HoldSeats", tok, map[string]any{"screeningId": "small", "count": 2, "requestId": "n1"})
	errBody, _ := r.Body["error"].(map[string]any)
	if r.Status != http.StatusConflict || r.code() != "no_seats_together" || errBody["seatsLeft"] != float64(2) || errBody["message"] == "" {
		t.Fatalf("a pair around a held A2: %d %v, want 409 no_seats_together with seatsLeft 2", r.Status, r.Body)
	}
	apart := e.call("HoldSeats", tok, map[string]any{"screeningId": "small", "count": 2, "together": false, "requestId": "n2"})
	if apart.Status != http.StatusCreated || fmt.Sprint(seatsOf(apart)) != "[A1 A3]" {
		t.Fatalf("a pair apart: %d %v, want A1 A3", apart.Status, apart.Body)
	}
	full := e.call("HoldSeats", tok, map[string]any{"screeningId": "small", "count": 1, "requestId": "n3"})
	if full.Status != http.StatusConflict || full.code() != "no_seats_together" || full.Body["error"].(map[string]any)["seatsLeft"] != float64(0) {
		t.Fatalf("one seat of a full hall: %d %v, want 409 with seatsLeft 0", full.Status, full.Body)
	}
	holds, err := e.fs.Collection(booking.Holds).Where("uid", "==", userID(t, "nils")).Documents(context.Background()).GetAll()
	if err != nil || len(holds) != 1 {
		t.Fatalf("nils has %d holds (%v), want the one apart", len(holds), err)
	}
}

// Every wrong count or together is a 400 invalid_argument whose message
// names what is wrong, and nothing is held. Over a sale's seat cap too.
func TestHoldSeatsWithABadCountWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.onSale("open", time.Now().Add(time.Hour), map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 50, "maxSeatsPerUser": 4})
	e.admitted("open", "bea")
	tok := token(t, "bea")
	const base = `"screeningId": "s1", "requestId": "x"`
	for _, c := range []struct{ body, message string }{
		{`{` + base + `, "count": 0}`, "count must be a whole number from 1 to 10, not 0"},
		{`{` + base + `, "count": -1}`, "count must be a whole number from 1 to 10, not -1"},
		{`{` + base + `, "count": 2.5}`, "not 2.5"},
		{`{` + base + `, "count": 2.0}`, "not 2.0"},
		{`{` + base + `, "count": 1e1}`, "not 1e1"},
		{`{` + base + `, "count": "2"}`, `not "2"`},
		{`{` + base + `, "count": 11}`, "from 1 to 10, not 11"},
		{`{` + base + `, "count": 99999999999999999999}`, "from 1 to 10, not 99999999999999999999"},
		{`{` + base + `, "count": null}`, "not null"},
		{`{` + base + `, "count": true}`, "not true"},
		{`{` + base + `, "count": [2]}`, "not [2]"},
		{`{` + base + `, "count": 2, "seats": ["A1", "A2"]}`, "send seats or count, not both"},
		{`{` + base + `, "count": 2, "seats": []}`, "send seats or count, not both"},
		{`{` + base + `, "count": 2, "together": "yes"}`, `together must be true or false, not "yes"`},
		{`{` + base + `, "count": 2, "together": 1}`, "together must be true or false, not 1"},
		{`{` + base + `, "count": 2, "together": null}`, "together must be true or false, not null"},
		{`{` + base + `, "seats": ["A1"], "together": true}`, "together goes with count"},
		{`{` + base + `, "together": false}`, "together goes with count"},
		{`{` + base + `, "Count": 2}`, `unknown field "Count"`},
		{`{` + base + `, "count": 2, "count": 3}`, `field "count" appears more than once`},
		{`{"screeningId": "open", "requestId": "x", "count": 5}`, "count 5 is more than the 4 seats one person may hold and book in this sale"},
	} {
		r := e.call("HoldSeats", tok, c.body)
		msg, _ := r.Body["error"].(map[string]any)["message"].(string)
		if r.Status != http.StatusBadRequest || r.code() != "invalid_argument" || !strings.Contains(msg, c.message) {
			t.Errorf("%s: %d %v, want 400 invalid_argument saying %q", c.body, r.Status, r.Body, c.message)
		}
	}
	for _, screening := range []string{"s1", "open"} {
		seats, err := e.fs.Collection("screenings/" + screening + "/seats").Documents(context.Background()).GetAll()
		if err != nil || len(seats) != 0 {
			t.Fatalf("refused requests wrote %d seats of %s (%v)", len(seats), screening, err)
		}
	}
	holds, err := e.fs.Collection(booking.Holds).Documents(context.Background()).GetAll()
	if err != nil || len(holds) != 0 {
		t.Fatalf("refused requests wrote %d holds (%v)", len(holds), err)
	}
	// Within the cap it holds, under the sale's pass.
	if r := e.call("HoldSeats", tok, map[string]any{"screeningId": "open", "requestId": "ok", "count": 4}); r.Status != http.StatusCreated {
		t.Fatalf("4 within the cap: %d %v", r.Status, r.Body)
	}
	if r := e.call("HoldSeats", tok, map[string]any{"screeningId": "open", "requestId": "more", "count": 1}); r.Status != http.StatusConflict || r.code() != "seat_limit" {
		t.Fatalf("one more past the cap: %d %v, want 409 seat_limit", r.Status, r.Body)
	}
}
