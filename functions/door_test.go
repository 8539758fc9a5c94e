package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/internal/claims"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/ticket"
)

// roleToken signs user in with the custom claim role (claims.Scanner,
// claims.Operator) set, and returns a fresh ID token that carries it.
func roleToken(t *testing.T, user, role string) string {
	t.Helper()
	signIn(t, user)
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Grant(ctx, ac, user+"@example.com", role); err != nil {
		t.Fatal(err)
	}
	tok, _, err := emulators.SignIn(user+"@example.com", "secret-"+user)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var nonces atomic.Int64

func nonce() string { return fmt.Sprintf("scan-%d-%012d", time.Now().UnixNano()%1e6, nonces.Add(1)) }

// withDoor gives s1 a door open since a minute ago at gates A and B,
// through OperateSale's configure-door.
func (e *env) withDoor(reentry bool) {
	e.t.Helper()
	r := e.call("OperateSale", roleToken(e.t, "olive-door", claims.Operator), map[string]any{"screeningId": "s1", "action": "configure-door",
		"door": map[string]any{"opensAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "gates": []string{"A", "B"}, "reentry": reentry}})
	if r.Status != http.StatusOK || r.Body["door"] == nil {
		e.t.Fatalf("configure-door: %d %v", r.Status, r.Body)
	}
}

// ticketOf books seat for user and returns its ticket as stored.
func (e *env) ticketOf(user, seat string) ticket.Ticket {
	e.t.Helper()
	r := e.book(user, "t-"+seat+nonce(), seat)
	if r.Status != http.StatusCreated {
		e.t.Fatalf("book %s: %d %v", seat, r.Status, r.Body)
	}
	ids, _ := r.Body["tickets"].(map[string]any)
	id, _ := ids[seat].(string)
	snap, err := e.fs.Collection(ticket.Collection).Doc(id).Get(context.Background())
	if err != nil {
		e.t.Fatalf("the ticket of %s (%q, answered %v): %v", seat, id, r.Body, err)
	}
	tk, err := ticket.DecodeTicket(snap)
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

func (e *env) scan(tok, code, gate, n string, extra ...map[string]any) response {
	e.t.Helper()
	body := map[string]any{"screeningId": "s1", "gate": gate, "code": code, "nonce": n}
	for _, x := range extra {
		for k, v := range x {
			body[k] = v
		}
	}
	return e.call("CheckIn", tok, body)
}

// doorDocs counts s1's recorded scans and the check-ins.
func (e *env) doorDocs() (scans, checkins int) {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.fs.Collection("screenings/s1/scans").Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.fs.Collection(door.CheckIns).Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	return len(s), len(c)
}

func errField(r response, k string) any {
	e, _ := r.Body["error"].(map[string]any)
	return e[k]
}

// CheckIn over HTTP (CONTRACT §13): who may scan, what is refused before
// the code is read (and writes nothing), the answers and their extras.
func TestCheckInOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withDoor(false)
	scanner := roleToken(t, "sam-scanner", claims.Scanner)
	operator := roleToken(t, "olive-door", claims.Operator)
	tk := e.ticketOf("alice", "C1")
	for _, c := range []struct {
		name   string
		tok    string
		body   map[string]any
		status int
		code   string
	}{
		{"no token", "", nil, http.StatusUnauthorized, "unauthenticated"},
		{"a buyer", token(t, "alice"), nil, http.StatusForbidden, "not_scanner"},
		{"a gate not of the door", scanner, map[string]any{"gate": "C"}, http.StatusBadRequest, "invalid_argument"},
		{"a short nonce", scanner, map[string]any{"nonce": "short-nonce"}, http.StatusBadRequest, "invalid_argument"},
		{"scannedAt in the future", scanner, map[string]any{"scannedAt": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)}, http.StatusBadRequest, "invalid_argument"},
		{"scannedAt not RFC 3339", scanner, map[string]any{"scannedAt": "yesterday"}, http.StatusBadRequest, "invalid_argument"},
		{"scannedAt before year 1", scanner, map[string]any{"scannedAt": "0000-06-01T00:00:00Z", "offline": true}, http.StatusBadRequest, "invalid_argument"},
		{"a field unknown", scanner, map[string]any{"seat": "C1"}, http.StatusBadRequest, "invalid_argument"},
	} {
		body := map[string]any{"screeningId": "s1", "gate": "A", "code": tk.Code, "nonce": nonce()}
		for k, v := range c.body {
			body[k] = v
		}
		r := e.call("CheckIn", c.tok, body)
		if r.Status != c.status || r.code() != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	if scans, checkins := e.doorDocs(); scans != 0 || checkins != 0 {
		t.Fatalf("refused requests wrote %d scans and %d check-ins", scans, checkins)
	}
	n := nonce()
	r := e.scan(scanner, tk.Code, "A", n)
	if r.Status != http.StatusOK || r.Body["result"] != "admitted" || r.Body["ticketId"] != tk.ID || r.Body["seatId"] != "C1" || r.Body["screeningId"] != "s1" || r.Body["gate"] != "A" {
		t.Fatalf("admitted: %d %v", r.Status, r.Body)
	}
	at, err := time.Parse(time.RFC3339Nano, r.Body["at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if again := e.scan(scanner, tk.Code, "A", n); again.Status != http.StatusOK || fmt.Sprint(again.Body) != fmt.Sprint(r.Body) {
		t.Fatalf("a retry: %d %v, want %v", again.Status, again.Body, r.Body)
	}
	// An operator scans too; the ticket is in.
	r = e.scan(operator, tk.Code, "B", nonce())
	if r.Status != http.StatusConflict || r.code() != "already_in" || errField(r, "gate") != "A" || errField(r, "result") != "already_in" {
		t.Fatalf("already in: %d %v", r.Status, r.Body)
	}
	if got, _ := time.Parse(time.RFC3339Nano, errField(r, "at").(string)); !got.Equal(at) {
		t.Errorf("already_in at %v, the entry was at %v", errField(r, "at"), at)
	}
	r = e.scan(scanner, tk.Code, "B", nonce(), map[string]any{"offline": true, "scannedAt": time.Now().Add(-30 * time.Second).UTC().Format(time.RFC3339)})
	if r.Status != http.StatusConflict || r.code() != "already_in" || errField(r, "result") != "conflict" {
		t.Fatalf("an offline upload of a ticket in: %d %v", r.Status, r.Body)
	}
	r = e.scan(scanner, tk.Code[:len(tk.Code)-4]+"AAAA", "A", nonce())
	if r.Status != http.StatusBadRequest || r.code() != "invalid_ticket" {
		t.Fatalf("a tampered code: %d %v", r.Status, r.Body)
	}
	r = e.scan(scanner, tk.Code, "A", n, map[string]any{"direction": "out"})
	if r.Status != http.StatusConflict || r.code() != "nonce_reused" {
		t.Fatalf("the nonce again for an exit: %d %v", r.Status, r.Body)
	}
	// Another screening's ticket names its screening.
	if _, err := e.fs.Doc("screenings/s2").Set(context.Background(), booking.Screening{Title: "x", StartsAt: time.Now().Add(time.Hour), Rows: []string{"A"}, SeatsPerRow: 5}); err != nil {
		t.Fatal(err)
	}
	b := e.call("BookSeats", token(t, "alice"), map[string]any{"screeningId": "s2", "seats": []string{"A1"}, "requestId": "s2-" + nonce()})
	other, _ := e.fs.Collection(ticket.Collection).Doc(b.Body["tickets"].(map[string]any)["A1"].(string)).Get(context.Background())
	r = e.scan(scanner, other.Data()["code"].(string), "A", nonce())
	if r.Status != http.StatusConflict || r.code() != "wrong_screening" || errField(r, "screeningId") != "s2" {
		t.Fatalf("another screening's ticket: %d %v", r.Status, r.Body)
	}
	if scans, checkins := e.doorDocs(); scans != 5 || checkins != 1 {
		t.Fatalf("%d scans, %d check-ins; want 5 (admitted, already_in, conflict, invalid, wrong_screening) and 1", scans, checkins)
	}
	// A cancel of a booking whose ticket is in.
	bk, _ := e.fs.Collection(booking.Bookings).Where("tickets.C1", "==", tk.ID).Documents(context.Background()).GetAll()
	if r := e.call("CancelBooking", token(t, "alice"), map[string]any{"bookingId": bk[0].Ref.ID}); r.Status != http.StatusConflict || r.code() != "ticket_used" {
		t.Fatalf("cancel of a booking whose ticket is in: %d %v", r.Status, r.Body)
	}
}

// Two gates scan one ticket at once, many times over (the screenshot of a
// ticket at every gate in the same second): exactly one scan is admitted,
// every other is already_in, and Firestore holds one check-in and every
// scan.
func TestManyGatesScanOneTicketAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withDoor(false)
	scanners := []string{roleToken(t, "sam-scanner", claims.Scanner), roleToken(t, "sue-scanner", claims.Scanner)}
	const tickets, each = 3, 10
	for i := range tickets {
		tk := e.ticketOf("alice", fmt.Sprintf("D%d", i+1))
		var wg sync.WaitGroup
		var mu sync.Mutex
		answers := map[string]int{}
		start := make(chan struct{})
		for j := range each {
			wg.Go(func() {
				<-start
				r := e.scan(scanners[j%2], tk.Code, []string{"A", "B"}[j%2], nonce())
				mu.Lock()
				answers[fmt.Sprint(r.Status, " ", r.Body["result"], r.code())]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		if answers["200 admitted"] != 1 || answers["409 <nil>already_in"] != each-1 {
			t.Fatalf("ticket %d scanned %d times at once: %v; want one 200 admitted and %d already_in", i, each, answers, each-1)
		}
	}
	if scans, checkins := e.doorDocs(); scans != tickets*each || checkins != tickets {
		t.Fatalf("%d scans, %d check-ins; want %d and %d", scans, checkins, tickets*each, tickets)
	}
}

// A transfer racing a scan of the same ticket: exactly one wins. Either
// the scan admits and the transfer is ticket_used, or the transfer moves
// the ticket and the scan of its old code is ticket_reissued.
func TestATransferRacingAScanOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withDoor(false)
	scanner := roleToken(t, "sam-scanner", claims.Scanner)
	signIn(t, "bob")
	outcomes := map[string]int{}
	for i := range 8 {
		tk := e.ticketOf("alice", fmt.Sprintf("E%d", i+1))
		var transfer, scan response
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			transfer = e.call("TransferTicket", token(t, "alice"), map[string]any{"ticketId": tk.ID, "toEmail": "bob@example.com"})
		})
		wg.Go(func() { <-start; scan = e.scan(scanner, tk.Code, "A", nonce()) })
		close(start)
		wg.Wait()
		after, _ := e.fs.Collection(ticket.Collection).Doc(tk.ID).Get(context.Background())
		_, inErr := e.fs.Collection(door.CheckIns).Doc(tk.ID).Get(context.Background())
		switch {
		case transfer.Status == http.StatusOK && scan.code() == "ticket_reissued":
			if after.Data()["version"] != int64(2) || inErr == nil {
				t.Fatalf("the transfer won, yet the ticket is %v and checked in: %v", after.Data(), inErr == nil)
			}
			outcomes["transfer"]++
		case scan.Status == http.StatusOK && transfer.code() == "ticket_used":
			if after.Data()["version"] != int64(1) || inErr != nil {
				t.Fatalf("the scan won, yet the ticket is %v (check-in: %v)", after.Data(), inErr)
			}
			outcomes["scan"]++
		default:
			t.Fatalf("transfer %d %v, scan %d %v: want exactly one to win", transfer.Status, transfer.Body, scan.Status, scan.Body)
		}
	}
	t.Logf("who won: %v", outcomes)
}

// A cancel racing a scan: exactly one wins. Either the ticket is in and
// the cancel is ticket_used, or the booking is cancelled and the scan is
// ticket_cancelled.
func TestACancelRacingAScanOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withDoor(false)
	scanner := roleToken(t, "sam-scanner", claims.Scanner)
	outcomes := map[string]int{}
	for i := range 8 {
		seat := fmt.Sprintf("F%d", i+1)
		r := e.book("alice", "c-"+nonce(), seat)
		id := r.Body["tickets"].(map[string]any)[seat].(string)
		snap, _ := e.fs.Collection(ticket.Collection).Doc(id).Get(context.Background())
		var cancel, scan response
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			cancel = e.call("CancelBooking", token(t, "alice"), map[string]any{"bookingId": r.Body["bookingId"]})
		})
		wg.Go(func() { <-start; scan = e.scan(scanner, snap.Data()["code"].(string), "B", nonce()) })
		close(start)
		wg.Wait()
		switch {
		case cancel.Status == http.StatusOK && scan.code() == "ticket_cancelled":
			outcomes["cancel"]++
		case scan.Status == http.StatusOK && cancel.code() == "ticket_used":
			outcomes["scan"]++
		default:
			t.Fatalf("cancel %d %v, scan %d %v: want exactly one to win", cancel.Status, cancel.Body, scan.Status, scan.Body)
		}
	}
	e.state().checkInvariants(t)
	t.Logf("who won: %v", outcomes)
}

// TransferTicket over HTTP: another user's ticket is refused before the
// email is looked at, an email with no account is user_not_found, and a
// transfer answers the ticket without its code; the old code is then
// ticket_reissued at the door, the new one gets in, and a ticket that is
// in cannot move.
func TestTransferTicketOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withDoor(false)
	scanner := roleToken(t, "sam-scanner", claims.Scanner)
	signIn(t, "bob")
	tk := e.ticketOf("alice", "G1")
	if r := e.call("TransferTicket", token(t, "bob"), map[string]any{"ticketId": tk.ID, "toEmail": "nobody-at-all@example.com"}); r.Status != http.StatusForbidden || r.code() != "permission_denied" {
		t.Fatalf("bob transfers alice's ticket to nobody: %d %v, want 403 first", r.Status, r.Body)
	}
	if r := e.call("TransferTicket", token(t, "alice"), map[string]any{"ticketId": tk.ID, "toEmail": "nobody-at-all@example.com"}); r.Status != http.StatusNotFound || r.code() != "user_not_found" {
		t.Fatalf("to an email with no account: %d %v", r.Status, r.Body)
	}
	if r := e.call("TransferTicket", token(t, "alice"), map[string]any{"ticketId": "no-such-ticket-0000000", "toEmail": "bob@example.com"}); r.Status != http.StatusNotFound || r.code() != "ticket_not_found" {
		t.Fatalf("no such ticket: %d %v", r.Status, r.Body)
	}
	r := e.call("TransferTicket", token(t, "alice"), map[string]any{"ticketId": tk.ID, "toEmail": "bob@example.com"})
	if r.Status != http.StatusOK || r.Body["ticketId"] != tk.ID || r.Body["version"] != float64(2) || r.Body["seatId"] != "G1" || r.Body["screeningId"] != "s1" || r.Body["code"] != nil || len(r.Body) != 4 {
		t.Fatalf("transfer: %d %v, want the ticket at version 2 without its code", r.Status, r.Body)
	}
	if r := e.scan(scanner, tk.Code, "A", nonce()); r.Status != http.StatusConflict || r.code() != "ticket_reissued" {
		t.Fatalf("the old code: %d %v", r.Status, r.Body)
	}
	now, _ := e.fs.Collection(ticket.Collection).Doc(tk.ID).Get(context.Background())
	if now.Data()["uid"] != userID(t, "bob") {
		t.Fatalf("the ticket is %v's, want bob's", now.Data()["uid"])
	}
	if r := e.scan(scanner, now.Data()["code"].(string), "A", nonce()); r.Status != http.StatusOK {
		t.Fatalf("the new code: %d %v", r.Status, r.Body)
	}
	if r := e.call("TransferTicket", token(t, "bob"), map[string]any{"ticketId": tk.ID, "toEmail": "alice@example.com"}); r.Status != http.StatusConflict || r.code() != "ticket_used" {
		t.Fatalf("a ticket that is in: %d %v", r.Status, r.Body)
	}
}

// GET /TicketKeys answers the public keys, no token needed, cacheable for
// five minutes, with no private part; they verify the codes of tickets.
func TestTicketKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tk := e.ticketOf("alice", "H1")
	resp, err := http.Get(e.srv.URL + "/TicketKeys")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, max-age=300" || strings.Contains(string(body), `"d"`) {
		t.Fatalf("GET /TicketKeys: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	var set ticket.JWKSet
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	keys, err := ticket.FromJWKS(set)
	if err != nil || keys.CanSign() {
		t.Fatalf("the set %s: %v", body, err)
	}
	if p, err := keys.Verify(tk.Code); err != nil || p.TicketID != tk.ID {
		t.Fatalf("a ticket's code with the served keys: %+v %v", p, err)
	}
	if r := e.call("TicketKeys", "", "{}"); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("POST /TicketKeys: %d %v", r.Status, r.Body)
	}
}
