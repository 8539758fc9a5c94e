package door

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/internal/testkit/telemetrytest"
	"github.com/firelock/firelock/ticket"
)

func TestMain(m *testing.M) {
	firelocktest.SideBySide(6)
	os.Exit(firelocktest.Main(m))
}

// env is a door on a fresh project: screening s1 (door open since a minute
// ago at gates A and B, no reentry), s2 (another screening, its door open
// too), s3 (reentry), s4 (no door) and s5 (a door that opens in an hour),
// each a row A of 10 seats, with tickets booked through booking.
type env struct {
	t        *testing.T
	project  string
	fs       *firestore.Client
	stats    *rpcstats.Stats
	keys     *ticket.Keys
	tickets  *ticket.Service
	bookings *booking.Service
	door     *Service
	n        atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	stats := &rpcstats.Stats{}
	project := firelocktest.ProjectID(t)
	fs, err := rpcstats.NewClient(context.Background(), project, stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	keys, err := ticket.GenerateKeys("d1")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, project: project, fs: fs, stats: stats, keys: keys, tickets: ticket.New(fs, keys)}
	e.bookings = booking.New(fs, booking.WithTickets(e.tickets))
	t.Cleanup(e.bookings.Close)
	e.door = New(fs, keys)
	ago := time.Now().Add(-time.Minute)
	for id, door := range map[string]map[string]any{
		"s1": {"opensAt": ago, "gates": []string{"A", "B"}, "reentry": false},
		"s2": {"opensAt": ago, "gates": []string{"A"}},
		"s3": {"opensAt": ago, "gates": []string{"A", "B"}, "reentry": true},
		"s4": nil,
		"s5": {"opensAt": time.Now().Add(time.Hour), "gates": []string{"A"}},
	} {
		doc := map[string]any{"title": id, "startsAt": time.Now().Add(2 * time.Hour), "rows": []string{"A"}, "seatsPerRow": 10}
		if door != nil {
			doc["door"] = door
		}
		if _, err := fs.Collection(booking.Screenings).Doc(id).Set(context.Background(), doc); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// book books seat of screening for uid and returns its ticket.
func (e *env) book(screening, seat, uid string) ticket.Ticket {
	e.t.Helper()
	b, _, err := e.bookings.Book(context.Background(), "x", booking.Request{UID: uid, ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint("r", e.n.Add(1))})
	if err != nil {
		e.t.Fatal(err)
	}
	t, err := e.tickets.Get(context.Background(), b.Tickets[seat])
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *env) nonce() string { return fmt.Sprintf("nonce-%012d", e.n.Add(1)) }

// scan is a scan of code at gate of s1 by scanner sc1.
func (e *env) scan(code, gate string, mods ...func(*Request)) Request {
	r := Request{Scanner: "sc1", ScreeningID: "s1", Gate: gate, Code: code, Nonce: e.nonce()}
	for _, m := range mods {
		m(&r)
	}
	return r
}

// docs counts the scans recorded under screening and the check-ins.
func (e *env) docs(screening string) (scans, checkins int) {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.fs.Collection(booking.Screenings).Doc(screening).Collection(Scans).Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.fs.Collection(CheckIns).Documents(ctx).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	return len(s), len(c)
}

func (e *env) record(screening, nonce string) ScanRecord {
	e.t.Helper()
	snap, err := e.fs.Collection(booking.Screenings).Doc(screening).Collection(Scans).Doc(nonce).Get(context.Background())
	if err != nil {
		e.t.Fatalf("scan %s: %v", nonce, err)
	}
	var r ScanRecord
	if err := snap.DataTo(&r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) checkIn(id string) (CheckIn, bool) {
	e.t.Helper()
	c, ok, err := e.door.CheckInOf(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c, ok
}

// A first entry is admitted: the check-in is created (in, seq 1, the gate,
// the scanner, the nonce, server time) and the scan recorded, in one
// transaction of one batched read of three documents and one commit of two
// writes. Its retry answers the same and writes nothing.
func TestAFirstEntryIsAdmittedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tk := e.book("s1", "A1", "alice")
	r := e.scan(tk.Code, "A")
	before := e.stats.Snapshot()
	got, err := e.door.CheckIn(ctx, r)
	cost := e.stats.Snapshot().Sub(before)
	if err != nil {
		t.Fatal(err)
	}
	if got.Result != ResultAdmitted || got.TicketID != tk.ID || got.SeatID != "A1" || got.ScreeningID != "s1" || got.Gate != "A" || got.At.IsZero() {
		t.Fatalf("admitted: %+v", got)
	}
	t.Logf("a scan costs %v", cost)
	if cost.RPCs["BeginTransaction"] != 1 || cost.RPCs["BatchGetDocuments"] != 1 || cost.RPCs["Commit"] != 1 || cost.Calls() != 3 || cost.Reads != 3 || cost.Writes != 2 {
		t.Errorf("a scan cost %v, want one transaction: one batched read of 3 documents, one commit of 2 writes", cost)
	}
	c, ok := e.checkIn(tk.ID)
	if !ok || c.State != StateIn || c.Seq != 1 || c.Gate != "A" || c.By != "sc1" || c.Nonce != r.Nonce || c.Version != 1 || c.ScreeningID != "s1" || !c.At.Equal(got.At) || c.Offline {
		t.Fatalf("check-in %+v", c)
	}
	rec := e.record("s1", r.Nonce)
	if rec.Result != ResultAdmitted || rec.TicketID != tk.ID || rec.Gate != "A" || rec.By != "sc1" || rec.Direction != DirectionIn || !rec.At.Equal(got.At) || !rec.ScannedAt.Equal(got.At) || rec.CodeHash != CodeHash(tk.Code) {
		t.Fatalf("scan record %+v", rec)
	}
	for range 2 {
		again, err := e.door.CheckIn(ctx, r)
		if err != nil || again != got {
			t.Fatalf("retry: %+v %v, want %+v", again, err, got)
		}
	}
	if scans, checkins := e.docs("s1"); scans != 1 || checkins != 1 {
		t.Fatalf("after retries: %d scans, %d check-ins; want 1 and 1", scans, checkins)
	}
}

// Every result of CONTRACT §13, each recorded in scans/{nonce} with the
// check-in left as it was; a retry of each refusal answers the same and
// writes nothing more.
func TestEveryRefusalIsRecordedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	in := e.book("s1", "A1", "alice")
	if _, err := e.door.CheckIn(ctx, e.scan(in.Code, "A")); err != nil {
		t.Fatal(err)
	}
	entry, _ := e.checkIn(in.ID)
	cancelled := e.book("s1", "A2", "alice")
	b, _ := e.fs.Collection(booking.Bookings).Where("tickets.A2", "==", cancelled.ID).Documents(ctx).GetAll()
	if _, err := e.bookings.Cancel(ctx, "alice", b[0].Ref.ID); err != nil {
		t.Fatal(err)
	}
	moved := e.book("s1", "A3", "alice")
	if _, err := e.tickets.Transfer(ctx, "alice", moved.ID, "bob@example.com", users{"bob@example.com": "bob"}); err != nil {
		t.Fatal(err)
	}
	other := e.book("s2", "A1", "alice")
	fresh := e.book("s1", "A4", "alice")
	closed := e.book("s4", "A1", "alice")
	early := e.book("s5", "A1", "alice")
	forger, _ := ticket.GenerateKeys("d1") // the same kid, another key
	forged, _ := forger.Sign(ticket.Payload{TicketID: fresh.ID, ScreeningID: "s1", Seat: "A4", Version: 1})
	unknown, _ := ticket.GenerateKeys("d9")
	unknownCode, _ := unknown.Sign(ticket.Payload{TicketID: fresh.ID, ScreeningID: "s1", Seat: "A4", Version: 1})
	parts := strings.Split(fresh.Code, ".")
	for _, c := range []struct {
		name   string
		r      Request
		result string
		err    error
		check  func(*Refusal)
	}{
		{"already in, at another gate", e.scan(in.Code, "B"), ResultAlreadyIn, ErrAlreadyIn, func(r *Refusal) {
			if r.Gate != "A" || !r.At.Equal(entry.At) {
				t.Errorf("already_in says gate %s at %v, want A at %v", r.Gate, r.At, entry.At)
			}
		}},
		{"already in, an offline upload", e.scan(in.Code, "B", func(r *Request) { r.Offline, r.ScannedAt = true, time.Now().Add(-time.Minute) }), ResultConflict, ErrAlreadyIn, func(r *Refusal) {
			if r.Gate != "A" {
				t.Errorf("conflict says gate %s, want A", r.Gate)
			}
		}},
		{"an exit without reentry", e.scan(in.Code, "A", func(r *Request) { r.Direction = DirectionOut }), ResultNoReentry, ErrNoReentry, nil},
		{"an exit of a ticket not in", e.scan(fresh.Code, "A", func(r *Request) { r.Direction = DirectionOut }), ResultNotIn, ErrNotIn, nil},
		{"a cancelled ticket", e.scan(cancelled.Code, "A"), ResultCancelled, ErrTicketCancelled, nil},
		{"the old code of a transferred ticket", e.scan(moved.Code, "A"), ResultReissued, ErrTicketReissued, nil},
		{"a ticket of another screening", e.scan(other.Code, "A"), ResultWrongScreening, ErrWrongScreening, func(r *Refusal) {
			if r.ScreeningID != "s2" {
				t.Errorf("wrong_screening names %q, want s2", r.ScreeningID)
			}
		}},
		{"a screening without a door", e.scan(closed.Code, "A", func(r *Request) { r.ScreeningID = "s4" }), ResultDoorClosed, ErrDoorClosed, nil},
		{"before the door opens", e.scan(early.Code, "A", func(r *Request) { r.ScreeningID = "s5" }), ResultDoorClosed, ErrDoorClosed, nil},
		{"a tampered signature", e.scan(parts[0]+"."+parts[1]+"."+flip(parts[2]), "A"), ResultInvalid, ErrInvalidTicket, nil},
		{"another key under the same kid", e.scan(forged, "A"), ResultInvalid, ErrInvalidTicket, nil},
		{"a key not listed", e.scan(unknownCode, "A"), ResultInvalid, ErrInvalidTicket, nil},
		{"a payload changed after signing", e.scan(parts[0]+"."+strings.Replace(parts[1], parts[1][:4], "eyJ1", 1)+"."+parts[2], "A"), ResultInvalid, ErrInvalidTicket, nil},
		{"not base64", e.scan("FLT1.@@@@.!!!!", "A"), ResultInvalid, ErrInvalidTicket, nil},
		{"not JSON", e.scan("FLT1.aGVsbG8."+parts[2], "A"), ResultInvalid, ErrInvalidTicket, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			scansBefore, checkinsBefore := e.docs(c.r.ScreeningID)
			_, err := e.door.CheckIn(ctx, c.r)
			var ref *Refusal
			if !errors.As(err, &ref) || !errors.Is(err, c.err) || ref.Result != c.result {
				t.Fatalf("%v, want a refusal %s (%v)", err, c.result, c.err)
			}
			if c.check != nil {
				c.check(ref)
			}
			rec := e.record(c.r.ScreeningID, c.r.Nonce)
			if rec.Result != c.result || rec.Gate != c.r.Gate || rec.By != "sc1" || rec.Offline != c.r.Offline {
				t.Errorf("recorded %+v, want result %s", rec, c.result)
			}
			if !c.r.ScannedAt.IsZero() && !rec.ScannedAt.Equal(c.r.ScannedAt.Truncate(time.Microsecond)) {
				t.Errorf("recorded scannedAt %v, sent %v", rec.ScannedAt, c.r.ScannedAt)
			}
			_, again := e.door.CheckIn(ctx, c.r)
			if Code(again) != Code(err) || again.Error() == "" {
				t.Errorf("its retry: %v, want %v", again, err)
			}
			if scans, checkins := e.docs(c.r.ScreeningID); scans != scansBefore+1 || checkins != checkinsBefore {
				t.Errorf("%d scans (%d before), %d check-ins (%d before): want one scan more, no check-in", scans, scansBefore, checkins, checkinsBefore)
			}
		})
	}
	if c, _ := e.checkIn(in.ID); c != entry {
		t.Errorf("the entry changed: %+v, was %+v", c, entry)
	}
	// The reissued ticket's new code gets in.
	now, _ := e.tickets.Get(ctx, moved.ID)
	if got, err := e.door.CheckIn(ctx, e.scan(now.Code, "A")); err != nil || got.Result != ResultAdmitted {
		t.Fatalf("the new code: %+v %v", got, err)
	}
}

func flip(s string) string {
	c := byte('A')
	if s[0] == 'A' {
		c = 'B'
	}
	return string(c) + s[1:]
}

type users map[string]string

func (u users) UIDByEmail(_ context.Context, email string) (string, error) {
	if uid, ok := u[email]; ok {
		return uid, nil
	}
	return "", ticket.ErrUserNotFound
}

// A request refused before its code is read writes nothing: a gate that
// is not the door's, a malformed gate, a short nonce, a scannedAt in the
// future or before year 1, an unknown screening, no scanner. A nonce used by another scan
// (another ticket, another gate) is nonce_reused and writes nothing.
func TestRequestsRefusedBeforeTheCodeWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tk := e.book("s1", "A1", "alice")
	other := e.book("s1", "A2", "alice")
	first := e.scan(tk.Code, "A")
	if _, err := e.door.CheckIn(ctx, first); err != nil {
		t.Fatal(err)
	}
	scans, checkins := e.docs("s1")
	for _, c := range []struct {
		name string
		r    Request
		code string
	}{
		{"a gate not of the door", e.scan(other.Code, "C"), "invalid_argument"},
		{"a gate that is no gate name", e.scan(other.Code, "A/B"), "invalid_argument"},
		{"a nonce of 15 characters", e.scan(other.Code, "A", func(r *Request) { r.Nonce = "123456789012345" }), "invalid_argument"},
		{"a nonce with a slash", e.scan(other.Code, "A", func(r *Request) { r.Nonce = "1234567890/123456" }), "invalid_argument"},
		{"scannedAt in the future", e.scan(other.Code, "A", func(r *Request) { r.ScannedAt = time.Now().Add(time.Hour) }), "invalid_argument"},
		// Firestore keeps no time before year 1: the commit would fail (500).
		{"scannedAt before year 1", e.scan(other.Code, "A", func(r *Request) { r.ScannedAt, r.Offline = time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC), true }), "invalid_argument"},
		{"an offline scan without scannedAt", e.scan(other.Code, "A", func(r *Request) { r.Offline = true }), "invalid_argument"},
		{"a direction sideways", e.scan(other.Code, "A", func(r *Request) { r.Direction = "up" }), "invalid_argument"},
		{"no code", e.scan("", "A"), "invalid_argument"},
		{"no scanner", e.scan(other.Code, "A", func(r *Request) { r.Scanner = "" }), "invalid_argument"},
		{"an unknown screening", e.scan(other.Code, "A", func(r *Request) { r.ScreeningID = "nope" }), "screening_not_found"},
		{"the nonce again with another ticket", e.scan(other.Code, "A", func(r *Request) { r.Nonce = first.Nonce }), "nonce_reused"},
		{"the nonce again at another gate", e.scan(tk.Code, "B", func(r *Request) { r.Nonce = first.Nonce }), "nonce_reused"},
		{"the nonce again by another scanner", e.scan(tk.Code, "A", func(r *Request) { r.Nonce, r.Scanner = first.Nonce, "sc2" }), "nonce_reused"},
	} {
		if _, err := e.door.CheckIn(ctx, c.r); Code(err) != c.code {
			t.Errorf("%s: %v (%s), want %s", c.name, err, Code(err), c.code)
		}
	}
	// A refused scan's nonce reused for another code.
	refused := e.scan(tk.Code, "B")
	if _, err := e.door.CheckIn(ctx, refused); !errors.Is(err, ErrAlreadyIn) {
		t.Fatal(err)
	}
	if _, err := e.door.CheckIn(ctx, e.scan(other.Code, "B", func(r *Request) { r.Nonce = refused.Nonce })); !errors.Is(err, ErrNonceReused) {
		t.Errorf("a refused scan's nonce with another ticket: %v", err)
	}
	if s, c := e.docs("s1"); s != scans+1 || c != checkins {
		t.Fatalf("%d scans, %d check-ins; want %d (one refusal more) and %d", s, c, scans+1, checkins)
	}
	if _, ok := e.checkIn(other.ID); ok {
		t.Fatal("a refused request checked the other ticket in")
	}
}

