package functions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/sale"
)

// onSale gives screening id a sale opening at opensAt (the 10x20 hall).
func (e *env) onSale(id string, startsAt time.Time, s map[string]any) {
	e.t.Helper()
	doc := map[string]any{"title": "Nosferatu", "startsAt": startsAt, "rows": []string{"A", "B"}, "seatsPerRow": 10}
	if s != nil {
		doc["sale"] = s
	}
	if _, err := e.fs.Collection(booking.Screenings).Doc(id).Set(context.Background(), doc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) joinQueue(user, screeningID string) response {
	return e.call("JoinQueue", token(e.t, user), map[string]any{"screeningId": screeningID})
}

func TestJoinQueueAnswersThePlace(t *testing.T) {
	e := newEnv(t)
	e.onSale("hot", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 100, "maxActive": 50})
	r := e.joinQueue("alice", "hot")
	want := map[string]any{"screeningId": "hot", "queueId": sale.QueueID("hot", userID(t, "alice")), "status": "waiting"}
	if r.Status != 201 || len(r.Body) != len(want) {
		t.Fatalf("join: %d %v", r.Status, r.Body)
	}
	for k, v := range want {
		if r.Body[k] != v {
			t.Fatalf("join: %s = %v, want %v (%v)", k, r.Body[k], v, r.Body)
		}
	}
	again := e.joinQueue("alice", "hot")
	if again.Status != 200 || again.Body["queueId"] != want["queueId"] || again.Body["status"] != "waiting" {
		t.Fatalf("join again: %d %v", again.Status, again.Body)
	}
	// An admitted place answers with its pass's end.
	until := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Microsecond)
	if _, err := e.fs.Collection(sale.Queue).Doc(want["queueId"].(string)).Update(context.Background(), []firestore.Update{
		{Path: "status", Value: sale.StatusAdmitted}, {Path: "passUntil", Value: until},
	}); err != nil {
		t.Fatal(err)
	}
	admitted := e.joinQueue("alice", "hot")
	if admitted.Status != 200 || admitted.Body["status"] != "admitted" || admitted.Body["passUntil"] != until.Format(time.RFC3339Nano) {
		t.Fatalf("admitted: %d %v, want passUntil %s", admitted.Status, admitted.Body, until.Format(time.RFC3339Nano))
	}
}

func TestJoinQueueErrors(t *testing.T) {
	e := newEnv(t) // s1: no sale
	soon := time.Now().Add(time.Hour)
	e.onSale("started", time.Now().Add(-time.Minute), map[string]any{"opensAt": soon, "admitPerMinute": 100, "maxActive": 50})
	e.onSale("broken", soon.Add(time.Hour), map[string]any{"opensAt": soon, "admitPerMinute": 0, "maxActive": 50})
	e.onSale("gone", soon, map[string]any{"opensAt": time.Now().Add(-time.Hour), "admitPerMinute": 100, "maxActive": 50})
	if _, err := e.fs.Collection(sale.Sales).Doc("gone").Set(context.Background(), map[string]any{"state": sale.StateSoldOut}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		tok    string
		body   any
		status int
		code   string
		says   string
	}{
		{"no such screening", token(t, "alice"), map[string]any{"screeningId": "nope"}, 404, "screening_not_found", ""},
		{"no sale", token(t, "alice"), map[string]any{"screeningId": "s1"}, 409, "no_sale", ""},
		{"misconfigured sale", token(t, "alice"), map[string]any{"screeningId": "broken"}, 409, "no_sale", "admitPerMinute must be a whole number from 1"},
		{"started", token(t, "alice"), map[string]any{"screeningId": "started"}, 409, "screening_started", ""},
		{"sold out", token(t, "alice"), map[string]any{"screeningId": "gone"}, 409, "sold_out", ""},
		{"no screeningId", token(t, "alice"), map[string]any{}, 400, "invalid_argument", ""},
		{"unknown field", token(t, "alice"), map[string]any{"screeningId": "s1", "uid": "bob"}, 400, "invalid_argument", ""},
		{"bad id", token(t, "alice"), map[string]any{"screeningId": "a/b"}, 400, "invalid_argument", ""},
		{"signed out", "", map[string]any{"screeningId": "s1"}, 401, "unauthenticated", ""},
	} {
		r := e.call("JoinQueue", c.tok, c.body)
		msg, _ := r.Body["error"].(map[string]any)["message"].(string)
		if r.Status != c.status || r.code() != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %v, want %d %s saying %q", c.name, r.Status, r.Body, c.status, c.code, c.says)
		}
	}
	places, err := e.fs.Collection(sale.Queue).Documents(context.Background()).GetAll()
	if err != nil || len(places) != 0 {
		t.Fatalf("refused joins wrote %d places (%v)", len(places), err)
	}
}

