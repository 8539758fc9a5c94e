package sale

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
)

// TestMain runs the parallel tests (each on its own project, mostly
// waiting for admitters' runs, leases and passes to end) eight at a time;
// the tests that measure how soon something happens stay sequential.
func TestMain(m *testing.M) {
	firelocktest.SideBySide(8)
	os.Exit(firelocktest.Main(m))
}

// env is one test's Firestore project with a screening on sale.
type env struct {
	t   *testing.T
	fs  *firestore.Client
	svc *Service
	log *syncBuffer
	id  string // the screening
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testOptions make windows and passes short; the contract's defaults stay.
func testOptions(log *syncBuffer) []Option {
	return []Option{
		WithRateWindow(2 * time.Second), WithMinPass(time.Second), WithJoinWindow(500 * time.Millisecond),
		WithAdmitterLease(2 * time.Second), WithTick(100*time.Millisecond, 300*time.Millisecond), WithWriteBudget(10, time.Second),
		WithPassMargin(100 * time.Millisecond), WithLogger(slog.New(slog.NewJSONHandler(log, nil))),
	}
}

// newEnv makes a screening (rows x seatsPerRow seats, starting in two
// hours) whose sale is sale (nil: none); a sale opens before the start.
func newEnv(t *testing.T, rows, seatsPerRow int, sale map[string]any) *env {
	t.Helper()
	e := &env{t: t, fs: firelocktest.NewClient(t), log: &syncBuffer{}, id: "s1"}
	e.svc = New(e.fs, testOptions(e.log)...)
	letters := []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}[:rows]
	doc := map[string]any{"title": "Metropolis", "startsAt": time.Now().Add(2 * time.Hour), "rows": letters, "seatsPerRow": seatsPerRow}
	if sale != nil {
		doc["sale"] = sale
	}
	if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Set(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	e.dumpLogOnFailure()
	return e
}

// setSale changes fields of the screening's sale, as an admin would.
func (e *env) setSale(fields map[string]any) {
	e.t.Helper()
	var ups []firestore.Update
	for k, v := range fields {
		ups = append(ups, firestore.Update{FieldPath: firestore.FieldPath{"sale", k}, Value: v})
	}
	if _, err := e.fs.Collection(booking.Screenings).Doc(e.id).Update(context.Background(), ups); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) join(uid string) Place {
	e.t.Helper()
	p, _, err := e.svc.Join(context.Background(), uid, e.id)
	if err != nil {
		e.t.Fatalf("join %s: %v", uid, err)
	}
	return p
}

// places reads every place of the sale.
func (e *env) places() []Place {
	e.t.Helper()
	snaps, err := e.fs.Collection(Queue).Where("screeningId", "==", e.id).Documents(context.Background()).GetAll()
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]Place, len(snaps))
	for i, s := range snaps {
		if out[i], err = placeOf(s); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

func (e *env) public() Public {
	e.t.Helper()
	snap, err := e.fs.Collection(Sales).Doc(e.id).Get(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	var p Public
	if err := snap.DataTo(&p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) state() admitState {
	e.t.Helper()
	snap, err := e.fs.Collection(States).Doc(e.id).Get(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	var st admitState
	if err := snap.DataTo(&st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) ranking() rankState {
	e.t.Helper()
	snap, err := e.fs.Collection(Rankings).Doc(e.id).Get(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	var rs rankState
	if err := snap.DataTo(&rs); err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func (e *env) admitter() *Admitter {
	e.t.Helper()
	a, err := e.svc.Admitter()
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// run runs a for d (until the local clock reaches now + d).
func (e *env) run(a *Admitter, d time.Duration) error {
	return a.Run(context.Background(), time.Now().Add(d))
}

// joinAndOpen joins n users (u00, u01, ...) to the sale, in that order,
// and opens it now.
func (e *env) joinAndOpen(n int) {
	e.t.Helper()
	for i := range n {
		e.join(fmt.Sprintf("u%02d", i))
	}
	e.setSale(map[string]any{"opensAt": e.serverNow()})
}

// serverNow is Firestore's clock: the read time of a read.
func (e *env) serverNow() time.Time {
	e.t.Helper()
	snap, err := e.fs.Collection(booking.Screenings).Doc(e.id).Get(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.ReadTime
}

func saleOpening(at time.Time, admitPerMinute, maxActive, passSeconds int) map[string]any {
	return map[string]any{"opensAt": at, "admitPerMinute": admitPerMinute, "maxActive": maxActive, "passSeconds": passSeconds}
}

func (e *env) dumpLogOnFailure() {
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("log:\n%s", e.log.String())
		}
	})
}
