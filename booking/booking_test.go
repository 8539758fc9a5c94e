package booking

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
)

func TestMain(m *testing.M) { os.Exit(emulators.RunTests(m, emulators.Firestore)) }

// A booking that stalls past its seat lease, while another booking takes
// the seat's lease over, must not commit: its transaction is guarded by the
// leases' fencing tokens.
func TestStalledBookingWhoseLeaseWasTakenOverDoesNotCommit(t *testing.T) {
	fs := emulators.NewFirestore(t)
	ctx := context.Background()
	if _, err := fs.Doc("screenings/s1").Set(ctx, Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 5}); err != nil {
		t.Fatal(err)
	}
	svc := New(fs)
	svc.seatLease = time.Second
	other, err := lock.New(fs, SeatLocks)
	if err != nil {
		t.Fatal(err)
	}
	var took *lock.Lease
	svc.afterLeases = func() {
		time.Sleep(1300 * time.Millisecond) // the stalled holder's lease ends
		if took, err = other.TryAcquire(ctx, seatKey("s1", "A1")); err != nil {
			t.Errorf("takeover: %v", err)
		}
	}
	_, _, err = svc.Book(ctx, "stalled", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
	if !errors.Is(err, ErrSeatBusy) {
		t.Fatalf("err = %v, want ErrSeatBusy", err)
	}
	seats, _ := fs.Collection("screenings/s1/seats").Documents(ctx).GetAll()
	bookings, _ := fs.Collection(Bookings).Documents(ctx).GetAll()
	if len(seats) != 0 || len(bookings) != 0 {
		t.Fatalf("the stalled booking committed: %d seats, %d bookings", len(seats), len(bookings))
	}
	// Its release left the new holder's lease alone.
	s, err := fs.Collection(SeatLocks).Doc(seatKey("s1", "A1")).Get(ctx)
	if err != nil || s.Data()["owner"] != other.Owner() || took == nil {
		t.Fatalf("the new holder's lease is gone: %v", err)
	}
}

func TestValidateRejectsBadRequests(t *testing.T) {
	for name, r := range map[string]Request{
		"no user":       {ScreeningID: "s", Seats: []string{"A1"}, RequestID: "r"},
		"bad seat":      {UID: "u", ScreeningID: "s", Seats: []string{"a1"}, RequestID: "r"},
		"seat zero":     {UID: "u", ScreeningID: "s", Seats: []string{"A0"}, RequestID: "r"},
		"long request":  {UID: "u", ScreeningID: "s", Seats: []string{"A1"}, RequestID: string(make([]byte, MaxRequestID+1))},
		"reserved id":   {UID: "u", ScreeningID: "__s__", Seats: []string{"A1"}, RequestID: "r"},
		"duplicate":     {UID: "u", ScreeningID: "s", Seats: []string{"B2", "B2"}, RequestID: "r"},
		"no request id": {UID: "u", ScreeningID: "s", Seats: []string{"A1"}},
	} {
		if err := r.validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
