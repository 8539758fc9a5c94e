package functions_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
)

// Defects found in review (issue #25, items 1-4), each as a user meets it
// over HTTP.

// A repeated ConfirmHold answers the booking as it is stored: after the
// booking was cancelled and another user booked the seat, it is cancelled,
// not "confirmed".
func TestRepeatedConfirmAnswersTheBookingAsStored(t *testing.T) {
	e := newEnv(t)
	h := e.hold("ann", "h1", 0, "A1")
	if h.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", h.Status, h.Body)
	}
	c := e.onHold("ConfirmHold", "ann", str(h, "holdId"))
	if c.Status != http.StatusCreated {
		t.Fatalf("confirm: %d %v", c.Status, c.Body)
	}
	if r := e.call("CancelBooking", token(t, "ann"), map[string]any{"bookingId": str(c, "bookingId")}); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %v", r.Status, r.Body)
	}
	if r := e.book("bob", "b1", "A1"); r.Status != http.StatusCreated {
		t.Fatalf("bob books A1: %d %v", r.Status, r.Body)
	}
	again := e.onHold("ConfirmHold", "ann", str(h, "holdId"))
	if again.Status != http.StatusOK || str(again, "status") != "cancelled" || str(again, "bookingId") != str(c, "bookingId") {
		t.Fatalf("second confirm: %d %v; want 200 with the cancelled booking %s", again.Status, again.Body, str(c, "bookingId"))
	}
	st := e.holdState()
	if n := len(st.bookings); n != 2 {
		t.Fatalf("%d bookings, want 2 (ann's cancelled, bob's)", n)
	}
	st.check(t)
}

// A confirm after the screening has started books nothing: §3's cutoff
// applies to every new booking.
func TestConfirmAfterTheStartIsRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hold("ann", "h1", 0, "B2")
	if h.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", h.Status, h.Body)
	}
	if _, err := e.fs.Doc("screenings/s1").Update(ctx, []firestore.Update{{Path: "startsAt", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	c := e.onHold("ConfirmHold", "ann", str(h, "holdId"))
	if c.Status != http.StatusConflict || c.code() != "screening_started" {
		t.Fatalf("confirm after the start: %d %v; want 409 screening_started", c.Status, c.Body)
	}
	st := e.holdState()
	if len(st.bookings) != 0 || st.sold != 0 {
		t.Fatalf("a confirm after the start booked: %d bookings, %d sold", len(st.bookings), st.sold)
	}
}

// A warm instance stops booking once startsAt is moved into the past: the
// cutoff does not wait for a cached screening to expire. The one-commit
// path decides on the screening its listener delivers, so the edit takes
// effect within the listener's delivery; a request that reads first
// (here: a seat with a lapsed hold on it) decides on the edit at once.
func TestMovingStartsAtIntoThePastStopsAWarmInstance(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for a hold to lapse
	e := newEnv(t)
	ctx := context.Background()
	// Warm up: bookings and a hold that lapses, through one instance.
	for i, seat := range []string{"C1", "C2", "C3"} {
		if r := e.book("ann", "w"+string(rune('0'+i)), seat); r.Status != http.StatusCreated {
			t.Fatalf("warm-up booking: %d %v", r.Status, r.Body)
		}
	}
	if r := e.hold("ann", "lapsing", 5, "D1"); r.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", r.Status, r.Body)
	}
	time.Sleep(5100 * time.Millisecond)
	if _, err := e.fs.Doc("screenings/s1").Update(ctx, []firestore.Update{{Path: "startsAt", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	// Reads first (a lapsed hold's seat): refused at once.
	if r := e.book("bob", "late-lapsed", "D1"); r.Status != http.StatusConflict || r.code() != "screening_started" {
		t.Fatalf("booking the lapsed seat after the start: %d %v; want 409 screening_started", r.Status, r.Body)
	}
	// Free seats: refused once the listener delivered the edit, and from
	// then on, always.
	deadline := time.Now().Add(5 * time.Second)
	refused := false
	for i := 0; i < 50; i++ {
		r := e.book("bob", "late"+string(rune('a'+i%26))+string(rune('a'+i/26)), "E"+itoa(i+1))
		switch {
		case r.Status == http.StatusConflict && r.code() == "screening_started":
			refused = true
		case refused:
			t.Fatalf("booked after an earlier request was refused for the start: %d %v", r.Status, r.Body)
		case time.Now().After(deadline):
			t.Fatalf("still booking %v after startsAt moved into the past: %d %v", time.Since(deadline.Add(-5*time.Second)), r.Status, r.Body)
		}
		if refused && i > 10 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !refused {
		t.Fatal("never refused")
	}
}

// A requestId cannot take another request's document: ids of bookings,
// holds and confirmations live in separate namespaces, and ids with
// control characters are refused.
func TestRequestIDCannotTakeAConfirmationsID(t *testing.T) {
	e := newEnv(t)
	h := e.hold("ann", "h1", 0, "G5")
	if h.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", h.Status, h.Body)
	}
	holdID := str(h, "holdId")
	// What the old scheme hashed for this hold's confirmation.
	r := e.book("ann", "confirm\x00"+holdID, "G6")
	if r.Status != http.StatusBadRequest || r.code() != "invalid_argument" {
		t.Fatalf("requestId with a NUL: %d %v; want 400", r.Status, r.Body)
	}
	for _, id := range []string{"a\nb", "tab\there", "\u0085"} {
		if r := e.book("ann", id, "G7"); r.Status != http.StatusBadRequest {
			t.Errorf("requestId %q: %d %v; want 400", id, r.Status, r.Body)
		}
	}
	c := e.onHold("ConfirmHold", "ann", holdID)
	if c.Status != http.StatusCreated || str(c, "status") != "confirmed" {
		t.Fatalf("confirm: %d %v; want 201 confirmed", c.Status, c.Body)
	}
	e.holdState().check(t)
}
