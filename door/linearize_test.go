package door

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/anishathalye/porcupine"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/linearize"
	"github.com/firelock/firelock/ticket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The shape of a recorded door history.
const (
	doorWorkers    = 6 // gates: each its own Service, two to a client connection
	doorClients    = 3
	ticketsPerDoor = 4 // of each of two screenings: with and without reentry
	doorOpTimeout  = 2 * time.Second
	doorCheckLimit = time.Minute
	// doorUnknownPerTicket: a ticket whose operations have had this many
	// outcomes unknown is left alone for the rest of the history. The
	// check's search grows with the unknowns of one ticket (each may have
	// taken effect at any later point): on a loaded machine a ticket
	// gathered enough that the check did not finish within its minute
	// (CI 11-29 19:48: 24 unknown of 178 operations).
	doorUnknownPerTicket = 2
	transferPercent      = 6
	cancelPercent        = 3
)

// doorTicket is a ticket of the history, as its workers know it.
type doorTicket struct {
	id, screening, booking string
	reentry                bool
	mu                     sync.Mutex
	codes                  map[int]string // by version, as learnt from transfers
	nonces                 []string       // scans sent, for retries
	unknown                int            // operations whose outcome is unknown
}

// left says whether tk has had doorUnknownPerTicket unknown outcomes.
func (tk *doorTicket) left() bool {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return tk.unknown >= doorUnknownPerTicket
}

// unknownOutcome records call's outcome as unknown (err), against tk.
func (tk *doorTicket) unknownOutcome(call *linearize.Call[doorIn, doorOut], err error) {
	tk.mu.Lock()
	tk.unknown++
	tk.mu.Unlock()
	call.Unknown(doorOut{}, err)
}

func (tk *doorTicket) code(rnd *rand.Rand) (string, int) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	versions := slices.Sorted(maps.Keys(tk.codes))
	v := versions[len(versions)-1]
	if len(versions) > 1 && rnd.IntN(4) == 0 {
		v = versions[rnd.IntN(len(versions)-1)] // an old code: a screenshot
	}
	return tk.codes[v], v
}

// doorRecorder records one history.
type doorRecorder struct {
	t       *testing.T
	h       *linearize.History[doorIn, doorOut]
	direct  *firestore.Client
	tickets []*doorTicket
	nonces  atomic.Int64
	mu      sync.Mutex
	tally   map[string]int
}

func (r *doorRecorder) count(kind string) {
	r.mu.Lock()
	r.tally[kind]++
	r.mu.Unlock()
}

func (r *doorRecorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := slices.Sorted(maps.Keys(r.tally))
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%s %d", k, r.tally[k])
	}
	return strings.Join(kinds, ", ")
}

