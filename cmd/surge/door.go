package main

// The door's surge (issue #49, CONTRACT §13): `go run ./cmd/surge -door`.
// A screening's tickets, booked through BookSeats over HTTP (real, signed
// FLT1 codes), arrive at the gates; each gate is a scanner (an Auth user
// with scanner: true) writing checkins/{ticketId} and its
// screenings/{id}/scans/{nonce} in one batch under firestore.rules, the
// way scan.html does with the Firebase SDK; a share of the tickets is also
// presented as a screenshot at another gate moments later; some gates lose
// the network for a while, decide from the keys of /TicketKeys and what
// they admitted, queue their batches and upload them when they are back,
// recording the entries the rules refuse as conflicts. Then what Firestore
// holds is audited: one entry per ticket, no double entry through online
// gates, every offline double entry reported.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/claims"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/report"
	"github.com/firelock/firelock/ticket"
	gonanoid "github.com/matoous/go-nanoid/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// doorScreening is the screening whose door the surge opens.
const doorScreening = "door-surge"

// Planted bugs of the door's surge (a test hook, -door-plant): the audit
// must go red on each.
const (
	// plantOverwrite: gate A writes its entries with a client the rules do
	// not hold (as a server path would), without the check-in's
	// precondition: a ticket already in is let in again, over the entry.
	plantOverwrite = "overwrite"
	// plantDropConflicts: the offline gates drop the entries the rules
	// refuse when they are back, reporting no conflict.
	plantDropConflicts = "drop-conflicts"
)

// How online gates scan (-door-online).
const (
	onlineRules   = "rules"
	onlineCheckIn = "checkin"
)

// doorConfig is one door surge.
type doorConfig struct {
	Tickets          int           `json:"tickets"`          // booked, each presented at a gate once
	Gates            int           `json:"gates"`            // named A, B, ...
	Rate             float64       `json:"rate"`             // arrivals a second, over every gate
	Screenshots      float64       `json:"screenshots"`      // share of tickets presented again at another gate
	ScreenshotWithin time.Duration `json:"screenshotWithin"` // that long after the first, at most
	OfflineGates     int           `json:"offlineGates"`     // the last gates lose the network
	OfflineFor       time.Duration `json:"offlineFor"`       // for this long, from a fifth of the arrivals' span
	SeatsPerBooking  int           `json:"seatsPerBooking"`
	Seed             uint64        `json:"seed"`
	Plant            string        `json:"plant,omitempty"`
	// Online is how online gates scan: "rules" (the check-in and its scan
	// in one batch under firestore.rules, the SDK's way) or "checkin" (the
	// function CheckIn over HTTP, as scan.html does while online).
	Online string `json:"online"`
	// ScanP99: the online gates' scan-to-verdict p99 (the code verified,
	// the batch committed or refused, and for a refusal the entry read).
	ScanP99 time.Duration `json:"goalScanP99"`

	out, logw io.Writer
}

func doorDefaults() doorConfig {
	return doorConfig{Tickets: 2000, Gates: 8, Rate: 20, Screenshots: 0.05, ScreenshotWithin: time.Second,
		OfflineGates: 2, OfflineFor: 60 * time.Second, SeatsPerBooking: 4, ScanP99: 250 * time.Millisecond, Online: onlineRules}
}

func (c doorConfig) check() error {
	switch {
	case c.Tickets < 1 || c.Tickets > 20*26*27:
		return fmt.Errorf("-tickets %d: want 1 to %d", c.Tickets, 20*26*27)
	case c.Gates < 2 || c.Gates > 26:
		return fmt.Errorf("-gates %d: want 2 to 26 (a screenshot goes to another gate)", c.Gates)
	case c.OfflineGates < 0 || c.OfflineGates >= c.Gates:
		return fmt.Errorf("-offline-gates %d: want 0 to %d", c.OfflineGates, c.Gates-1)
	case c.Rate <= 0 || c.Screenshots < 0 || c.Screenshots > 1 || c.ScreenshotWithin < 0 || c.OfflineFor < 0:
		return fmt.Errorf("-rate must be positive, -screenshots a share, -screenshot-within and -offline-for 0 or more")
	case c.SeatsPerBooking < 1 || c.SeatsPerBooking > 10:
		return fmt.Errorf("-seats-per-booking %d: want 1 to 10", c.SeatsPerBooking)
	case c.Online != onlineRules && c.Online != onlineCheckIn:
		return fmt.Errorf("-door-online %q: want %s or %s", c.Online, onlineRules, onlineCheckIn)
	case c.Plant != "" && c.Plant != plantOverwrite && c.Plant != plantDropConflicts:
		return fmt.Errorf("-door-plant %q: want %s or %s", c.Plant, plantOverwrite, plantDropConflicts)
	}
	return nil
}

// arrival is one person at a gate with a code.
type arrival struct {
	at         time.Time
	ticket     int // index into the tickets
	screenshot bool
}