// During a sale, holds and bookings answer the §7 codes through the real
// functions: before the opening, sale_not_open; without a live pass,
// not_admitted.
func TestHoldsDuringASaleNeedAPass(t *testing.T) {
	e := newEnv(t)
	e.onSale("soon", time.Now().Add(2*time.Hour), map[string]any{"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 100, "maxActive": 50})
	e.onSale("open", time.Now().Add(time.Hour), map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 50})
	if r := e.joinQueue("alice", "open"); r.Status != 201 || r.Body["status"] != "waiting" {
		t.Fatalf("join: %d %v", r.Status, r.Body)
	}
	for _, c := range []struct {
		screening, fn string
		status        int
		code          string
	}{
		{"soon", "HoldSeats", 409, "sale_not_open"},
		{"soon", "BookSeats", 409, "sale_not_open"},
		{"open", "HoldSeats", 403, "not_admitted"},
		{"open", "BookSeats", 403, "not_admitted"},
	} {
		r := e.call(c.fn, token(t, "alice"), map[string]any{"screeningId": c.screening, "seats": []string{"A1"}, "requestId": c.fn + c.screening})
		if r.Status != c.status || r.code() != c.code {
			t.Errorf("%s on %s: %d %v, want %d %s", c.fn, c.screening, r.Status, r.Body, c.status, c.code)
		}
	}
}

// An extension needs a live pass, as a new hold does: a user whose pass has
// ended keeps the hold until its end and may still confirm it, but cannot
// stretch it while the slot goes to the next person (issue #29.2: a user
// whose pass expired extended a 6-seat hold by 15 minutes, twice).
func TestExtendHoldAfterThePassEndsIsNotAdmitted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.onSale("open", time.Now().Add(time.Hour), map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 50})
	place := e.admitted("open", "alice")
	r := e.call("HoldSeats", token(t, "alice"), map[string]any{"screeningId": "open", "seats": []string{"A1", "A2", "A3", "A4", "A5", "A6"}, "requestId": "h1", "holdSeconds": 300})
	if r.Status != 201 {
		t.Fatalf("hold under a live pass: %d %v", r.Status, r.Body)
	}
	holdID := str(r, "holdId")
	if r := e.onHold("ExtendHold", "alice", holdID, 600); r.Status != 200 {
		t.Fatalf("extend under a live pass: %d %v", r.Status, r.Body)
	}
	before, err := e.fs.Collection(booking.Holds).Doc(holdID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The pass ends (the admitter marks it expired; the slot is the next person's).
	if _, err := place.Update(ctx, []firestore.Update{{Path: "status", Value: sale.StatusExpired}, {Path: "passUntil", Value: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if r := e.onHold("ExtendHold", "alice", holdID, 900); r.Status != 403 || r.code() != "not_admitted" {
		t.Fatalf("extend after the pass ended: %d %v, want 403 not_admitted", r.Status, r.Body)
	}
	after, err := e.fs.Collection(booking.Holds).Doc(holdID).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdateTime.Equal(before.UpdateTime) {
		t.Fatalf("the refused extension wrote the hold: heldUntil %v -> %v", before.Data()["heldUntil"], after.Data()["heldUntil"])
	}
	if r := e.onHold("ConfirmHold", "alice", holdID); r.Status != 201 {
		t.Fatalf("confirm after the pass ended, while the hold lives: %d %v", r.Status, r.Body)
	}
}

// admitted gives user a live pass for screening (as the admitter writes it)
// and returns the place.
func (e *env) admitted(screening, user string) *firestore.DocumentRef {
	e.t.Helper()
	uid := userID(e.t, user)
	place := e.fs.Collection(sale.Queue).Doc(sale.QueueID(screening, uid))
	if _, err := place.Set(context.Background(), map[string]any{"uid": uid, "screeningId": screening, "status": sale.StatusAdmitted,
		"joinedAt": time.Now().Add(-time.Minute), "admittedAt": time.Now().Add(-time.Minute), "passUntil": time.Now().Add(time.Hour), "shard": 0, "order": "1"}); err != nil {
		e.t.Fatal(err)
	}
	return place
}

// Booking or holding one's own held seats at the cap answers seat_held
// ("confirm that hold instead", CONTRACT §3), not seat_limit (issue #29.6);
// free seats past the cap are still seat_limit, and nothing is written.
func TestOwnHeldSeatsAtTheCapAreSeatHeld(t *testing.T) {
	e := newEnv(t)
	e.onSale("open", time.Now().Add(time.Hour), map[string]any{"opensAt": time.Now().Add(-time.Minute), "admitPerMinute": 100, "maxActive": 50, "maxSeatsPerUser": 6})
	e.admitted("open", "alice")
	mine := []string{"A1", "A2", "A3", "A4", "A5", "A6"}
	if r := e.call("HoldSeats", token(t, "alice"), map[string]any{"screeningId": "open", "seats": mine, "requestId": "h1"}); r.Status != 201 {
		t.Fatalf("hold six: %d %v", r.Status, r.Body)
	}
	for _, c := range []struct {
		fn    string
		seats []string
		code  string
	}{
		{"BookSeats", mine, "seat_held"},
		{"BookSeats", []string{"A1"}, "seat_held"},
		{"HoldSeats", []string{"A2", "A3"}, "seat_held"},
		{"BookSeats", []string{"B1"}, "seat_limit"},
		{"HoldSeats", []string{"B1", "A1"}, "seat_held"},
	} {
		r := e.call(c.fn, token(t, "alice"), map[string]any{"screeningId": "open", "seats": c.seats, "requestId": c.fn + strings.Join(c.seats, "")})
		if r.Status != 409 || r.code() != c.code {
			t.Errorf("%s %v at the cap: %d %v, want 409 %s", c.fn, c.seats, r.Status, r.Body, c.code)
		}
	}
	seats, err := e.fs.Collection("screenings/open/seats").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(seats) != len(mine) {
		t.Fatalf("%d seat documents after refused requests, want the %d held", len(seats), len(mine))
	}
}