// recordDoorHistory books tickets of two screenings (one door with
// reentry, one without), then has gates scan them in and out at random for
// run, retry scans (some at another gate: nonce_reused), read check-ins,
// transfer tickets and cancel bookings, through a fault proxy that drops
// answers after the server processed the request, delays them and resets
// connections. plant, if not nil, plants a bug in every door Service.
func recordDoorHistory(t *testing.T, seed uint64, run time.Duration, plant func(*Service)) (*doorRecorder, int) {
	t.Helper()
	ctx := context.Background()
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	project := firelocktest.ProjectID(t)
	rec := &doorRecorder{t: t, h: linearize.NewHistory[doorIn, doorOut](), direct: firelocktest.NewClientFor(t, project), tally: map[string]int{}}
	keys, err := ticket.GenerateKeys("lin")
	if err != nil {
		t.Fatal(err)
	}
	issuer := ticket.New(rec.direct, keys)
	bookings := booking.New(rec.direct, booking.WithTickets(issuer))
	defer bookings.Close()
	for _, sc := range []struct {
		id      string
		reentry bool
	}{{"once", false}, {"again", true}} {
		if _, err := rec.direct.Collection(booking.Screenings).Doc(sc.id).Set(ctx, map[string]any{"title": sc.id, "startsAt": time.Now().Add(time.Hour),
			"rows": []string{"A"}, "seatsPerRow": ticketsPerDoor,
			"door": map[string]any{"opensAt": time.Now().Add(-time.Minute), "gates": []string{"A", "B", "C"}, "reentry": sc.reentry}}); err != nil {
			t.Fatal(err)
		}
		for i := range ticketsPerDoor {
			seat := fmt.Sprintf("A%d", i+1)
			b, _, err := bookings.Book(ctx, "x", booking.Request{UID: "alice", ScreeningID: sc.id, Seats: []string{seat}, RequestID: sc.id + seat})
			if err != nil {
				t.Fatal(err)
			}
			tk, err := issuer.Get(ctx, b.Tickets[seat])
			if err != nil {
				t.Fatal(err)
			}
			rec.tickets = append(rec.tickets, &doorTicket{id: tk.ID, screening: sc.id, booking: b.ID, reentry: sc.reentry, codes: map[int]string{1: tk.Code}})
		}
	}
	clients := make([]*firestore.Client, doorClients)
	for i := range clients {
		clients[i], _ = firelocktest.NewClientVia(t, p.Addr, project)
	}
	stop := make(chan struct{})
	healed := p.InjectAtRandom(t, rand.New(rand.NewPCG(seed, 2)), stop, func(fault string, from, to time.Time) {
		rec.h.Annotate("fault", from, to, fault)
	})
	var wg sync.WaitGroup
	deadline := time.Now().Add(run)
	for w := range doorWorkers {
		c := clients[w%doorClients]
		svc := New(c, keys)
		if plant != nil {
			plant(svc)
		}
		bk := booking.New(c, booking.WithTickets(ticket.New(c, keys)))
		defer bk.Close()
		wr := &doorWorker{rec: rec, id: w, gate: []string{"A", "B", "C"}[w%3], svc: svc, tickets: ticket.New(c, keys), bookings: bk, client: c,
			rnd: rand.New(rand.NewPCG(seed, uint64(10+w)))}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				wr.step()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-healed
	return rec, p.Faults()
}

type doorWorker struct {
	rec      *doorRecorder
	id       int
	gate     string
	svc      *Service
	tickets  *ticket.Service
	bookings *booking.Service
	client   *firestore.Client
	rnd      *rand.Rand
}

func (w *doorWorker) step() {
	r := w.rec
	tk := r.tickets[w.rnd.IntN(len(r.tickets))]
	if tk.left() {
		time.Sleep(5 * time.Millisecond) // another ticket next time
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), doorOpTimeout)
	defer cancel()
	in := doorIn{Ticket: tk.id, Reentry: tk.reentry}
	switch n := w.rnd.IntN(100); {
	case n < cancelPercent:
		in.Op = opCancel
		call := r.h.Call(w.id, in)
		_, err := w.bookings.Cancel(ctx, "alice", tk.booking)
		switch {
		case err == nil:
			r.count("cancel ok")
			call.Return(doorOut{Result: "ok"})
		case errors.Is(err, booking.ErrTicketUsed):
			r.count("cancel ticket_used")
			call.Return(doorOut{Result: "ticket_used"})
		default:
			r.count("cancel unknown")
			tk.unknownOutcome(call, err)
		}
	case n < cancelPercent+transferPercent:
		in.Op = opTransfer
		tk.mu.Lock()
		owner := "alice"
		if len(tk.codes)%2 == 0 {
			owner = "bob"
		}
		tk.mu.Unlock()
		to := map[string]string{"alice": "bob", "bob": "alice"}[owner]
		call := r.h.Call(w.id, in)
		got, err := w.tickets.Transfer(ctx, owner, tk.id, to+"@example.com", people)
		switch {
		case err == nil:
			tk.mu.Lock()
			tk.codes[got.Version] = got.Code
			tk.mu.Unlock()
			r.count("transfer ok")
			call.Return(doorOut{Result: "ok", Version: got.Version})
		case errors.Is(err, booking.ErrTicketUsed):
			r.count("transfer ticket_used")
			call.Return(doorOut{Result: "ticket_used"})
		case errors.Is(err, ticket.ErrCancelled):
			r.count("transfer ticket_cancelled")
			call.Return(doorOut{Result: "ticket_cancelled"})
		case errors.Is(err, booking.ErrForbidden):
			// Its owner is not who this worker thinks: a transfer whose
			// outcome was unknown moved it. Nothing changed.
			r.count("transfer not the owner")
			call.Return(doorOut{Result: "forbidden"})
		default:
			r.count("transfer unknown")
			tk.unknownOutcome(call, err)
		}
	case n < 15:
		in.Op = opRead
		call := r.h.Call(w.id, in)
		snap, err := w.client.Collection(CheckIns).Doc(tk.id).Get(ctx)
		switch {
		case status.Code(err) == codes.NotFound:
			call.Return(doorOut{})
		case err != nil:
			tk.unknownOutcome(call, err)
		default:
			var c CheckIn
			if err := snap.DataTo(&c); err != nil {
				r.t.Error(err)
			}
			call.Return(doorOut{State: c.State, Seq: c.Seq, Gate: c.Gate})
		}
		r.count("read")
	default:
		in.Op = opScan
		in.Dir, in.Gate = DirectionIn, w.gate
		if tk.reentry && w.rnd.IntN(3) == 0 {
			in.Dir = DirectionOut
		}
		code, v := tk.code(w.rnd)
		in.CodeVersion = v
		tk.mu.Lock()
		if len(tk.nonces) > 0 && w.rnd.IntN(6) == 0 { // a retry, or the nonce at another gate
			prev := tk.nonces[w.rnd.IntN(len(tk.nonces))]
			tk.mu.Unlock()
			var ok bool
			if in, code, ok = w.retryOf(tk, prev, in, code); !ok {
				return
			}
		} else {
			in.Nonce = fmt.Sprintf("n%04d-%s-0123456789", r.nonces.Add(1), tk.id[:6])
			in.Offline = w.rnd.IntN(8) == 0
			tk.nonces = append(tk.nonces, in.Nonce+"|"+in.Gate+"|"+in.Dir+"|"+code+"|"+fmt.Sprint(in.CodeVersion, in.Offline))
			tk.mu.Unlock()
		}
		req := Request{Scanner: "gate-scanner", ScreeningID: tk.screening, Gate: in.Gate, Code: code, Nonce: in.Nonce, Direction: in.Dir, Offline: in.Offline}
		if in.Offline {
			req.ScannedAt = time.Now().Add(-time.Second)
		}
		call := r.h.Call(w.id, in)
		got, err := w.svc.CheckIn(ctx, req)
		var refused *Refusal
		switch {
		case err == nil:
			r.count("scan " + got.Result)
			call.Return(doorOut{Result: got.Result, Gate: got.Gate})
		case errors.As(err, &refused):
			r.count("scan " + refused.Result)
			call.Return(doorOut{Result: refused.Result, Gate: refused.Gate})
		case errors.Is(err, ErrNonceReused):
			r.count("scan nonce_reused")
			call.Return(doorOut{Result: "nonce_reused"})
		default:
			r.count("scan unknown")
			tk.unknownOutcome(call, err)
		}
	}
}

