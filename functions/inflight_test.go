package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
)

// More requests at once than the server's cap (issue #41): the ones past
// it are answered at once 503 unavailable with Retry-After in CONTRACT
// §3's shape, none meets a socket error, and a shed request writes
// nothing; the others book as usual. Firestore's answers are held back
// 200 ms by a fault proxy so that the requests surely overlap.
func TestPastTheCapRequestsAreShedWith503AndWriteNothing(t *testing.T) {
	const limit, callers = 4, 40
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	fs, _ := firelocktest.NewClientVia(t, p.Addr, firelocktest.ProjectID(t))
	e := newEnvWithScreening(t, fs)
	if err := p.Delay(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	inFlight := functions.NewInFlight(limit)
	mux := http.NewServeMux()
	mux.HandleFunc("/BookSeats", inFlight.Wrap(e.api, e.api.BookSeats))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	seat := func(i int) string { return fmt.Sprintf("%c%d", 'A'+i/20, i%20+1) }
	toks := make([]string, callers)
	for i := range toks {
		toks[i] = token(t, fmt.Sprintf("shed%d", i))
	}
	type result struct {
		status int
		header http.Header
		body   []byte
		err    error
	}
	results := make([]result, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"screeningId": "s1", "seats": []string{seat(i)}, "requestId": fmt.Sprintf("shed-%d", i)})
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/BookSeats", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+toks[i])
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			results[i].status, results[i].header = resp.StatusCode, resp.Header
			results[i].body, results[i].err = io.ReadAll(resp.Body)
		})
	}
	close(start)
	wg.Wait()
	p.Heal()

	booked, shed := map[string]bool{}, 0
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("caller %d: %v (a socket error; want an answer)", i, r.err)
		case r.status == http.StatusCreated:
			booked[seat(i)] = true
		case r.status == http.StatusServiceUnavailable:
			shed++
			var body map[string]map[string]any
			if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 || len(body["error"]) != 2 ||
				body["error"]["code"] != "unavailable" || !strings.Contains(fmt.Sprint(body["error"]["message"]), "capacity") {
				t.Errorf("caller %d: 503 body %s; want {\"error\": {\"code\": \"unavailable\", \"message\": ...}}", i, r.body)
			}
			if r.header.Get("Retry-After") == "" {
				t.Errorf("caller %d: 503 without Retry-After", i)
			}
		default:
			t.Errorf("caller %d: HTTP %d %s; want 201 or 503", i, r.status, r.body)
		}
	}
	if shed == 0 || len(booked) < limit {
		t.Fatalf("%d callers at once, cap %d: %d booked, %d shed; want some of each", callers, limit, len(booked), shed)
	}
	if got := inFlight.Shed(); got != int64(shed) {
		t.Errorf("the cap counted %d shed, the callers got %d 503s", got, shed)
	}
	st := e.state()
	st.checkInvariants(t)
	for s := range st.seats {
		if !booked[s] {
			t.Errorf("seat %s is booked, but its request was shed", s)
		}
	}
	if len(st.seats) != len(booked) || len(st.bookings) != len(booked) {
		t.Errorf("%d answered 201, Firestore holds %d seats and %d bookings", len(booked), len(st.seats), len(st.bookings))
	}
	t.Logf("%d callers, cap %d: %d booked, %d shed", callers, limit, len(booked), shed)
}
