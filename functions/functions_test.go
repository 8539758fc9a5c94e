package functions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// stripeWebhookSecret signs the tests' Stripe events; the functions talk
// to a stripe-mock started for the package, as the local run does.
var stripeWebhookSecret = stripelocal.NewWebhookSecret()

func TestMain(m *testing.M) {
	// The parallel tests (each on its own project, mostly waiting for holds
	// to lapse) run side by side; the rest, one at a time before them.
	firelocktest.SideBySide(8)
	if os.Getenv("FIRELOCK_SIGTERM_CHILD") == "1" {
		// TestSIGTERMFlushesMetrics's child runs only its own test, which
		// needs neither Stripe nor the emulators: it need not start them
		// (about a second of its parent's 6 s; the rest is exportGap).
		os.Exit(m.Run())
	}
	os.Exit(func() int {
		mock, err := stripelocal.StartMock(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer mock.Stop()
		os.Setenv(payment.EnvSecretKey, "sk_test_firelock")
		os.Setenv(payment.EnvWebhookSecret, stripeWebhookSecret)
		os.Setenv(payment.EnvAPIURL, mock.URL)
		return firelocktest.Main(m, firelocktest.Firestore, firelocktest.Auth)
	}())
}

// env is one test's functions server on a fresh Firestore project.
type env struct {
	t   *testing.T
	fs  *firestore.Client
	api *functions.API
	srv *httptest.Server
	log *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWithScreening(t, firelocktest.NewClient(t))
}

// newEnvWithScreening is newEnv on the client fs.
func newEnvWithScreening(t *testing.T, fs *firestore.Client) *env {
	t.Helper()
	e := newEnvOn(t, fs)
	// A 10x20 screening: rows A..J, seats 1..20.
	if _, err := e.fs.Doc("screenings/s1").Set(context.Background(), booking.Screening{
		Title: "Metropolis", StartsAt: time.Now().Add(24 * time.Hour),
		Rows: []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}, SeatsPerRow: 20,
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// newEnvOn is a functions server (a fresh instance) on fs as it is.
func newEnvOn(t *testing.T, fs *firestore.Client) *env {
	t.Helper()
	api, err := functions.NewAPI(context.Background(), fs, emulators.AuthProject)
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	var mu sync.Mutex
	api.Log = functions.NewLogger(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(b) }))
	api.Sales = sale.New(fs, sale.WithLogger(api.Log))
	mux := http.NewServeMux()
	mux.HandleFunc("/BookSeats", api.BookSeats)
	mux.HandleFunc("/CancelBooking", api.CancelBooking)
	mux.HandleFunc("/HoldSeats", api.HoldSeats)
	mux.HandleFunc("/ExtendHold", api.ExtendHold)
	mux.HandleFunc("/ConfirmHold", api.ConfirmHold)
	mux.HandleFunc("/ReleaseHold", api.ReleaseHold)
	mux.HandleFunc("/JoinQueue", api.JoinQueue)
	mux.HandleFunc("/OperateSale", api.OperateSale)
	mux.HandleFunc("/CheckoutHold", api.CheckoutHold)
	mux.HandleFunc("/StripeWebhook", api.StripeWebhook)
	mux.HandleFunc("/CheckIn", api.CheckIn)
	mux.HandleFunc("/TransferTicket", api.TransferTicket)
	mux.HandleFunc("/TicketKeys", api.TicketKeys)
	mux.HandleFunc("/SaleState", func(w http.ResponseWriter, r *http.Request) { api.SaleState(w, r) }) // api.States may be swapped by a test
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, fs: fs, api: api, srv: srv, log: buf}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

var (
	usersMu sync.Mutex
	users   = map[string][2]string{} // name -> ID token, uid
)

// signIn signs up a user in the Auth emulator (once) and returns its ID
// token and uid.
func signIn(t *testing.T, name string) (string, string) {
	t.Helper()
	usersMu.Lock()
	defer usersMu.Unlock()
	if u, ok := users[name]; ok {
		return u[0], u[1]
	}
	tok, uid, err := emulators.SignIn(name+"@example.com", "secret-"+name)
	if err != nil {
		t.Fatal(err)
	}
	users[name] = [2]string{tok, uid}
	return tok, uid
}

func token(t *testing.T, name string) string { tok, _ := signIn(t, name); return tok }

func userID(t *testing.T, name string) string { _, uid := signIn(t, name); return uid }

type response struct {
	Status int
	Body   map[string]any
	Header http.Header
}

func (r response) code() string {
	if e, ok := r.Body["error"].(map[string]any); ok {
		c, _ := e["code"].(string)
		return c
	}
	return ""
}

// call POSTs body (a string, sent as is, or a value, sent as JSON).
func (e *env) call(fn, tok string, body any, mutate ...func(*http.Request)) response {
	e.t.Helper()
	var raw []byte
	if s, ok := body.(string); ok {
		raw = []byte(s)
	} else {
		raw, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/"+fn, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for _, m := range mutate {
		m(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := response{Status: resp.StatusCode, Header: resp.Header}
	if err := json.Unmarshal(b, &r.Body); err != nil {
		e.t.Errorf("%s: HTTP %d body is not JSON: %q", fn, resp.StatusCode, b)
	}
	return r
}

func (e *env) book(user, requestID string, seats ...string) response {
	return e.call("BookSeats", token(e.t, user), map[string]any{"screeningId": "s1", "seats": seats, "requestId": requestID})
}

// state is what Firestore holds afterwards.
type state struct {
	seats    map[string]map[string]any // seat -> document
	bookings map[string]map[string]any
	sold     int64
}

func (e *env) state() state {
	e.t.Helper()
	ctx := context.Background()
	st := state{seats: map[string]map[string]any{}, bookings: map[string]map[string]any{}}
	seats, err := e.fs.Collection("screenings/s1/seats").Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range seats {
		st.seats[s.Ref.ID] = s.Data()
	}
	bs, err := e.fs.Collection(booking.Bookings).Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, b := range bs {
		st.bookings[b.Ref.ID] = b.Data()
	}
	if c, err := counter.Open(ctx, e.fs, booking.CounterID("s1")); err == nil {
		if st.sold, err = c.Count(ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	return st
}

// checkInvariants: no seat in two confirmed bookings, every seat document
// matches exactly one confirmed booking, and the counter equals the booked
// seats.
func (st state) checkInvariants(t *testing.T) {
	t.Helper()
	owner := map[string]string{}
	for id, b := range st.bookings {
		if b["status"] != "confirmed" {
			continue
		}
		for _, s := range b["seats"].([]any) {
			seat := s.(string)
			if other, ok := owner[seat]; ok {
				t.Errorf("seat %s in confirmed bookings %s and %s", seat, other, id)
			}
			owner[seat] = id
		}
	}
	for seat, doc := range st.seats {
		if owner[seat] != doc["bookingId"] {
			t.Errorf("seat document %s names booking %v, confirmed bookings say %q", seat, doc["bookingId"], owner[seat])
		}
	}
	if len(owner) != len(st.seats) {
		t.Errorf("%d seats in confirmed bookings, %d seat documents", len(owner), len(st.seats))
	}
	if st.sold != int64(len(st.seats)) {
		t.Errorf("tickets-sold counter %d, booked seats %d", st.sold, len(st.seats))
	}
}

func TestHundredUsersOneSeatExactlyOneWins(t *testing.T) {
	e := newEnv(t)
	const n = 100
	toks := make([]string, n)
	for i := range toks {
		toks[i] = token(t, fmt.Sprintf("fan%d", i))
	}
	statuses := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// A 503 says "try again" (CONTRACT §3): a client sends the same
			// request again, as the app does; a loaded machine's emulator
			// answers some of a hundred at once that way.
			body := map[string]any{"screeningId": "s1", "seats": []string{"F12"}, "requestId": fmt.Sprint("r", i)}
			for try := 0; ; try++ {
				statuses[i] = e.call("BookSeats", toks[i], body)
				if statuses[i].Status != http.StatusServiceUnavailable || try == 4 {
					break
				}
				time.Sleep(time.Duration(100<<try) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	won, lost := 0, 0
	for _, r := range statuses {
		switch {
		case r.Status == http.StatusCreated:
			won++
		case r.Status == http.StatusConflict && (r.code() == "seat_taken" || r.code() == "seat_busy"):
			lost++
		default:
			t.Errorf("unexpected answer %d %v", r.Status, r.Body)
		}
	}
	if won != 1 || lost != n-1 {
		t.Fatalf("%d won, %d got 409; want 1 and %d", won, lost, n-1)
	}
	st := e.state()
	if len(st.seats) != 1 || len(st.bookings) != 1 || st.sold != 1 {
		t.Fatalf("Firestore holds %d seats, %d bookings, counter %d; want 1, 1, 1", len(st.seats), len(st.bookings), st.sold)
	}
	st.checkInvariants(t)
}

func TestRandomLoadKeepsInvariants(t *testing.T) {
	e := newEnv(t)
	rows := "ABCDEFGHIJ"
	var wg sync.WaitGroup
	sem := make(chan struct{}, 30)
	var mu sync.Mutex
	outcomes := map[int]int{}
	for i := range 300 {
		user := fmt.Sprintf("u%d", i%30)
		tok := token(t, user)
		n := 1 + rand.IntN(4)
		seen := map[string]bool{}
		var seats []string
		for len(seats) < n {
			s := fmt.Sprintf("%c%d", rows[rand.IntN(10)], 1+rand.IntN(20))
			if !seen[s] {
				seen[s] = true
				seats = append(seats, s)
			}
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := e.call("BookSeats", tok, map[string]any{"screeningId": "s1", "seats": seats, "requestId": fmt.Sprint("req", i)})
			mu.Lock()
			outcomes[r.Status]++
			mu.Unlock()
			if r.Status != http.StatusCreated && r.Status != http.StatusConflict {
				t.Errorf("unexpected %d %v", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	st := e.state()
	if outcomes[http.StatusCreated] != len(st.bookings) {
		t.Errorf("%d answers 201, %d bookings stored", outcomes[http.StatusCreated], len(st.bookings))
	}
	st.checkInvariants(t)
}

func TestRetryWithSameRequestIDGetsSameBooking(t *testing.T) {
	e := newEnv(t)
	first := e.book("alice", "req-1", "C3", "C4")
	if first.Status != http.StatusCreated || first.Body["status"] != "confirmed" {
		t.Fatalf("first: %d %v", first.Status, first.Body)
	}
	again := e.book("alice", "req-1", "C4", "C3")
	if again.Status != http.StatusOK || again.Body["bookingId"] != first.Body["bookingId"] {
		t.Fatalf("retry: %d %v, want 200 with booking %v", again.Status, again.Body, first.Body["bookingId"])
	}
	// The same requestId for other seats is a client bug, not a retry.
	if r := e.book("alice", "req-1", "D1"); r.Status != http.StatusBadRequest {
		t.Fatalf("reused requestId: %d %v", r.Status, r.Body)
	}
	// Another user's identical requestId is another booking.
	if r := e.book("bob", "req-1", "D1"); r.Status != http.StatusCreated {
		t.Fatalf("bob: %d %v", r.Status, r.Body)
	}
	st := e.state()
	if len(st.bookings) != 2 || st.sold != 3 {
		t.Fatalf("%d bookings, counter %d; want 2 and 3", len(st.bookings), st.sold)
	}
	st.checkInvariants(t)
}

func TestCancelFreesSeatsForOwnerOnly(t *testing.T) {
	e := newEnv(t)
	b := e.book("alice", "r1", "E5", "E6")
	if b.Status != http.StatusCreated {
		t.Fatalf("book: %d %v", b.Status, b.Body)
	}
	id := b.Body["bookingId"]
	if r := e.call("CancelBooking", token(t, "bob"), map[string]any{"bookingId": id}); r.Status != http.StatusForbidden || r.code() != "permission_denied" {
		t.Fatalf("bob cancels alice's booking: %d %v", r.Status, r.Body)
	}
	if r := e.call("CancelBooking", token(t, "alice"), map[string]any{"bookingId": "nope"}); r.Status != http.StatusNotFound {
		t.Fatalf("unknown booking: %d %v", r.Status, r.Body)
	}
	for range 2 { // cancelling twice is harmless
		r := e.call("CancelBooking", token(t, "alice"), map[string]any{"bookingId": id})
		if r.Status != http.StatusOK || r.Body["status"] != "cancelled" {
			t.Fatalf("cancel: %d %v", r.Status, r.Body)
		}
	}
	st := e.state()
	if len(st.seats) != 0 || st.sold != 0 {
		t.Fatalf("after cancel: %d seat documents, counter %d", len(st.seats), st.sold)
	}
	if r := e.book("bob", "r2", "E5"); r.Status != http.StatusCreated {
		t.Fatalf("a freed seat cannot be booked: %d %v", r.Status, r.Body)
	}
	e.state().checkInvariants(t)
}

func TestSeatTakenNamesTheSeats(t *testing.T) {
	e := newEnv(t)
	if r := e.book("alice", "r1", "B2"); r.Status != http.StatusCreated {
		t.Fatal(r.Body)
	}
	r := e.book("bob", "r2", "B1", "B2", "B3")
	errBody, _ := r.Body["error"].(map[string]any)
	if r.Status != http.StatusConflict || r.code() != "seat_taken" || fmt.Sprint(errBody["seats"]) != "[B2]" {
		t.Fatalf("%d %v, want 409 seat_taken naming B2", r.Status, r.Body)
	}
	st := e.state()
	if len(st.seats) != 1 {
		t.Fatalf("a refused booking wrote seats: %v", st.seats)
	}
}

func expiredToken() string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	past := time.Now().Add(-2 * time.Hour).Unix()
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(map[string]any{
		"iss": "https://securetoken.google.com/" + emulators.AuthProject, "aud": emulators.AuthProject,
		"sub": "ghost", "user_id": "ghost", "iat": past, "exp": past + 60, "auth_time": past,
		"firebase": map[string]any{"sign_in_provider": "password"},
	}) + "."
}

func TestBadInputGetsContractErrorAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	alice := token(t, "alice")
	valid := map[string]any{"screeningId": "s1", "seats": []string{"A1"}, "requestId": "x"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name   string
		tok    string
		body   any
		mutate func(*http.Request)
		status int
		code   string
	}{
		{"malformed JSON", alice, `{"screeningId": "s1", `, nil, 400, "invalid_argument"},
		{"not an object", alice, `["A1"]`, nil, 400, "invalid_argument"},
		{"two objects", alice, `{"screeningId":"s1","seats":["A1"],"requestId":"x"} {}`, nil, 400, "invalid_argument"},
		{"seats of the wrong type", alice, with("seats", "A1"), nil, 400, "invalid_argument"},
		{"screeningId of the wrong type", alice, with("screeningId", 7), nil, 400, "invalid_argument"},
		{"missing seats", alice, with("seats", nil), nil, 400, "invalid_argument"},
		{"missing screeningId", alice, with("screeningId", nil), nil, 400, "invalid_argument"},
		{"missing requestId", alice, with("requestId", nil), nil, 400, "invalid_argument"},
		{"unknown field", alice, with("price", 0), nil, 400, "invalid_argument"},
		{"invalid UTF-8 (it would decode to U+FFFD)", alice, "{\"screeningId\":\"s1\",\"seats\":[\"A1\"],\"requestId\":\"r\xff\"}", nil, 400, "invalid_argument"},
		{"a charset other than UTF-8", alice, valid, func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-16") }, 415, "unsupported_media_type"},
		{"unknown screening", alice, with("screeningId", "nope"), nil, 404, "screening_not_found"},
		{"screening id with a slash", alice, with("screeningId", "s1/seats"), nil, 400, "invalid_argument"},
		{"seat outside the rows", alice, with("seats", []string{"Z1"}), nil, 400, "invalid_argument"},
		{"seat number past the row", alice, with("seats", []string{"A21"}), nil, 400, "invalid_argument"},
		{"malformed seat", alice, with("seats", []string{"1A"}), nil, 400, "invalid_argument"},
		{"duplicate seats", alice, with("seats", []string{"A1", "A1"}), nil, 400, "invalid_argument"},
		{"no seats", alice, with("seats", []string{}), nil, 400, "invalid_argument"},
		{"too many seats", alice, with("seats", []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11"}), nil, 400, "invalid_argument"},
		{"huge body", alice, `{"screeningId":"s1","requestId":"` + strings.Repeat("x", functions.MaxBody) + `","seats":["A1"]}`, nil, 413, "payload_too_large"},
		{"wrong method", alice, valid, func(r *http.Request) { r.Method = http.MethodGet }, 405, "method_not_allowed"},
		{"wrong content type", alice, valid, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415, "unsupported_media_type"},
		{"missing token", "", valid, nil, 401, "unauthenticated"},
		{"garbage token", "not-a-jwt", valid, nil, 401, "unauthenticated"},
		{"expired token", expiredToken(), valid, nil, 401, "unauthenticated"},
		{"basic auth instead of a token", alice, valid, func(r *http.Request) { r.Header.Set("Authorization", "Basic YWxpY2U6eA==") }, 401, "unauthenticated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			var ms []func(*http.Request)
			if c.mutate != nil {
				ms = append(ms, c.mutate)
			}
			r := e.call("BookSeats", c.tok, c.body, ms...)
			errBody, _ := r.Body["error"].(map[string]any)
			if r.Status != c.status || r.code() != c.code || errBody["message"] == "" {
				t.Fatalf("got %d %v, want %d %s with a message", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	e.t = t
	if r := e.call("CancelBooking", alice, map[string]any{}); r.Status != 400 {
		t.Fatalf("cancel without bookingId: %d %v", r.Status, r.Body)
	}
	st := e.state()
	if len(st.seats)+len(st.bookings) != 0 {
		t.Fatalf("bad input wrote: %d seats, %d bookings", len(st.seats), len(st.bookings))
	}
	counters, err := e.fs.Collection(counter.Collection).DocumentRefs(context.Background()).GetAll()
	if err != nil || len(counters) != 0 {
		t.Fatalf("bad input created %d counters", len(counters))
	}
}

func TestLogsAreCloudLoggingJSON(t *testing.T) {
	e := newEnv(t)
	if r := e.book("alice", "log-1", "J20"); r.Status != http.StatusCreated {
		t.Fatal(r.Body)
	}
	e.call("BookSeats", "", map[string]any{})
	lines := strings.Split(strings.TrimSpace(e.log.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want a log line per request, got %q", e.log.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["severity"] == nil || m["message"] == nil || m["executionId"] == nil {
			t.Fatalf("log line lacks severity, message or executionId: %q", l)
		}
	}
}

// encoding/json matches keys case-insensitively (also with
// DisallowUnknownFields) and lets the last of duplicate keys win: a body
// could carry two values of one field and the function would act on the
// one a proxy or a log did not show. Every function takes the contract's
// names exactly, once each, and refuses anything else with nothing written.
func TestCaseVariantAndDuplicateKeysAreRefused(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "kay")
	h := e.hold("kay", "h-1", 60, "A1")
	b := e.book("kay", "b-1", "B1")
	if h.Status != http.StatusCreated || b.Status != http.StatusCreated {
		t.Fatalf("setup: hold %d %v, booking %d %v", h.Status, h.Body, b.Status, b.Body)
	}
	holdID, bookingID := str(h, "holdId"), str(b, "bookingId")
	before := e.holdState()
	cases := []struct{ fn, body string }{
		{"BookSeats", `{"screeningId": "s1", "seats": ["C1"], "Seats": ["C2"], "requestId": "r1"}`},
		{"BookSeats", `{"Seats": ["C2"], "screeningId": "s1", "seats": ["C1"], "requestId": "r2"}`},
		{"BookSeats", `{"screeningId": "s1", "seats": ["C1"], "seats": ["C2"], "requestId": "r3"}`},
		{"BookSeats", `{"screeningId": "s1", "seats": ["C1"], "ſeats": ["C2"], "requestId": "r4"}`}, // ſ folds to s
		{"BookSeats", `{"SCREENINGID": "s1", "seats": ["C1"], "requestId": "r5"}`},
		{"BookSeats", `{"screeningId": "s1", "seats": ["C1"], "requestId": "r6", "requestID": "r7"}`},
		{"HoldSeats", `{"screeningId": "s1", "seats": ["C3"], "requestId": "h2", "HoldSeconds": 60}`},
		{"HoldSeats", `{"screeningId": "s1", "seats": ["C3"], "requestId": "h3", "holdSeconds": 60, "holdSeconds": 61}`},
		{"CancelBooking", `{"bookingId": "nope", "BookingId": "` + bookingID + `"}`},
		{"CancelBooking", `{"bookingId": "nope", "bookingId": "` + bookingID + `"}`},
		{"ExtendHold", `{"holdId": "` + holdID + `", "holdSeconds": 60, "holdseconds": 900}`},
		{"ExtendHold", `{"holdId": "` + holdID + `", "holdSeconds": 60, "holdSeconds": 900}`},
		{"ConfirmHold", `{"holdId": "nope", "HOLDID": "` + holdID + `"}`},
		{"ConfirmHold", `{"holdId": "nope", "holdId": "` + holdID + `"}`},
		{"ConfirmHold", `{"holdId": "` + holdID + `", "holdSeconds": 60}`}, // not a field of this request
		{"ReleaseHold", `{"holdId": "nope", "holdID": "` + holdID + `"}`},
		{"ReleaseHold", `{"holdId": "nope", "holdId": "` + holdID + `"}`},
	}
	for _, c := range cases {
		r := e.call(c.fn, tok, c.body)
		errBody, _ := r.Body["error"].(map[string]any)
		if r.Status != http.StatusBadRequest || r.code() != "invalid_argument" || errBody["message"] == "" {
			t.Errorf("%s %s: %d %v, want 400 invalid_argument", c.fn, c.body, r.Status, r.Body)
		}
	}
	after := e.holdState()
	if fmt.Sprint(after.seats) != fmt.Sprint(before.seats) || fmt.Sprint(after.holds) != fmt.Sprint(before.holds) ||
		fmt.Sprint(after.bookings) != fmt.Sprint(before.bookings) || after.sold != before.sold {
		t.Fatalf("refused bodies wrote:\nbefore %v %v %v\nafter  %v %v %v", before.seats, before.holds, before.bookings, after.seats, after.holds, after.bookings)
	}
}
