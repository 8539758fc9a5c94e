package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/ticket"
)

// tickets show verifies a code as a gate would and shows the ticket's
// check-in; door status counts what the door let in. A tampered code, an
// unknown ticket and an unknown screening exit 1.
func TestTicketsShowAndDoorStatus(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	keys, err := ticket.GenerateKeys("k1")
	if err != nil {
		t.Fatal(err)
	}
	secret, err := json.Marshal(keys.Secret())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ticket.KeyEnv, string(secret))
	c.screening("s1", 10)
	if _, err := c.db.Collection(booking.Screenings).Doc("s1").Update(ctx, []firestore.Update{{Path: door.Field,
		Value: door.Config{OpensAt: time.Now().Add(-time.Hour), Gates: []string{"A", "B"}}.Fields()}}); err != nil {
		t.Fatal(err)
	}
	svc := booking.New(c.db, booking.WithTickets(ticket.New(c.db, keys)))
	defer svc.Close()
	if _, _, err := svc.Book(ctx, "x1", booking.Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"}); err != nil {
		t.Fatal(err)
	}
	snaps, err := c.db.Collection(ticket.Collection).Where("screeningId", "==", "s1").Documents(ctx).GetAll()
	if err != nil || len(snaps) != 2 {
		t.Fatalf("%d tickets (%v); want 2", len(snaps), err)
	}
	first, err := ticket.DecodeTicket(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := door.New(c.db, keys).CheckIn(ctx, door.Request{Scanner: "scanner-1", ScreeningID: "s1", Gate: "A",
		Code: first.Code, Nonce: "nonce-0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}

	out := c.must("tickets", "show", first.Code)
	for _, want := range []string{first.ID, "seat       " + first.SeatID, "signature valid (key k1), version 1: current", "in at gate A", "verdict    already_in"} {
		if !strings.Contains(out, want) {
			t.Errorf("tickets show CODE: no %q in\n%s", want, out)
		}
	}
	var v ticketView
	if err := json.Unmarshal([]byte(c.must("tickets", "show", first.ID, "-o", "json")), &v); err != nil || v.CheckIn == nil || v.CheckIn.Gate != "A" || v.Code != nil || v.Verdict != "already_in" {
		t.Errorf("tickets show ID -o json: %+v (%v)", v, err)
	}
	// A code whose signature's last character changed, and one whose
	// payload names another seat under the same signature.
	tampered := first.Code[:len(first.Code)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(first.Code, "AA")]
	parts := strings.Split(first.Code, ".")
	d, _ := ticket.Decode(first.Code)
	p := d.Payload
	p.Seat = "A9"
	forged, _ := keys.Sign(p)
	forged = parts[0] + "." + strings.Split(forged, ".")[1] + "." + parts[2]
	for _, code := range []string{tampered, forged} {
		if code, out, errOut := c.run("tickets", "show", code); code != exitRefused || !strings.Contains(errOut, "not valid") || out != "" {
			t.Errorf("tickets show of a tampered code: exit %d, %q, %q", code, out, errOut)
		}
	}
	if code, _, errOut := c.run("tickets", "show", "no-such-ticket"); code != exitRefused || !strings.Contains(errOut, "no ticket") {
		t.Errorf("tickets show of an unknown id: exit %d, %q", code, errOut)
	}
	// An old ticket id that begins with '-' is given after --, as the help says.
	if code, _, errOut := c.run("tickets", "show", "--", "-sNqo8no-such-ticket"); code != exitRefused || !strings.Contains(errOut, "no ticket") {
		t.Errorf("tickets show -- -sNqo8...: exit %d, %q; want %d and no ticket", code, errOut, exitRefused)
	}
	if code, _, _ := c.run("tickets", "show", "a/b"); code != exitUsage {
		t.Errorf("tickets show a/b: exit %d; want %d", code, exitUsage)
	}

	out = c.must("door", "status", "s1")
	for _, want := range []string{"gates A, B", "expected  2", "in        1", "not yet   1", "A     1      1"} {
		if !strings.Contains(out, want) {
			t.Errorf("door status: no %q in\n%s", want, out)
		}
	}
	var st doorStatus
	if err := json.Unmarshal([]byte(c.must("door", "status", "s1", "-o", "json")), &st); err != nil ||
		st.Expected != 2 || st.In != 1 || st.NotYet != 1 || len(st.Gates) != 2 || st.Gates[0].Admitted != 1 || len(st.Arrivals) != arrivalMinutes {
		t.Errorf("door status -o json: %+v (%v)", st, err)
	}
	admitted := 0
	for _, m := range st.Arrivals {
		admitted += m.Admitted
	}
	if admitted != 1 {
		t.Errorf("arrivals over the last minutes: %d; want 1 (%+v)", admitted, st.Arrivals)
	}
	if code, _, errOut := c.run("door", "status", "nowhere"); code != exitRefused || !strings.Contains(errOut, "no screening") {
		t.Errorf("door status of an unknown screening: exit %d, %q", code, errOut)
	}
}
