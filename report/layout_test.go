package report

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
)

// A screening whose layout is no hall (booking.Screening.Check: more than
// booking.MaxHallSeats seats, or a negative seatsPerRow) is refused by the
// report as malformed, as the admitter and the booking service refuse it,
// not read seat by seat: a seatsPerRow of 2^40 written by hand would have
// `firelock sale report` allocate a trillion seat names.
func TestTheReportRefusesALayoutThatIsNoHall(t *testing.T) {
	fs := firelocktest.NewClient(t)
	ctx := context.Background()
	for id, layout := range map[string]map[string]any{
		"wide":  {"rows": []string{"A"}, "seatsPerRow": booking.MaxHallSeats + 1},
		"long":  {"rows": longRows(booking.MaxHallSeats + 1), "seatsPerRow": 1},
		"minus": {"rows": []string{"A"}, "seatsPerRow": -1},
	} {
		doc := map[string]any{"title": id, "startsAt": time.Now().Add(time.Hour), "sale": map[string]any{"opensAt": time.Now()}}
		for k, v := range layout {
			doc[k] = v
		}
		if _, err := fs.Collection(booking.Screenings).Doc(id).Set(ctx, doc); err != nil {
			t.Fatal(err)
		}
		_, err := Build(ctx, fs, id, time.Now())
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("the report of %s: %v; want the screening refused as malformed", id, err)
		}
	}
}

func longRows(n int) []string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = "R" + strconv.Itoa(i)
	}
	return rows
}