// entry is a person a gate let in, as the gate knows it.
type entry struct {
	ticketID, gate, nonce string
	offline               bool
}

// doorGate is one scanner.
type doorGate struct {
	name    string
	uid     string
	token   string
	authCtx context.Context
	fs      *firestore.Client // under the rules, as the scanner
	offFrom time.Time         // offline in [offFrom, offTo)
	offTo   time.Time

	mu       sync.Mutex
	admitted map[string]bool // what this gate let in (the app remembers it)
	queue    []queued        // batches waiting for the network
	arrivals []arrival
}

type queued struct {
	p         ticket.Payload
	nonce     string
	scannedAt time.Time
}

func (g *doorGate) offline(t time.Time) bool {
	return !g.offFrom.IsZero() && !t.Before(g.offFrom) && t.Before(g.offTo)
}

// doorSim is the run's shared state.
type doorSim struct {
	cfg       doorConfig
	keys      *ticket.Keys
	admin     *firestore.Client
	codes     []string
	ticketIDs []string
	checkIn   string // the function CheckIn's URL

	mu          sync.Mutex
	entries     []entry         // every person let in, by which gate
	onlineTook  []time.Duration // scan to verdict, online gates
	refusedTook []time.Duration // of those, the refused (already in)
	start       time.Time       // of the arrivals
	slowAt      []time.Duration // when scans slower than the goal began, from start
	uploads     []uploadSpan
	offlineTook []time.Duration // the offline verdict: signature and local state
	conflictsBy map[string]int  // conflicts the gates reported, by gate
	scans       atomic.Int64
	rulesReads  atomic.Int64 // the rules' get()/getAfter() of the requests sent

	*recorder // the verdicts ("admitted", "already_in (this gate)", ...) and the first few errors
}

// The rules' document reads of a request (firestore.rules, §13): an entry
// (check-in and its scan) reads the ticket and the screening and, after the
// write, the scan and the check-in; a refusal recorded alone reads the
// screening. Firestore bills rules' document reads as reads; they are
// counted here for every request sent, refused ones too (an upper bound:
// the emulator does not say what it would bill).
const (
	rulesReadsEntry   = 4
	rulesReadsRefusal = 1
)