// With reentry, a ticket goes out and in again, seq counting each move;
// two exits in a row: the second is not_in.
func TestReentryAlternatesInAndOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tk := e.book("s3", "A1", "alice")
	at := func(dir, gate string) Request {
		return e.scan(tk.Code, gate, func(r *Request) { r.ScreeningID, r.Direction = "s3", dir })
	}
	for i, c := range []struct {
		dir, gate, result string
		err               error
	}{
		{DirectionIn, "A", ResultAdmitted, nil},
		{DirectionOut, "B", ResultExited, nil},
		{DirectionOut, "B", ResultNotIn, ErrNotIn},
		{DirectionIn, "B", ResultAdmitted, nil},
		{DirectionIn, "A", ResultAlreadyIn, ErrAlreadyIn},
	} {
		got, err := e.door.CheckIn(ctx, at(c.dir, c.gate))
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Fatalf("step %d: %v, want %v", i, err, c.err)
			}
			continue
		}
		if err != nil || got.Result != c.result {
			t.Fatalf("step %d: %+v %v, want %s", i, got, err, c.result)
		}
	}
	c, _ := e.checkIn(tk.ID)
	if c.State != StateIn || c.Seq != 3 || c.Gate != "B" {
		t.Fatalf("check-in after in, out, in: %+v", c)
	}
	st, err := e.door.Status(ctx, "s3")
	if err != nil {
		t.Fatal(err)
	}
	if st.In != 1 || st.Expected != 1 || len(st.Gates) != 2 || st.Gates[0].Admitted != 1 || st.Gates[1].Exited != 1 || st.Gates[1].Admitted != 1 || st.Gates[0].Scans != 2 {
		t.Fatalf("status %+v", st)
	}
}

