package booking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
)

// TestMain runs the parallel tests (each on its own project and fault
// proxy, waiting on answers it lost) eight at a time instead of two. Tests
// that time a claim against a screening's start or a hold's end, or plant
// bugs, stay sequential.
func TestMain(m *testing.M) {
	firelocktest.SideBySide(8)
	os.Exit(firelocktest.Main(m))
}

// newScreening writes screening s1 (row A, 5 seats, starting in an hour)
// and returns a Service on it.
func newScreening(t *testing.T) (*firestore.Client, *Service) {
	t.Helper()
	fs := firelocktest.NewClient(t)
	if _, err := fs.Doc("screenings/s1").Set(context.Background(), Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 5}); err != nil {
		t.Fatal(err)
	}
	svc := New(fs)
	t.Cleanup(svc.Close)
	return fs, svc
}

// warm makes svc's next booking on s1 take the one-commit path: its
// screening listener delivered and its clock has a sample.
func warm(t *testing.T, svc *Service) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := svc.Book(ctx, "warm", Request{UID: "w", ScreeningID: "s1", Seats: []string{"A5"}, RequestID: "warm"}); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, ok := svc.screenings.current("s1"); ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the screening listener never delivered")
}

// A booking that stalls between its decision and its commit, while another
// request takes one of its seats, does not commit: its seat writes are
// conditioned on the seats as it found them.
func TestStalledBookingDoesNotCommitOverAnotherTake(t *testing.T) {
	for _, path := range []string{"one commit", "read first"} {
		t.Run(path, func(t *testing.T) {
			fs, svc := newScreening(t)
			ctx := context.Background()
			if path == "one commit" {
				warm(t, svc)
			}
			other := New(fs)
			defer other.Close()
			stalled := false
			svc.hooks.beforeCommit = func(fast bool) {
				if stalled {
					return
				}
				stalled = true
				if fast != (path == "one commit") {
					t.Errorf("the booking took the wrong path: one commit %v", fast)
				}
				if _, _, err := other.Book(ctx, "other", Request{UID: "u2", ScreeningID: "s1", Seats: []string{"A2"}, RequestID: "r2"}); err != nil {
					t.Errorf("the other booking: %v", err)
				}
			}
			_, _, err := svc.Book(ctx, "stalled", Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"})
			if !errors.Is(err, ErrSeatTaken) {
				t.Fatalf("err = %v, want ErrSeatTaken", err)
			}
			b, err := fs.Collection(Bookings).Where("uid", "==", "u1").Documents(ctx).GetAll()
			if err != nil || len(b) != 0 {
				t.Fatalf("the stalled booking committed: %d bookings (%v)", len(b), err)
			}
			if s, err := fs.Doc("screenings/s1/seats/A1").Get(ctx); !notFound(err) {
				t.Fatalf("seat A1 was written: %v %v", s.Data(), err)
			}
		})
	}
}

// A first attempt that stalls while its own retry books answers that
// booking, never seat_busy or seat_taken (issue #25, item 5).
func TestStalledFirstAttemptAnswersItsRetrysBooking(t *testing.T) {
	for _, path := range []string{"one commit", "read first"} {
		t.Run(path, func(t *testing.T) {
			fs, svc := newScreening(t)
			ctx := context.Background()
			if path == "one commit" {
				warm(t, svc)
			}
			r := Request{UID: "u1", ScreeningID: "s1", Seats: []string{"A1", "A2"}, RequestID: "r1"}
			retry := New(fs)
			defer retry.Close()
			var retried Booking
			stalled := false
			svc.hooks.beforeCommit = func(fast bool) {
				if stalled {
					return
				}
				stalled = true
				if fast != (path == "one commit") {
					t.Errorf("the booking took the wrong path: one commit %v", fast)
				}
				var created bool
				var err error
				if retried, created, err = retry.Book(ctx, "retry", r); err != nil || !created {
					t.Errorf("the retry: created %v, %v", created, err)
				}
			}
			b, created, err := svc.Book(ctx, "first", r)
			if err != nil {
				t.Fatalf("the first attempt: %v; want the retry's booking", err)
			}
			if created || b.ID != retried.ID || b.Status != StatusOK {
				t.Fatalf("the first attempt answered %+v (created %v); want the retry's booking %s", b, created, retried.ID)
			}
			all, _ := fs.Collection(Bookings).Documents(ctx).GetAll()
			if n := len(all); n != 1+btoi(path == "one commit") {
				t.Fatalf("%d bookings, want one for the request", n)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestValidateRejectsBadRequests(t *testing.T) {
	for name, r := range map[string]Request{
		"no user":       {ScreeningID: "s", Seats: []string{"A1"}, RequestID: "r"},
		"bad seat":      {UID: "u", ScreeningID: "s", Seats: []string{"a1"}, RequestID: "r"},
		"seat zero":     {UID: "u", ScreeningID: "s", Seats: []string{"A0"}, RequestID: "r"},
		"long request":  {UID: "u", ScreeningID: "s", Seats: []string{"A1"}, RequestID: string(make([]byte, MaxRequestID+1))},
		"reserved id":   {UID: "u", ScreeningID: "__s__", Seats: []string{"A1"}, RequestID: "r"},
		"NUL in id":     {UID: "u", ScreeningID: "s", Seats: []string{"A1"}, RequestID: "confirm\x00x"},
		"newline in id": {UID: "u", ScreeningID: "s\n", Seats: []string{"A1"}, RequestID: "r"},
		"not UTF-8":     {UID: "u", ScreeningID: "s", Seats: []string{"A1"}, RequestID: "\xff"},
		"duplicate":     {UID: "u", ScreeningID: "s", Seats: []string{"B2", "B2"}, RequestID: "r"},
		"no request id": {UID: "u", ScreeningID: "s", Seats: []string{"A1"}},
	} {
		if err := r.validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

// Several instances (Services), each with many goroutines, race for a few
// seats with bookings and holds on both paths. Afterwards, on what
// Firestore holds: no seat is in two confirmed bookings or live holds,
// every seat document belongs to the booking or hold that names it, and
// every success the callers saw is there.
func TestInstancesRacingForSeatsKeepEverySeatExclusive(t *testing.T) {
	fs, first := newScreening(t)
	ctx := context.Background()
	svcs := []*Service{first}
	for range 3 {
		s := New(fs)
		t.Cleanup(s.Close)
		svcs = append(svcs, s)
	}
	for _, s := range svcs {
		warm(t, s)
	}
	seats := []string{"A1", "A2", "A3", "A4"}
	var mu sync.Mutex
	won := map[string]string{} // document path -> kind, for every success
	var wg sync.WaitGroup
	for w := range 32 {
		svc := svcs[w%len(svcs)]
		wg.Go(func() {
			for i := range 6 {
				pick := []string{seats[rand.IntN(len(seats))]}
				if rand.IntN(3) == 0 {
					if other := seats[rand.IntN(len(seats))]; other != pick[0] {
						pick = append(pick, other)
					}
				}
				r := Request{UID: fmt.Sprint("u", w), ScreeningID: "s1", Seats: pick, RequestID: fmt.Sprint(w, "-", i)}
				if i%2 == 0 {
					if b, created, err := svc.Book(ctx, "e", r); err == nil && created {
						mu.Lock()
						won[fs.Collection(Bookings).Doc(b.ID).Path] = "booking"
						mu.Unlock()
					} else if err != nil && !errors.Is(err, ErrSeatTaken) && !errors.Is(err, ErrSeatHeld) && !errors.Is(err, ErrSeatBusy) {
						t.Errorf("book: %v", err)
					}
				} else {
					if h, created, err := svc.Hold(ctx, "e", r, time.Minute); err == nil && created {
						mu.Lock()
						won[fs.Collection(Holds).Doc(h.ID).Path] = "hold"
						mu.Unlock()
					} else if err != nil && !errors.Is(err, ErrSeatTaken) && !errors.Is(err, ErrSeatHeld) && !errors.Is(err, ErrSeatBusy) {
						t.Errorf("hold: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	owner := map[string]string{}
	for _, coll := range []string{Bookings, Holds} {
		snaps, err := fs.Collection(coll).Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			if s.Data()["uid"] == "w" { // the warm-up booking
				continue
			}
			delete(won, s.Ref.Path)
			for _, seat := range s.Data()["seats"].([]any) {
				if prev, ok := owner[seat.(string)]; ok {
					t.Errorf("seat %s is %s's and %s's", seat, prev, s.Ref.ID)
				}
				owner[seat.(string)] = s.Ref.ID
			}
		}
	}
	for doc := range won {
		t.Errorf("a success is not in Firestore: %s", doc)
	}
	for _, seat := range seats {
		snap, err := fs.Collection("screenings/s1/seats").Doc(seat).Get(ctx)
		if notFound(err) {
			if owner[seat] != "" {
				t.Errorf("seat %s has no document but is %s's", seat, owner[seat])
			}
			continue
		}
		d := snap.Data()
		by, _ := d["bookingId"].(string)
		if by == "" {
			by, _ = d["holdId"].(string)
		}
		if by != owner[seat] {
			t.Errorf("seat %s names %q, the documents say %q", seat, by, owner[seat])
		}
	}
	if len(owner) == 0 {
		t.Fatal("nobody won a seat")
	}
}
