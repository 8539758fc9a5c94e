package functions_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func (e *env) hold(user, requestID string, secs int, seats ...string) response {
	body := map[string]any{"screeningId": "s1", "seats": seats, "requestId": requestID}
	if secs != 0 {
		body["holdSeconds"] = secs
	}
	return e.call("HoldSeats", token(e.t, user), body)
}

func (e *env) onHold(fn, user, holdID string, extra ...any) response {
	body := map[string]any{"holdId": holdID}
	if len(extra) == 1 {
		body["holdSeconds"] = extra[0]
	}
	return e.call(fn, token(e.t, user), body)
}

func str(r response, k string) string { s, _ := r.Body[k].(string); return s }

// holdState is what Firestore holds of seats, holds and bookings, judged
// at server time now (a snapshot's read time).
type holdState struct {
	now      time.Time
	seats    map[string]map[string]any
	holds    map[string]map[string]any
	bookings map[string]map[string]any
	sold     int64
}

func (e *env) holdState() holdState {
	e.t.Helper()
	ctx := context.Background()
	st := holdState{seats: map[string]map[string]any{}, holds: map[string]map[string]any{}, bookings: map[string]map[string]any{}}
	read := func(path string, into map[string]map[string]any) {
		snaps, err := e.fs.Collection(path).Documents(ctx).GetAll()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range snaps {
			into[s.Ref.ID] = s.Data()
			if s.ReadTime.After(st.now) {
				st.now = s.ReadTime
			}
		}
	}
	read("screenings/s1/seats", st.seats)
	read(booking.Holds, st.holds)
	read(booking.Bookings, st.bookings)
	if st.now.IsZero() {
		st.now = time.Now()
	}
	if c, err := counter.Open(ctx, e.fs, booking.CounterID("s1")); err == nil {
		var err error
		if st.sold, err = c.Count(ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	return st
}

// check: no seat in two live holds or confirmed bookings; every seat
// document matches exactly one live hold or confirmed booking (or is a
// lapsed hold's, which counts as free); seat documents name no user; the
// counter equals the confirmed seats.
func (st holdState) check(t *testing.T) {
	t.Helper()
	owner := map[string]string{}
	claim := func(seat, by string) {
		if other, ok := owner[seat]; ok {
			t.Errorf("seat %s claimed by %s and %s", seat, other, by)
		}
		owner[seat] = by
	}
	confirmed := 0
	for id, b := range st.bookings {
		if b["status"] == booking.StatusOK {
			for _, s := range b["seats"].([]any) {
				claim(s.(string), "booking "+id)
				confirmed++
			}
		}
	}
	for id, h := range st.holds {
		until, _ := h["heldUntil"].(time.Time)
		if h["status"] == booking.StatusHeld && st.now.Before(until) {
			for _, s := range h["seats"].([]any) {
				claim(s.(string), "hold "+id)
			}
		}
	}
	for seat, d := range st.seats {
		if _, ok := d["uid"]; ok {
			t.Errorf("seat document %s names a user: %v", seat, d)
		}
		var by string
		switch d["status"] {
		case booking.StatusBooked:
			by = fmt.Sprint("booking ", d["bookingId"])
		case booking.StatusHeld:
			if until, _ := d["heldUntil"].(time.Time); !st.now.Before(until) {
				continue // a lapsed hold: free
			}
			by = fmt.Sprint("hold ", d["holdId"])
		}
		if owner[seat] != by {
			t.Errorf("seat document %s says %q, holds and bookings say %q", seat, by, owner[seat])
		}
		delete(owner, seat)
	}
	for seat, by := range owner {
		t.Errorf("seat %s is claimed by %s but its seat document does not show it", seat, by)
	}
	if st.sold != int64(confirmed) {
		t.Errorf("tickets-sold counter %d, confirmed seats %d", st.sold, confirmed)
	}
}

func TestHoldThenConfirm(t *testing.T) {
	e := newEnv(t)
	h := e.hold("hana", "h-1", 0, "D5", "D4")
	if h.Status != http.StatusCreated || str(h, "status") != "held" || str(h, "heldUntil") == "" || str(h, "holdId") == "" {
		t.Fatalf("hold: %d %v", h.Status, h.Body)
	}
	until, err := time.Parse(time.RFC3339, str(h, "heldUntil"))
	if err != nil || time.Until(until) < 6*time.Minute || time.Until(until) > 8*time.Minute {
		t.Fatalf("heldUntil %q: want about 420 s from now (%v)", str(h, "heldUntil"), err)
	}
	if r := e.hold("hana", "h-1", 0, "D4", "D5"); r.Status != http.StatusOK || str(r, "holdId") != str(h, "holdId") {
		t.Fatalf("retry: %d %v", r.Status, r.Body)
	}
	if r := e.book("ivan", "b-1", "D5"); r.Status != http.StatusConflict || r.code() != "seat_held" {
		t.Fatalf("booking a held seat: %d %v", r.Status, r.Body)
	}
	if r := e.book("hana", "b-2", "D5"); r.code() != "seat_held" {
		t.Fatalf("the holder booking her own held seat: %d %v (want seat_held: confirm the hold)", r.Status, r.Body)
	}
	e.holdState().check(t)
	c := e.onHold("ConfirmHold", "hana", str(h, "holdId"))
	if c.Status != http.StatusCreated || str(c, "status") != "confirmed" || str(c, "bookingId") == "" {
		t.Fatalf("confirm: %d %v", c.Status, c.Body)
	}
	if again := e.onHold("ConfirmHold", "hana", str(h, "holdId")); again.Status != http.StatusOK || str(again, "bookingId") != str(c, "bookingId") {
		t.Fatalf("confirm again: %d %v", again.Status, again.Body)
	}
	st := e.holdState()
	st.check(t)
	if st.holds[str(h, "holdId")]["status"] != "confirmed" || st.sold != 2 {
		t.Fatalf("after confirm: hold %v, sold %d", st.holds[str(h, "holdId")], st.sold)
	}
	// A confirmed hold's booking cancels like any booking.
	if r := e.call("CancelBooking", token(t, "hana"), map[string]any{"bookingId": str(c, "bookingId")}); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %v", r.Status, r.Body)
	}
	e.holdState().check(t)
}

func TestHoldThenReleaseFreesTheSeats(t *testing.T) {
	e := newEnv(t)
	h := e.hold("rae", "r-1", 60, "B1")
	if h.Status != http.StatusCreated {
		t.Fatal(h.Body)
	}
	for i := range 2 { // releasing twice is harmless
		if r := e.onHold("ReleaseHold", "rae", str(h, "holdId")); r.Status != http.StatusOK || str(r, "status") != "released" {
			t.Fatalf("release %d: %d %v", i, r.Status, r.Body)
		}
	}
	if r := e.book("sam", "s-1", "B1"); r.Status != http.StatusCreated {
		t.Fatalf("booking a released seat: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ConfirmHold", "rae", str(h, "holdId")); r.Status != http.StatusGone || r.code() != "hold_expired" {
		t.Fatalf("confirming a released hold: %d %v", r.Status, r.Body)
	}
	e.holdState().check(t)
}

// A hold lapses by Firestore's clock: its seats are free for the next
// booking at once, with no job run, and a late confirm books nothing.
func TestLapsedHoldIsFreeAndCannotBeConfirmed(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for the hold to lapse
	e := newEnv(t)
	h := e.hold("lena", "l-1", 5, "C7", "C8")
	if h.Status != http.StatusCreated {
		t.Fatal(h.Body)
	}
	if r := e.book("otto", "o-1", "C8"); r.code() != "seat_held" {
		t.Fatalf("during the hold: %d %v", r.Status, r.Body)
	}
	time.Sleep(5500 * time.Millisecond)
	if r := e.book("otto", "o-2", "C8"); r.Status != http.StatusCreated {
		t.Fatalf("after the hold lapsed: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ConfirmHold", "lena", str(h, "holdId")); r.Status != http.StatusGone || r.code() != "hold_expired" {
		t.Fatalf("late confirm: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ExtendHold", "lena", str(h, "holdId"), 60); r.Status != http.StatusGone {
		t.Fatalf("late extend: %d %v", r.Status, r.Body)
	}
	st := e.holdState()
	st.check(t)
	if st.sold != 1 {
		t.Fatalf("sold %d, want otto's one seat", st.sold)
	}
	// The sweep tidies the lapsed hold: expired, and C7 leaves the map.
	n, err := booking.New(e.fs).ExpireHolds(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("ExpireHolds = %d, %v", n, err)
	}
	st = e.holdState()
	if st.holds[str(h, "holdId")]["status"] != "expired" || st.seats["C7"] != nil || st.seats["C8"]["status"] != "booked" {
		t.Fatalf("after the sweep: hold %v, C7 %v, C8 %v", st.holds[str(h, "holdId")], st.seats["C7"], st.seats["C8"])
	}
	st.check(t)
}

func TestExtendHold(t *testing.T) {
	t.Parallel() // its own project; it mostly waits for the first end to pass
	e := newEnv(t)
	h := e.hold("ezra", "e-1", 5, "A1")
	first, _ := time.Parse(time.RFC3339, str(h, "heldUntil"))
	x := e.onHold("ExtendHold", "ezra", str(h, "holdId"), 30)
	later, _ := time.Parse(time.RFC3339, str(x, "heldUntil"))
	if x.Status != http.StatusOK || !later.After(first.Add(20*time.Second)) {
		t.Fatalf("extend: %d %v (first end %v)", x.Status, x.Body, first)
	}
	time.Sleep(time.Until(first) + 500*time.Millisecond)
	if r := e.hold("fay", "f-1", 0, "A1"); r.code() != "seat_held" {
		t.Fatalf("past the first end, the extended hold still holds: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ExtendHold", "fay", str(h, "holdId"), 30); r.Status != http.StatusForbidden || r.code() != "permission_denied" {
		t.Fatalf("another user extends: %d %v", r.Status, r.Body)
	}
	for _, fn := range []string{"ConfirmHold", "ReleaseHold"} {
		if r := e.onHold(fn, "fay", str(h, "holdId")); r.Status != http.StatusForbidden {
			t.Fatalf("another user's %s: %d %v", fn, r.Status, r.Body)
		}
	}
	if r := e.onHold("ConfirmHold", "fay", "no-such-hold"); r.Status != http.StatusNotFound || r.code() != "hold_not_found" {
		t.Fatalf("unknown hold: %d %v", r.Status, r.Body)
	}

	// A hold made 1000 s ago cannot reach past 1800 s after its creation.
	ctx := context.Background()
	now := time.Now()
	old := map[string]any{"uid": userID(t, "ezra"), "screeningId": "s1", "seats": []string{"J1"}, "status": "held",
		"heldUntil": now.Add(100 * time.Second), "requestId": "old", "createdAt": now.Add(-1000 * time.Second)}
	if _, err := e.fs.Doc("holds/old-hold").Set(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Doc("screenings/s1/seats/J1").Set(ctx, map[string]any{"status": "held", "holdId": "old-hold", "heldUntil": now.Add(100 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if r := e.onHold("ExtendHold", "ezra", "old-hold", 900); r.Status != http.StatusBadRequest || r.code() != "invalid_argument" {
		t.Fatalf("extend past 1800 s from creation: %d %v", r.Status, r.Body)
	}
	if r := e.onHold("ExtendHold", "ezra", "old-hold", 700); r.Status != http.StatusOK {
		t.Fatalf("extend within 1800 s from creation: %d %v", r.Status, r.Body)
	}
}

func TestBadHoldSecondsWritesNothing(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "bea")
	for _, body := range []string{
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 0}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 4}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 901}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": -5}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 1.5}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": "60"}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 30.5}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 1e30}`,
		// Times time.Second, these wrap to 420 s and -420 s: the range is
		// checked on the integer, before any conversion.
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 36028797018964388}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": -36028797018964388}`,
		`{"screeningId": "s1", "seats": ["A1"], "requestId": "x", "holdSeconds": 9223372036854775807}`,
	} {
		if r := e.call("HoldSeats", tok, body); r.Status != http.StatusBadRequest || r.code() != "invalid_argument" {
			t.Errorf("%s: %d %v", body, r.Status, r.Body)
		}
	}
	if st := e.holdState(); len(st.holds)+len(st.seats) != 0 {
		t.Errorf("refused holds wrote: %d holds, %d seats", len(st.holds), len(st.seats))
	}
	h := e.hold("bea", "ok", 60, "B2")
	if h.Status != http.StatusCreated {
		t.Fatalf("hold: %d %v", h.Status, h.Body)
	}
	for _, body := range []string{
		`{"holdId": "` + str(h, "holdId") + `"}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": 2}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": 1000}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": 30.5}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": -5}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": 36028797018964388}`,
		`{"holdId": "` + str(h, "holdId") + `", "holdSeconds": -36028797018964388}`,
		`{"holdSeconds": 60}`,
	} {
		if r := e.call("ExtendHold", tok, body); r.Status != http.StatusBadRequest || r.code() != "invalid_argument" {
			t.Errorf("ExtendHold %s: %d %v", body, r.Status, r.Body)
		}
	}
	st := e.holdState()
	if len(st.holds) != 1 || len(st.seats) != 1 {
		t.Fatalf("bad input wrote: %d holds, %d seats", len(st.holds), len(st.seats))
	}
	if until := st.holds[str(h, "holdId")]["heldUntil"].(time.Time); until.Sub(st.now) > 61*time.Second {
		t.Fatalf("a refused extension moved heldUntil to %v", until)
	}
}

func TestFiftyUsersHoldOneSeatExactlyOneWins(t *testing.T) {
	e := newEnv(t)
	const n = 50
	codes := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		tok := token(t, fmt.Sprint("fan", i))
		wg.Go(func() {
			codes[i] = e.call("HoldSeats", tok, map[string]any{"screeningId": "s1", "seats": []string{"E10"}, "requestId": "race"})
		})
	}
	wg.Wait()
	won := 0
	for _, r := range codes {
		switch {
		case r.Status == http.StatusCreated:
			won++
		case r.Status == http.StatusConflict && (r.code() == "seat_held" || r.code() == "seat_busy"):
		default:
			t.Errorf("unexpected answer %d %v", r.Status, r.Body)
		}
	}
	st := e.holdState()
	if won != 1 || len(st.holds) != 1 {
		t.Fatalf("%d holds won, %d hold documents: want exactly 1", won, len(st.holds))
	}
	st.check(t)
}

// A retry with the same user and requestId while the first attempt is in
// flight never answers 409: it joins the first attempt (200) or asks to
// retry (503).
func TestConcurrentIdenticalRequestsNeverConflict(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "tripp")
	for round := range 15 {
		for fn, row := range map[string]string{"BookSeats": "F", "HoldSeats": "G"} {
			seat := fmt.Sprint(row, round+1)
			body := map[string]any{"screeningId": "s1", "seats": []string{seat}, "requestId": fmt.Sprint(fn, round)}
			var answers [3]response
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() { answers[i] = e.call(fn, tok, body) })
			}
			wg.Wait()
			created := 0
			for _, r := range answers {
				switch r.Status {
				case http.StatusCreated:
					created++
				case http.StatusOK, http.StatusServiceUnavailable:
				default:
					t.Fatalf("round %d %s: an identical request answered %d %v", round, fn, r.Status, r.Body)
				}
			}
			if created != 1 {
				t.Fatalf("round %d %s: %d answers 201, want 1", round, fn, created)
			}
		}
	}
	e.holdState().check(t)
}