// firelock.checkins counts each scan recorded, by its result, once: a
// retry answered from the record, and a request refused before anything is
// recorded, are not counted.
func TestCheckInsAreCountedByResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rd := telemetrytest.New(t)
	svc := New(e.fs, e.keys, WithMeterProvider(rd.Provider))
	tk := e.book("s1", "A1", "alice")
	first := e.scan(tk.Code, "A")
	for _, r := range []Request{first, first, e.scan(tk.Code, "B"), e.scan(tk.Code, "C"), e.scan("FLT1.x.y", "A")} {
		svc.CheckIn(ctx, r)
	}
	for result, want := range map[string]float64{ResultAdmitted: 1, ResultAlreadyIn: 1, ResultInvalid: 1} {
		if got := rd.Value(t, telemetry.CheckIns, telemetry.Result.String(result)); got != want {
			t.Errorf("firelock.checkins{%s} = %v, want %v: %s", result, got, want, rd.Dump(t, telemetry.CheckIns))
		}
	}
}

// A nonce sent again with another code answers nonce_reused and writes
// nothing (CONTRACT §13), even when the other code is of the same ticket
// (its code before a transfer) or both codes are no tickets: a scanner that
// reused a nonce must not be told admitted for a stale code.
func TestANonceSentAgainWithAnotherCodeIsReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	transferred := func(seat string) (old, cur ticket.Ticket) {
		old = e.book("s1", seat, "alice")
		if _, err := e.tickets.Transfer(ctx, "alice", old.ID, "bob@example.com", users{"bob@example.com": "bob"}); err != nil {
			t.Fatal(err)
		}
		cur, err := e.tickets.Get(ctx, old.ID)
		if err != nil {
			t.Fatal(err)
		}
		return old, cur
	}
	old1, cur1 := transferred("A1")
	old2, cur2 := transferred("A2")
	admitted := e.scan(cur1.Code, "A")
	if _, err := e.door.CheckIn(ctx, admitted); err != nil {
		t.Fatal(err)
	}
	reissued := e.scan(old2.Code, "A")
	if _, err := e.door.CheckIn(ctx, reissued); !errors.Is(err, ErrTicketReissued) {
		t.Fatal(err)
	}
	invalid := e.scan("FLT1.bm90IGEgdGlja2V0.c2lnbmF0dXJl", "A")
	if _, err := e.door.CheckIn(ctx, invalid); !errors.Is(err, ErrInvalidTicket) {
		t.Fatal(err)
	}
	scans, checkins := e.docs("s1")
	for _, c := range []struct {
		name string
		r    Request
	}{
		{"an admitted scan's nonce with the ticket's code before its transfer", e.scan(old1.Code, "A", func(r *Request) { r.Nonce = admitted.Nonce })},
		{"a reissued scan's nonce with the ticket's current code", e.scan(cur2.Code, "A", func(r *Request) { r.Nonce = reissued.Nonce })},
		{"an invalid scan's nonce with another invalid code", e.scan("FLT1.YW5vdGhlcg.c2lnbmF0dXJl", "A", func(r *Request) { r.Nonce = invalid.Nonce })},
	} {
		got, err := e.door.CheckIn(ctx, c.r)
		if !errors.Is(err, ErrNonceReused) {
			t.Errorf("%s: %+v %v, want nonce_reused", c.name, got, err)
		}
	}
	// The same code again is a retry: it answers as before.
	if got, err := e.door.CheckIn(ctx, admitted); err != nil || got.Result != ResultAdmitted {
		t.Errorf("the admitted scan again: %+v %v", got, err)
	}
	if _, err := e.door.CheckIn(ctx, invalid); !errors.Is(err, ErrInvalidTicket) {
		t.Errorf("the invalid scan again: %v", err)
	}
	if s, c := e.docs("s1"); s != scans || c != checkins {
		t.Fatalf("%d scans, %d check-ins; want %d and %d (nothing more)", s, c, scans, checkins)
	}
	if _, ok := e.checkIn(cur2.ID); ok {
		t.Fatal("a reused nonce checked a ticket in")
	}
}