// retryOf is in as the scan sent before as prev ("nonce|gate|dir|code|version offline"):
// the same scan again, or (one time in three) its nonce at this worker's
// gate, which is another scan unless the gate is the same.
func (w *doorWorker) retryOf(tk *doorTicket, prev string, in doorIn, code string) (doorIn, string, bool) {
	f := strings.Split(prev, "|")
	if len(f) != 5 {
		return in, code, false
	}
	var v int
	var offline bool
	fmt.Sscan(f[4], &v, &offline)
	in.Nonce, in.Dir, in.CodeVersion, in.Offline = f[0], f[2], v, offline
	code = f[3]
	if w.rnd.IntN(3) != 0 {
		in.Gate = f[1]
	}
	return in, code, true
}

// people are the accounts tickets move between.
var people = users{"alice@example.com": "alice", "bob@example.com": "bob"}

// Gates (goroutines with Services of their own, two on each of three
// connections) scan four tickets of a door with reentry and four of one
// without, in and out, retry scans, reuse nonces at other gates, read
// check-ins, transfer tickets and cancel their bookings while faults
// strike; the history of what they were told must be linearizable against
// the door's specification (model_test.go), and what Firestore holds after
// must agree with it: per ticket, as many admitted and exited scans
// recorded as its check-in's seq. make soak runs it for minutes
// (FIRELOCK_SOAK).
func TestDoorHistoryIsLinearizable(t *testing.T) {
	seed := linearize.Seed(t, 1)
	run := linearize.Duration(t, 8*time.Second)
	rec, faults := recordDoorHistory(t, seed, run, nil)
	res := linearize.Require(t, doorModel, rec.h, max(doorCheckLimit, run))
	t.Logf("operations: %s", rec.summary())
	t.Logf("faults injected %d: %v", faults, res)
	ctx := context.Background()
	for _, tk := range rec.tickets {
		snaps, err := rec.direct.Collection(booking.Screenings).Doc(tk.screening).Collection(Scans).Where("ticketId", "==", tk.id).Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		moves := 0
		for _, s := range snaps {
			if r := s.Data()["result"]; r == ResultAdmitted || r == ResultExited {
				moves++
			}
		}
		c, ok, err := New(rec.direct, nil).CheckInOf(ctx, tk.id)
		if err != nil {
			t.Fatal(err)
		}
		if (ok && c.Seq != moves) || (!ok && moves != 0) {
			t.Errorf("ticket %s: %d admitted and exited scans recorded, its check-in %+v", tk.id, moves, c)
		}
	}
}

// The checker proves itself: with a bug planted in the door (an entry that
// does not look at the check-in: every scan in admits), a history is not
// linearizable. (Up to three short histories are recorded; the first shown
// not linearizable ends the test.)
func TestDoorLinearizabilityCatchesAPlantedBug(t *testing.T) {
	seed := linearize.Seed(t, 1)
	var res linearize.Result
	for try := range 3 {
		rec, faults := recordDoorHistory(t, seed+uint64(try), 3*time.Second, func(s *Service) { s.hooks.blindEntry = true })
		if res = linearize.Check(t, doorModel, rec.h, doorCheckLimit); res.Verdict == porcupine.Illegal {
			t.Logf("caught in history %d (faults %d; %s): %v", try+1, faults, rec.summary(), res)
			return
		}
	}
	t.Fatalf("with the entry blind to the check-in the checker found %v, want Illegal", res)
}
