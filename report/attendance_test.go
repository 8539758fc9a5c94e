package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/ticket"
)

// The report adds the door's attendance (issue #49): tickets expected, in,
// not yet in, and each gate's conflicts, in the JSON, the page and its
// figures; a screening without a door or tickets has none.
func TestTheReportCountsAttendance(t *testing.T) {
	fs := firelocktest.NewClient(t)
	writeFixture(t, fs)
	ctx := context.Background()
	r, err := Build(ctx, fs, screening, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attendance != nil {
		t.Fatalf("attendance of a screening without a door or tickets: %+v", r.Attendance)
	}

	if _, err := fs.Collection(booking.Screenings).Doc(screening).Update(ctx, []firestore.Update{{Path: door.Field,
		Value: door.Config{OpensAt: now.Add(-time.Hour), Gates: []string{"A", "B"}}.Fields()}}); err != nil {
		t.Fatal(err)
	}
	b := fs.Batch()
	for i, status := range []string{ticket.StatusValid, ticket.StatusValid, ticket.StatusValid, ticket.StatusCancelled} {
		id := "tk" + string(rune('1'+i))
		b.Set(fs.Collection(ticket.Collection).Doc(id), map[string]any{"screeningId": screening, "status": status, "seatId": "A" + string(rune('1'+i)), "version": 1})
	}
	b.Set(fs.Collection(door.CheckIns).Doc("tk1"), map[string]any{"screeningId": screening, "state": door.StateIn, "gate": "A"})
	b.Set(fs.Collection(door.CheckIns).Doc("tk2"), map[string]any{"screeningId": screening, "state": door.StateIn, "gate": "B"})
	scans := fs.Collection(booking.Screenings).Doc(screening).Collection(door.Scans)
	for nonce, s := range map[string][2]string{"n1": {"A", door.ResultAdmitted}, "n2": {"B", door.ResultAdmitted}, "n3": {"B", door.ResultConflict}} {
		b.Set(scans.Doc(nonce), map[string]any{"gate": s[0], "result": s[1], "at": now})
	}
	//lint:ignore SA1019 a fixture in one commit
	if _, err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err = Build(ctx, fs, screening, now); err != nil {
		t.Fatal(err)
	}
	a := r.Attendance
	if a == nil || a.Expected != 3 || a.In != 2 || a.NotYet != 1 || a.Conflicts != 1 || len(a.Gates) != 2 || a.Gates[1].Admitted != 1 || a.Gates[1].Conflicts != 1 {
		t.Fatalf("attendance %+v; want 3 expected, 2 in, 1 not yet, gate B 1 admitted and 1 conflict", a)
	}
	var js map[string]any
	raw, _ := json.Marshal(r)
	if err := json.Unmarshal(raw, &js); err != nil || js["attendance"].(map[string]any)["notYet"] != float64(1) {
		t.Errorf("JSON attendance: %v (%v)", js["attendance"], err)
	}
	var page strings.Builder
	if err := r.HTML(&page); err != nil {
		t.Fatal(err)
	}
	want := "In at the door 2 of 3 1 not yet in, 0 out now; by gate: A 1 in, 0 conflicts, B 1 in, 1 conflict"
	found := false
	for _, m := range lineRE.FindAllStringSubmatch(page.String(), -1) {
		if m[2] == "attendance" {
			found = true
			if got := text(m[3]); got != want {
				t.Errorf("the page's attendance line: %q; want %q", got, want)
			}
		}
	}
	if !found {
		t.Error("the page has no attendance line")
	}
}