// runDoor carries out one door surge and audits it.
func runDoor(ctx context.Context, cfg doorConfig) (*DoorReport, error) {
	sb, err := openSandbox(ctx, "demo-door-")
	if err != nil {
		return nil, err
	}
	defer sb.close()
	project, admin := sb.project, sb.admin
	progress := func(format string, args ...any) { fmt.Fprintf(cfg.out, format+"\n", args...) }
	log := functions.NewLogger(&lockedWriter{w: cfg.logw})
	emulatorHost := os.Getenv("FIRESTORE_EMULATOR_HOST")
	be, err := startBackend(ctx, project, emulatorHost, 0, newHotDocs(), log)
	if err != nil {
		return nil, err
	}
	defer be.close()
	seed := seedOrNow(cfg.Seed)
	rng := rand.New(rand.NewPCG(seed, 49))

	// The hall and its door, open since a minute ago.
	const perRow = 20
	var rows []string
	for r := range (cfg.Tickets + perRow - 1) / perRow {
		rows = append(rows, rowLabel(r))
	}
	gates := make([]string, cfg.Gates)
	for i := range gates {
		gates[i] = string(rune('A' + i))
	}
	if _, err := admin.Collection(booking.Screenings).Doc(doorScreening).Set(ctx, map[string]any{
		"title": "The Door", "startsAt": time.Now().Add(2 * time.Hour), "rows": rows, "seatsPerRow": perRow,
		"door": map[string]any{"opensAt": time.Now().Add(-time.Minute), "gates": gates, "reentry": false},
	}); err != nil {
		return nil, err
	}

	// The buyers book every ticket through BookSeats.
	t0 := time.Now()
	buyers := (cfg.Tickets + cfg.SeatsPerBooking - 1) / cfg.SeatsPerBooking
	progress("door: signing up %d buyers and %d scanners ...", buyers, cfg.Gates)
	accts, err := signUp(ctx, "door-buyer", buyers, 16)
	if err != nil {
		return nil, err
	}
	scanners, err := grantScanners(ctx, cfg.Gates)
	if err != nil {
		return nil, err
	}
	if err := bookAll(ctx, be.url, accts, cfg); err != nil {
		return nil, err
	}
	progress("door: %d tickets booked by %d buyers in %.1f s", cfg.Tickets, buyers, time.Since(t0).Seconds())

	// The gates' keys, from /TicketKeys, as scan.html caches them.
	resp, err := http.Get(be.url + "/TicketKeys")
	if err != nil {
		return nil, err
	}
	jwks, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	keys, err := ticket.ParseKeys(jwks)
	if err != nil {
		return nil, fmt.Errorf("GET /TicketKeys: %w", err)
	}
	s := &doorSim{cfg: cfg, keys: keys, admin: admin, recorder: newRecorder(), conflictsBy: map[string]int{}, checkIn: be.url + "/CheckIn"}
	docs, err := admin.Collection("tickets").Where("screeningId", "==", doorScreening).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	if len(docs) != cfg.Tickets {
		return nil, fmt.Errorf("%d tickets issued for %d seats booked", len(docs), cfg.Tickets)
	}
	for _, d := range docs {
		code, _ := d.Data()["code"].(string)
		s.codes, s.ticketIDs = append(s.codes, code), append(s.ticketIDs, d.Ref.ID)
	}

	// The gates: a Firestore client each, counted on the wire.
	stats := &rpcstats.Stats{}
	gs := make([]*doorGate, cfg.Gates)
	for i := range gs {
		conn, err := grpc.NewClient(emulatorHost, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, stats.DialOptions()...)...)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		fs, err := firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
		if err != nil {
			return nil, err
		}
		defer fs.Close()
		gs[i] = &doorGate{name: gates[i], uid: scanners[i].uid, token: scanners[i].token, fs: fs, admitted: map[string]bool{},
			authCtx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+scanners[i].token)}
	}

	// Each gate's connection is up before the first person comes (the app
	// has loaded the screening).
	for _, g := range gs {
		if _, err := g.fs.Collection(booking.Screenings).Doc(doorScreening).Get(g.authCtx); err != nil {
			return nil, fmt.Errorf("gate %s reads its screening: %w", g.name, err)
		}
	}

	// The emulator's rules engine is warmed first (it compiles as it goes,
	// which a deployed Firestore has long done): each gate sends entries of a
	// ticket that does not exist, which the rules refuse, writing nothing.
	for _, g := range gs {
		for k := range 5 {
			p := ticket.Payload{TicketID: fmt.Sprintf("warm-up-%s-%d", g.name, k), ScreeningID: doorScreening, Version: 1}
			if err := s.entryBatch(g.authCtx, g.fs, g, p, newScanNonce(), time.Now(), false); status.Code(err) != codes.PermissionDenied {
				return nil, fmt.Errorf("gate %s: an entry of no ticket: %v, want it refused", g.name, err)
			}
		}
	}
	s.rulesReads.Store(0)

	// The arrivals: every ticket once at a random gate, in random order at
	// the rate; a share of them again at another gate soon after.
	start := time.Now().Add(time.Second)
	order := rng.Perm(cfg.Tickets)
	span := time.Duration(float64(cfg.Tickets) * (1 + cfg.Screenshots) / cfg.Rate * float64(time.Second))
	every := time.Duration(float64(time.Second) * (1 + cfg.Screenshots) / cfg.Rate) // a ticket brings 1 + Screenshots arrivals
	arrivals := 0
	for k, ti := range order {
		at := start.Add(time.Duration(k) * every)
		g := rng.IntN(cfg.Gates)
		gs[g].arrivals = append(gs[g].arrivals, arrival{at: at, ticket: ti})
		arrivals++
		if rng.Float64() < cfg.Screenshots {
			other := (g + 1 + rng.IntN(cfg.Gates-1)) % cfg.Gates
			gs[other].arrivals = append(gs[other].arrivals, arrival{at: at.Add(time.Duration(rng.Int64N(int64(cfg.ScreenshotWithin) + 1))), ticket: ti, screenshot: true})
			arrivals++
		}
	}
	offFrom := start.Add(span / 5)
	for _, g := range gs[cfg.Gates-cfg.OfflineGates:] {
		g.offFrom, g.offTo = offFrom, offFrom.Add(cfg.OfflineFor)
	}
	for _, g := range gs {
		sort.Slice(g.arrivals, func(i, j int) bool { return g.arrivals[i].at.Before(g.arrivals[j].at) })
	}
	progress("door: %d arrivals (%d screenshots) at %d gates over %.0f s from %s; gates %v offline %s to %s",
		arrivals, arrivals-cfg.Tickets, cfg.Gates, span.Seconds(), start.Format("15:04:05"), gates[cfg.Gates-cfg.OfflineGates:],
		offFrom.Format("15:04:05"), offFrom.Add(cfg.OfflineFor).Format("15:04:05"))

	s.start = start
	before := stats.Snapshot()
	var fnStats *rpcstats.Stats // the function CheckIn's Firestore client
	for _, in := range be.instances {
		if in.name == "CheckIn" {
			fnStats = in.stats
		}
	}
	fnBefore := fnStats.Snapshot()
	prober := startProbe(admin)
	defer prober.end()
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Go(func() { s.runGate(ctx, g, i == 0 && cfg.Plant == plantOverwrite) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			verdicts := s.counts()
			s.mu.Lock()
			progress("T%+5.0fs  scans %5d  let in %5d  verdicts %v", time.Since(start).Seconds(), s.scans.Load(), len(s.entries), verdicts)
			s.mu.Unlock()
		}
	}
	ran := time.Since(start)
	used := stats.Snapshot().Sub(before)
	fnUsed := fnStats.Snapshot().Sub(fnBefore)
	prober.end()
	progress("door: the gates are done after %.1f s; auditing ...", ran.Seconds())
	rep, err := s.audit(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	rep.Config, rep.Project, rep.Seed = cfg, project, seed
	rep.Arrivals, rep.Screenshots, rep.SpanSeconds, rep.RunSeconds = arrivals, arrivals-cfg.Tickets, span.Seconds(), ran.Seconds()
	rep.ScansPerSecond = float64(s.scans.Load()) / span.Seconds()
	rep.Scans = int(s.scans.Load())
	rep.ClientReads, rep.ClientWrites, rep.RulesReads = used.Reads, used.Writes, int(s.rulesReads.Load())
	rep.FunctionReads, rep.FunctionWrites = fnUsed.Reads, fnUsed.Writes
	if rep.Scans > 0 {
		rep.ReadsPerScan = float64(used.Reads+rep.RulesReads+fnUsed.Reads) / float64(rep.Scans)
		rep.WritesPerScan = float64(used.Writes+fnUsed.Writes) / float64(rep.Scans)
	}
	rep.Verdicts, rep.ConflictsByGate, rep.Errors = s.tally, s.conflictsBy, s.errors
	slices.Sort(s.onlineTook)
	slices.Sort(s.offlineTook)
	rep.OnlineScans = len(s.onlineTook)
	rep.ScanP50ms, rep.ScanP99ms = ms(report.Quantile(s.onlineTook, 0.5)), ms(report.Quantile(s.onlineTook, 0.99))
	if n := len(s.onlineTook); n > 0 {
		rep.ScanMaxMs = ms(s.onlineTook[n-1])
	}
	rep.OfflineVerdictP99ms = ms(report.Quantile(s.offlineTook, 0.99))
	slices.Sort(s.refusedTook)
	rep.RefusedScans, rep.RefusedP99ms = len(s.refusedTook), ms(report.Quantile(s.refusedTook, 0.99))
	rep.Probe = prober.stats(start, start.Add(ran))
	rep.Uploads = s.uploads
	rep.SlowScansBy5s = map[int]int{}
	for _, at := range s.slowAt {
		rep.SlowScansBy5s[int(at/(5*time.Second))*5]++
	}
	rep.judge()
	return rep, nil
}