func TestStartedScreeningTakesNoBookingOrHold(t *testing.T) {
	e := newEnv(t)
	if _, err := e.fs.Doc("screenings/s1").Update(context.Background(), []firestore.Update{{Path: "startsAt", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	// The layout cache of the running service would keep the old start for
	// a minute; a fresh service reads it (what a new instance does).
	fresh := newEnvOn(t, e.fs)
	if r := fresh.book("late", "l-1", "A1"); r.Status != http.StatusConflict || r.code() != "screening_started" {
		t.Fatalf("book: %d %v", r.Status, r.Body)
	}
	if r := fresh.hold("late", "l-2", 0, "A1"); r.Status != http.StatusConflict || r.code() != "screening_started" {
		t.Fatalf("hold: %d %v", r.Status, r.Body)
	}
	if st := fresh.holdState(); len(st.seats)+len(st.holds)+len(st.bookings) != 0 {
		t.Fatal("a refused request wrote something")
	}
}

// Mixed traffic from 30 users (holds, some of them short, confirms,
// releases, bookings, cancels) keeps every invariant on what Firestore
// holds afterwards.
func TestMixedHoldAndBookingTrafficKeepsInvariants(t *testing.T) {
	t.Parallel() // its own project; judged on what Firestore holds
	e := newEnv(t)
	const users, ops = 30, 12
	seats := []string{"A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3"}
	var wg sync.WaitGroup
	for u := range users {
		name := fmt.Sprint("mix", u)
		tok := token(t, name)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 7))
			var holds, bookings []string
			for i := range ops {
				pick := []string{seats[rng.IntN(len(seats))]}
				if rng.IntN(3) == 0 {
					pick = append(pick, seats[rng.IntN(len(seats))])
				}
				req := fmt.Sprint(name, "-", i)
				switch k := rng.IntN(6); {
				case k == 0 && len(holds) > 0:
					r := e.call("ConfirmHold", tok, map[string]any{"holdId": holds[rng.IntN(len(holds))]})
					if id := str(r, "bookingId"); id != "" {
						bookings = append(bookings, id)
					}
				case k == 1 && len(holds) > 0:
					e.call("ReleaseHold", tok, map[string]any{"holdId": holds[rng.IntN(len(holds))]})
				case k == 2 && len(bookings) > 0:
					e.call("CancelBooking", tok, map[string]any{"bookingId": bookings[rng.IntN(len(bookings))]})
				case k == 3:
					r := e.call("BookSeats", tok, map[string]any{"screeningId": "s1", "seats": pick, "requestId": req})
					if id := str(r, "bookingId"); id != "" {
						bookings = append(bookings, id)
					}
				default:
					secs := 5 + rng.IntN(3) // short: they lapse mid-run
					r := e.call("HoldSeats", tok, map[string]any{"screeningId": "s1", "seats": pick, "requestId": req, "holdSeconds": secs})
					if id := str(r, "holdId"); id != "" {
						holds = append(holds, id)
					}
				}
				time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	e.holdState().check(t)
}

// faultyFirestore is a client of a fresh project on the emulator whose
// Commit calls, while fail holds a code, get that code back without
// reaching the emulator: the answer the emulator gives under load
// ("Canceled: call already cancelled") or a deadline that passes in the
// database, neither caused by the caller.
func faultyFirestore(t *testing.T, fail *atomic.Value) *firestore.Client {
	t.Helper()
	conn, err := grpc.NewClient(os.Getenv("FIRESTORE_EMULATOR_HOST"),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(emulators.Admin{}),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if c, _ := fail.Load().(codes.Code); c != codes.OK && path.Base(method) == "Commit" {
				return status.Error(c, "call already cancelled")
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fs, err := firestore.NewClient(context.Background(), firelocktest.ProjectID(t), option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// A call the database cancels, or whose deadline passes there, is not the
// caller's fault and may be retried: 503 unavailable with Retry-After (the
// contract's error shape), not 500, and nothing is written; the retry then
// succeeds.
func TestDatabaseCancellationIsRetryable503(t *testing.T) {
	for _, code := range []codes.Code{codes.Canceled, codes.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			var fail atomic.Value
			fail.Store(codes.OK)
			e := newEnvWithScreening(t, faultyFirestore(t, &fail))
			h := e.hold("cara", "c-1", 0, "C3")
			if h.Status != http.StatusCreated {
				t.Fatalf("hold: %d %v", h.Status, h.Body)
			}
			id := str(h, "holdId")
			fail.Store(code)
			for _, fn := range []string{"ConfirmHold", "ReleaseHold"} {
				r := e.onHold(fn, "cara", id)
				if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") == "" {
					t.Errorf("%s on a %s commit: HTTP %d %v, Retry-After %q; want 503 unavailable with Retry-After",
						fn, code, r.Status, r.Body, r.Header.Get("Retry-After"))
				}
			}
			fail.Store(codes.OK)
			st := e.holdState()
			if len(st.bookings) != 0 || st.holds[id]["status"] != booking.StatusHeld {
				t.Fatalf("a refused call wrote: bookings %v, hold %v", st.bookings, st.holds[id])
			}
			if r := e.onHold("ConfirmHold", "cara", id); r.Status != http.StatusCreated {
				t.Fatalf("the retry: %d %v", r.Status, r.Body)
			}
			e.holdState().check(t)
		})
	}
}