// grantScanners signs n scanners up, gives them scanner: true as
// `firelock scanners grant` does, and signs them in again for a token
// with the claim.
func grantScanners(ctx context.Context, n int) ([]account, error) {
	accts, err := signUp(ctx, "door-scanner", n, 8)
	if err != nil {
		return nil, err
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		return nil, err
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		return nil, err
	}
	for i, a := range accts {
		if _, err := claims.Grant(ctx, ac, a.email, claims.Scanner); err != nil {
			return nil, err
		}
		tok, _, err := emulators.SignIn(a.email, "surge-password")
		if err != nil {
			return nil, err
		}
		accts[i].token = tok
	}
	return accts, nil
}

// bookAll books every seat of the hall, SeatsPerBooking a buyer, through
// BookSeats over HTTP (the tickets are issued in the bookings' commits).
func bookAll(ctx context.Context, base string, accts []account, cfg doorConfig) error {
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(accts))
	var wg sync.WaitGroup
	for i, a := range accts {
		var seats []string
		for n := i * cfg.SeatsPerBooking; n < min((i+1)*cfg.SeatsPerBooking, cfg.Tickets); n++ {
			seats = append(seats, fmt.Sprintf("%s%d", rowLabel(n/20), n%20+1))
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body, _ := json.Marshal(map[string]any{"screeningId": doorScreening, "seats": seats, "requestId": fmt.Sprintf("door-%d", i)})
			for try := 0; ; try++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/BookSeats", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+a.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
					return
				case (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusConflict) && try < 10:
					time.Sleep(time.Duration(try+1) * 100 * time.Millisecond) // seat_busy or shed: the same request again
				default:
					errs <- fmt.Errorf("BookSeats %v: HTTP %d %s", seats, resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runGate scans the gate's arrivals one at a time, in order, as a person
// with a phone does; offline, it queues its batches and uploads them when
// it is back.
func (s *doorSim) runGate(ctx context.Context, g *doorGate, overwrite bool) {
	var flush sync.WaitGroup
	flushed := false
	flushNow := func() {
		if flushed || g.offTo.IsZero() {
			return
		}
		flushed = true
		flush.Go(func() { s.upload(g) })
	}
	for _, a := range g.arrivals {
		if !g.offTo.IsZero() && !flushed && a.at.After(g.offTo) {
			sleepUntil(ctx, g.offTo)
			flushNow()
		}
		sleepUntil(ctx, a.at)
		if ctx.Err() != nil {
			return
		}
		s.scan(g, a, overwrite)
	}
	if !g.offTo.IsZero() && !flushed {
		sleepUntil(ctx, g.offTo)
		flushNow()
	}
	flush.Wait()
}

func sleepUntil(ctx context.Context, t time.Time) {
	if d := time.Until(t); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

func newScanNonce() string { return gonanoid.Must(22) }

// scan is one scan at gate g, as scan.html makes it.
func (s *doorSim) scan(g *doorGate, a arrival, overwrite bool) {
	s.scans.Add(1)
	t0 := time.Now()
	code := s.codes[a.ticket]
	p, err := s.keys.Verify(code)
	if err != nil || p.ScreeningID != doorScreening {
		s.fail("gate %s: the code of ticket %s does not verify: %v", g.name, s.ticketIDs[a.ticket], err)
		return
	}
	nonce := newScanNonce()
	g.mu.Lock()
	seen := g.admitted[p.TicketID]
	if !seen {
		g.admitted[p.TicketID] = true // remembered at once, as the app does
	}
	g.mu.Unlock()
	if g.offline(t0) {
		took := time.Since(t0)
		s.mu.Lock()
		s.offlineTook = append(s.offlineTook, took)
		s.mu.Unlock()
		if seen {
			s.note("already_in (offline, this gate)")
			return // the app records it when back online; it is no entry
		}
		s.note("admitted (offline)")
		s.letIn(entry{ticketID: p.TicketID, gate: g.name, nonce: nonce, offline: true})
		g.mu.Lock()
		g.queue = append(g.queue, queued{p: p, nonce: nonce, scannedAt: t0})
		g.mu.Unlock()
		return
	}
	if seen {
		s.note("already_in (this gate)")
		s.recordRefusal(g, p.TicketID, nonce, t0, "already_in", nil)
		s.tookOnline(time.Since(t0))
		return
	}
	if s.cfg.Online == onlineCheckIn && !overwrite {
		s.scanByCheckIn(g, code, p.TicketID, nonce, t0)
		return
	}
	client, ctx := g.fs, g.authCtx
	if overwrite { // the planted bug: no rules, no precondition
		client, ctx = s.admin, context.Background()
	}
	err = s.entryBatch(ctx, client, g, p, nonce, t0, false)
	switch {
	case err == nil:
		s.tookOnline(time.Since(t0))
		s.note("admitted")
		s.letIn(entry{ticketID: p.TicketID, gate: g.name, nonce: nonce})
	case status.Code(err) == codes.PermissionDenied:
		// Refused: the ticket is in. Where and when, for the verdict.
		held, herr := g.fs.Collection("checkins").Doc(p.TicketID).Get(g.authCtx)
		s.tookOnline(time.Since(t0))
		s.mu.Lock()
		s.refusedTook = append(s.refusedTook, time.Since(t0))
		s.mu.Unlock()
		s.note("already_in")
		if herr != nil {
			s.fail("gate %s: read the check-in of %s after a refusal: %v", g.name, p.TicketID, herr)
			return
		}
		s.recordRefusal(g, p.TicketID, nonce, t0, "already_in", held)
	default:
		s.fail("gate %s: the entry of %s: %v", g.name, p.TicketID, err)
	}
}

// scanByCheckIn is an online scan as scan.html makes it: CheckIn over HTTP,
// which records the scan itself.
func (s *doorSim) scanByCheckIn(g *doorGate, code, ticketID, nonce string, t0 time.Time) {
	body, _ := json.Marshal(map[string]any{"screeningId": doorScreening, "gate": g.name, "code": code, "nonce": nonce,
		"scannedAt": t0.UTC().Format(time.RFC3339Nano)})
	var res struct {
		Result string `json:"result"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	for try := 0; ; try++ {
		req, _ := http.NewRequest(http.MethodPost, s.checkIn, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+g.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.fail("gate %s: CheckIn of %s: %v", g.name, ticketID, err)
			return
		}
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		switch {
		case err != nil:
			s.fail("gate %s: CheckIn of %s: HTTP %d, not JSON: %v", g.name, ticketID, resp.StatusCode, err)
			return
		case resp.StatusCode == http.StatusOK && res.Result == "admitted":
			s.tookOnline(time.Since(t0))
			s.note("admitted")
			s.letIn(entry{ticketID: ticketID, gate: g.name, nonce: nonce})
			return
		case resp.StatusCode == http.StatusConflict && res.Error.Code == "already_in":
			took := time.Since(t0)
			s.tookOnline(took)
			s.mu.Lock()
			s.refusedTook = append(s.refusedTook, took)
			s.mu.Unlock()
			s.note("already_in")
			return
		case resp.StatusCode == http.StatusServiceUnavailable && try < 5: // the same nonce again, as the app retries
			time.Sleep(100 * time.Millisecond)
		default:
			s.fail("gate %s: CheckIn of %s: HTTP %d %s", g.name, ticketID, resp.StatusCode, res.Error.Code)
			return
		}
	}
}

func (s *doorSim) tookOnline(d time.Duration) {
	s.mu.Lock()
	s.onlineTook = append(s.onlineTook, d)
	if d > s.cfg.ScanP99 {
		s.slowAt = append(s.slowAt, time.Since(s.start)-d)
	}
	s.mu.Unlock()
}

func (s *doorSim) letIn(e entry) {
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

// entryBatch writes a first entry: the check-in and its scan, one batch
// (docs/door.md, "The scanner app's own writes").
func (s *doorSim) entryBatch(ctx context.Context, client *firestore.Client, g *doorGate, p ticket.Payload, nonce string, scannedAt time.Time, offline bool) error {
	b := client.Batch()
	b.Set(client.Collection("checkins").Doc(p.TicketID), map[string]any{
		"screeningId": p.ScreeningID, "version": p.Version, "state": "in", "seq": 1, "gate": g.name,
		"at": firestore.ServerTimestamp, "scannedAt": scannedAt, "by": g.uid, "nonce": nonce, "offline": offline,
	})
	b.Set(client.Collection(booking.Screenings).Doc(p.ScreeningID).Collection("scans").Doc(nonce), map[string]any{
		"ticketId": p.TicketID, "gate": g.name, "by": g.uid, "direction": "in", "result": "admitted",
		"at": firestore.ServerTimestamp, "scannedAt": scannedAt, "offline": offline,
	})
	s.rulesReads.Add(rulesReadsEntry)
	_, err := b.Commit(ctx)
	return err
}

// recordRefusal writes the scan record of a refusal alone (with the
// entry's gate and time when known).
func (s *doorSim) recordRefusal(g *doorGate, ticketID, nonce string, scannedAt time.Time, result string, held *firestore.DocumentSnapshot) {
	rec := map[string]any{"ticketId": ticketID, "gate": g.name, "by": g.uid, "direction": "in", "result": result,
		"at": firestore.ServerTimestamp, "scannedAt": scannedAt, "offline": result == "conflict"}
	if held != nil && held.Exists() {
		if gate, ok := held.Data()["gate"].(string); ok {
			rec["entryGate"] = gate
		}
		if at, ok := held.Data()["at"].(time.Time); ok {
			rec["entryAt"] = at
		}
	}
	s.rulesReads.Add(rulesReadsRefusal)
	if _, err := g.fs.Collection(booking.Screenings).Doc(doorScreening).Collection("scans").Doc(nonce).Create(g.authCtx, rec); err != nil {
		s.fail("gate %s: record the %s scan of %s: %v", g.name, result, ticketID, err)
	}
}

// upload sends a gate's queued batches when it is back online, in order;
// an entry the rules refuse is settled as scan.html settles it: its own
// entry (landed before) is done, another's makes it a conflict.
func (s *doorSim) upload(g *doorGate) {
	g.mu.Lock()
	q := g.queue
	g.queue = nil
	g.mu.Unlock()
	from := time.Since(s.start)
	defer func() {
		s.mu.Lock()
		s.uploads = append(s.uploads, uploadSpan{g.name, len(q), from.Seconds(), time.Since(s.start).Seconds()})
		s.mu.Unlock()
	}()
	for _, w := range q {
		err := s.entryBatch(g.authCtx, g.fs, g, w.p, w.nonce, w.scannedAt, true)
		if err == nil {
			continue
		}
		if status.Code(err) != codes.PermissionDenied {
			s.fail("gate %s: upload of %s: %v", g.name, w.p.TicketID, err)
			continue
		}
		held, herr := g.fs.Collection("checkins").Doc(w.p.TicketID).Get(g.authCtx)
		if herr != nil {
			s.fail("gate %s: read the check-in of %s after a refused upload: %v", g.name, w.p.TicketID, herr)
			continue
		}
		if n, _ := held.Data()["nonce"].(string); n == w.nonce {
			continue
		}
		s.mu.Lock()
		s.conflictsBy[g.name]++
		s.mu.Unlock()
		if s.cfg.Plant == plantDropConflicts {
			continue // the planted bug: a refused entry forgotten
		}
		s.recordRefusal(g, w.p.TicketID, w.nonce, w.scannedAt, "conflict", held)
	}
}

// uploadSpan is when a gate back online sent its queue, from the start.
type uploadSpan struct {
	Gate    string  `json:"gate"`
	Entries int     `json:"entries"`
	From    float64 `json:"fromSeconds"`
	To      float64 `json:"toSeconds"`
}

// DoorReport is what a door surge found.
type DoorReport struct {
	Config      doorConfig `json:"config"`
	Project     string     `json:"project"`
	Seed        uint64     `json:"seed"`
	Arrivals    int        `json:"arrivals"`
	Screenshots int        `json:"screenshots"`
	SpanSeconds float64    `json:"spanSeconds"`
	RunSeconds  float64    `json:"runSeconds"`

	// What Firestore holds.
	CheckIns      int `json:"checkIns"`      // checkins of the screening's tickets
	NotIn         int `json:"notIn"`         // tickets presented but without a check-in
	DoubleEntries int `json:"doubleEntries"` // admitted scan records beyond one per ticket, and admissions at online gates that are not the ticket's entry
	// Offline double entries: offline admissions that are not the
	// ticket's entry, each of which must be recorded as a conflict.
	OfflineDoubles    int            `json:"offlineDoubles"`
	ConflictsRecorded int            `json:"conflictsRecorded"`
	ConflictsMissed   int            `json:"conflictsMissed"`
	ConflictsByGate   map[string]int `json:"conflictsByGate"` // as the gates reported them
	ScanRecords       int            `json:"scanRecords"`
	RecordsByResult   map[string]int `json:"recordsByResult"`
	Examples          []string       `json:"examples,omitempty"`

	// Speed and cost.
	Scans          int     `json:"scans"`
	ScansPerSecond float64 `json:"scansPerSecond"`
	OnlineScans    int     `json:"onlineScans"`
	ScanP50ms      float64 `json:"scanP50Ms"`
	ScanP99ms      float64 `json:"scanP99Ms"`
	ScanMaxMs      float64 `json:"scanMaxMs"`
	// SlowScansBy5s: the online scans slower than the goal, by the 5 s
	// window (seconds from the start) they began in; Uploads: when the
	// gates back online sent their queues.
	SlowScansBy5s       map[int]int    `json:"slowScansBy5s"`
	Uploads             []uploadSpan   `json:"uploads"`
	RefusedScans        int            `json:"refusedScans"` // online scans refused, the ticket in (through the rules: a commit and a read)
	RefusedP99ms        float64        `json:"refusedP99Ms"`
	OfflineVerdictP99ms float64        `json:"offlineVerdictP99Ms"`
	ClientReads         int            `json:"clientReads"`   // documents the gates read (rpcstats)
	ClientWrites        int            `json:"clientWrites"`  // writes of the gates' commits that landed
	RulesReads          int            `json:"rulesReads"`    // the rules' get()/getAfter() of the requests sent
	FunctionReads       int            `json:"functionReads"` // CheckIn's reads and writes (-door-online checkin)
	FunctionWrites      int            `json:"functionWrites"`
	ReadsPerScan        float64        `json:"readsPerScan"`
	WritesPerScan       float64        `json:"writesPerScan"`
	Verdicts            map[string]int `json:"verdicts"`
	// Probe: the emulator's own commit latency through the gates' scans
	// (one write at a time, outside the rules), a floor under theirs.
	Probe  probeStats `json:"probe"`
	Errors []string   `json:"errors,omitempty"`

	Failures []failure `json:"failures"`
}

// audit reads what Firestore holds of the door and compares it with who
// the gates let in.
func (s *doorSim) audit(ctx context.Context) (*DoorReport, error) {
	r := &DoorReport{RecordsByResult: map[string]int{}}
	checkins, err := s.admin.Collection("checkins").Where("screeningId", "==", doorScreening).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	scans, err := s.admin.Collection(booking.Screenings).Doc(doorScreening).Collection("scans").Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	example := func(format string, args ...any) {
		if len(r.Examples) < 10 {
			r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
		}
	}
	entryNonce := map[string]string{} // ticket: the nonce of its check-in
	for _, c := range checkins {
		n, _ := c.Data()["nonce"].(string)
		entryNonce[c.Ref.ID] = n
	}
	r.CheckIns = len(checkins)
	admittedRecs := map[string]int{}
	result := map[string]string{} // nonce: the result recorded
	for _, d := range scans {
		res, _ := d.Data()["result"].(string)
		tid, _ := d.Data()["ticketId"].(string)
		result[d.Ref.ID] = res
		r.RecordsByResult[res]++
		if res == "admitted" {
			admittedRecs[tid]++
		}
	}
	r.ScanRecords = len(scans)
	for tid, n := range admittedRecs {
		if n > 1 {
			r.DoubleEntries += n - 1
			example("ticket %s: %d admitted scans recorded", tid, n)
		}
	}
	for _, tid := range s.ticketIDs {
		if _, ok := entryNonce[tid]; !ok {
			r.NotIn++
			example("ticket %s: presented, and not in", tid)
		}
	}
	for _, e := range s.entries {
		if entryNonce[e.ticketID] == e.nonce {
			if result[e.nonce] != "admitted" {
				example("ticket %s: its entry at %s has no admitted scan record (%q)", e.ticketID, e.gate, result[e.nonce])
				r.DoubleEntries++
			}
			continue
		}
		if !e.offline {
			r.DoubleEntries++
			example("ticket %s: let in online at %s, but its entry is another's", e.ticketID, e.gate)
			continue
		}
		r.OfflineDoubles++
		if result[e.nonce] == "conflict" {
			r.ConflictsRecorded++
		} else {
			r.ConflictsMissed++
			example("ticket %s: let in offline at %s, another entry holds it, and the scan is recorded %q, not conflict", e.ticketID, e.gate, result[e.nonce])
		}
	}
	return r, nil
}

func (r *DoorReport) judge() {
	add := func(kind, format string, args ...any) {
		r.Failures = append(r.Failures, failure{kind, fmt.Sprintf(format, args...)})
	}
	if r.DoubleEntries > 0 {
		add("correctness", "%d double entries through online gates", r.DoubleEntries)
	}
	if r.ConflictsMissed > 0 {
		add("correctness", "%d of %d offline double entries not reported as conflicts", r.ConflictsMissed, r.OfflineDoubles)
	}
	if r.NotIn > 0 {
		add("correctness", "%d tickets presented are not in", r.NotIn)
	}
	if len(r.Errors) > 0 {
		add("robustness", "%d scans failed (%s)", len(r.Errors), r.Errors[0])
	}
	if goal := ms(r.Config.ScanP99); r.ScanP99ms > goal {
		add("goal", "online scan-to-verdict p99 %.0f ms, goal <= %.0f ms", r.ScanP99ms, goal)
	}
}

func (r *DoorReport) print(w io.Writer) {
	p := linesTo(w)
	ok := okOrFail
	c := r.Config
	p("\ndoor surge: %d tickets, %d gates (%d offline for %s), %d arrivals (%d screenshots within %s) over %.0f s; ran %.1f s; online gates scan through %s",
		c.Tickets, c.Gates, c.OfflineGates, c.OfflineFor, r.Arrivals, r.Screenshots, c.ScreenshotWithin, r.SpanSeconds, r.RunSeconds, c.Online)
	if c.Plant != "" {
		p("  PLANTED BUG: %s", c.Plant)
	}
	p("\ncorrectness  (checked on what Firestore holds)")
	p("  tickets in  %d of %d  (presented and not in: %d)  %s", r.CheckIns, c.Tickets, r.NotIn, ok(r.NotIn == 0))
	p("  double entries through online gates  %d  (goal 0)  %s", r.DoubleEntries, ok(r.DoubleEntries == 0))
	p("  offline double entries  %d: reported as conflicts %d, missed %d  %s", r.OfflineDoubles, r.ConflictsRecorded, r.ConflictsMissed, ok(r.ConflictsMissed == 0))
	p("  conflicts by gate (as the gates reported them)  %v", r.ConflictsByGate)
	p("  scan records  %d  %v", r.ScanRecords, r.RecordsByResult)
	for _, e := range r.Examples {
		p("  ! %s", e)
	}
	p("\nspeed and cost")
	p("  scans  %d  (%.1f a second over the span)", r.Scans, r.ScansPerSecond)
	p("  online scan to verdict  p50 %.0f ms  p99 %.0f ms  max %.0f ms  over %d scans  (goal p99 <= %.0f ms)  %s",
		r.ScanP50ms, r.ScanP99ms, r.ScanMaxMs, r.OnlineScans, ms(c.ScanP99), ok(r.ScanP99ms <= ms(c.ScanP99)))
	if len(r.SlowScansBy5s) > 0 {
		var ws []int
		for w := range r.SlowScansBy5s {
			ws = append(ws, w)
		}
		slices.Sort(ws)
		var parts []string
		for _, w := range ws {
			parts = append(parts, fmt.Sprintf("T+%d-%ds: %d", w, w+5, r.SlowScansBy5s[w]))
		}
		p("  scans over %.0f ms, by when they began  %s", ms(c.ScanP99), strings.Join(parts, ", "))
	}
	for _, u := range r.Uploads {
		p("  gate %s back online uploaded %d entries from T+%.1fs to T+%.1fs", u.Gate, u.Entries, u.From, u.To)
	}
	p("  of which refused, the ticket in (rules: a commit, then the entry read)  %d  p99 %.0f ms", r.RefusedScans, r.RefusedP99ms)
	p("  the emulator's own commit (probe, no rules)  p50 %.0f ms  p99 %.0f ms  max %.0f ms  over %d commits",
		r.Probe.BurstP50ms, r.Probe.BurstP99ms, r.Probe.MaxMs, r.Probe.Samples)
	p("  offline verdict (signature and local state, Go)  p99 %.2f ms", r.OfflineVerdictP99ms)
	p("  per scan  %.2f reads (%d by the gates + %d by the rules + %d by CheckIn)  %.2f writes (%d by the gates + %d by CheckIn)",
		r.ReadsPerScan, r.ClientReads, r.RulesReads, r.FunctionReads, r.WritesPerScan, r.ClientWrites, r.FunctionWrites)
	p("  verdicts  %v", r.Verdicts)
	for _, e := range r.Errors {
		p("  ! %s", e)
	}
	printOutcome(p, r.Failures, "\nall checks and goals met", "\nFAILED:", "  %s: %s")
}
