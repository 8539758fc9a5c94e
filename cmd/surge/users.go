package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/report"
	"github.com/firelock/firelock/sale"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// account is a user signed up in the Auth emulator.
type account struct {
	email, uid, token string
}

// signUp signs n users up in the Auth emulator (or in, if they exist),
// at most conc at once.
func signUp(ctx context.Context, prefix string, n, conc int) ([]account, error) {
	accts := make([]account, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			email := fmt.Sprintf("%s-%06d@example.com", prefix, i)
			var err error
			for try := 0; try < 3 && ctx.Err() == nil; try++ {
				var tok, uid string
				if tok, uid, err = emulators.SignIn(email, "surge-password"); err == nil {
					accts[i] = account{email: email, uid: uid, token: tok}
					return
				}
				time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("sign up: %w", err)
	}
	return accts, ctx.Err()
}

// listenerPool is the Firestore clients the users listen with: a few gRPC
// connections without credentials of their own, each user's calls carrying
// its ID token (so the rules apply, as to the app), and an rpcstats
// interceptor counting what the listeners receive on the wire.
type listenerPool struct {
	clients []*firestore.Client
	conns   []*grpc.ClientConn
	stats   *rpcstats.Stats
}

func newListenerPool(ctx context.Context, emulatorHost, project string, n int) (*listenerPool, error) {
	p := &listenerPool{stats: &rpcstats.Stats{}}
	for range n {
		conn, err := grpc.NewClient(emulatorHost,
			append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, p.stats.DialOptions()...)...)
		if err != nil {
			p.close()
			return nil, err
		}
		c, err := firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
		if err != nil {
			conn.Close()
			p.close()
			return nil, err
		}
		p.conns, p.clients = append(p.conns, conn), append(p.clients, c)
	}
	return p, nil
}

func (p *listenerPool) close() {
	for _, c := range p.clients {
		c.Close()
	}
	for _, c := range p.conns {
		c.Close()
	}
}

// Phases of a user, for whom its listener reads count.
const (
	phaseNone int32 = iota
	phaseWaiting
	phaseAdmitted
	phaseGone
)

// user is one simulated fan.
type user struct {
	i      int
	bot    bool // a scripted joiner (-bots): no App Check token
	acct   account
	joinAt time.Time
	fs     *firestore.Client
	rng    *rand.Rand

	phase atomic.Int32
	// confirming: a confirmation was sent; it ends the pass (done) when it
	// commits, and the rules may then end the seat map's listener.
	confirming    atomic.Bool
	passUntil     time.Time
	waitingReads  atomic.Int64 // listener reads (documents delivered) while waiting
	admittedReads atomic.Int64 // and while admitted
	placeGets     atomic.Int64 // gets of its place (CONTRACT §14: no listener while far back)
	// When the phases began and ended (local clock: the user's own view).
	waitingFrom, admittedFrom, goneAt time.Time
	outcome                           string
}

func (u *user) setPhase(p int32) {
	now := time.Now()
	switch p {
	case phaseWaiting:
		u.waitingFrom = now
	case phaseAdmitted:
		u.admittedFrom = now
	case phaseGone:
		u.goneAt = now
	}
	u.phase.Store(p)
}

func (u *user) countReads(n int) {
	switch u.phase.Load() {
	case phaseWaiting:
		u.waitingReads.Add(int64(n))
	case phaseAdmitted:
		u.admittedReads.Add(int64(n))
	}
}

// sim is one surge's users and what they were told.
type sim struct {
	cfg       config
	appCheck  *appCheckRun // nil: App Check off
	screening string
	opensAt   time.Time
	hall      []string
	base      string
	http      *http.Client
	stop      chan struct{}   // closed: the surge is over, nobody starts anything new
	callCtx   context.Context // calls in flight when it ends get a grace before this ends
	wg        sync.WaitGroup

	joined, waiting, inShop, holds, seatsBooked atomic.Int64
	seatMapCut                                  atomic.Int64 // seat-map listeners the rules ended after the pass
	// Seat-map listeners closed while nothing was free and SaleState said
	// no seat left (seatMapIdle), and opened again (issue #51).
	seatMapPauses, seatMapResumes atomic.Int64
	// confirmExpired: ConfirmHold answered 410 hold_expired though it was
	// sent with at least confirmEntitled of the hold left (issue #31).
	confirmExpired atomic.Int64
	payments       *payRun // -pay: the shoppers pay instead of confirming

	noSeats noSeatsLog // -best: the no_seats_together answers (best.go)

	// The wait (wait.go): the SaleState polls, the places' gets, and the
	// users' listeners open.
	states    stateCalls
	edge      *edgeCache // -cdn: the CDN stand-in in front of SaleState; nil: none
	placeGets atomic.Int64
	gauge     *listenerGauge

	// Every answer ("JoinQueue 201", "HoldSeats 409 seat_held", ...), and
	// the first few transport and listener errors.
	*recorder

	mu      sync.Mutex
	records clientRecords
}

func (s *sim) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// sleep waits d, or until the surge ends (false).
func (s *sim) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop:
		return false
	}
}

// answer is a function's answer.
type answer struct {
	status int
	body   map[string]any
	retry  time.Duration // Retry-After
}

func (a answer) code() string {
	if e, ok := a.body["error"].(map[string]any); ok {
		c, _ := e["code"].(string)
		return c
	}
	return ""
}

// seats are the seats an answer names: a hold's, or a conflict's.
func (a answer) seats() []string {
	v, ok := a.body["seats"]
	if e, isErr := a.body["error"].(map[string]any); isErr {
		v, ok = e["seats"]
	}
	var out []string
	if list, _ := v.([]any); ok {
		for _, s := range list {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
	}
	return out
}

func (a answer) str(key string) string { v, _ := a.body[key].(string); return v }

// call calls fn as the user with token (the same body each time: a retry
// of the same request). A 503 (the function shed the call) is tried again
// after its Retry-After until the tenth 503 (the front end's 429s, before
// or between them, are not counted). A 429 (the function's front
// end found no slot free within its wait) is tried again after its
// Retry-After, with jitter, for as long as joinPatience lasts: the person
// keeps the page open and tries again (the app itself tries a 429 three
// times, then says "the box office is not answering; try again in a
// moment", and the person presses again).
func (s *sim) call(fn string, u *user, body any) (answer, error) {
	b, _ := json.Marshal(body)
	start := time.Now()
	shed := 0 // the function's own 503s: the front end's 429s do not spend these tries
	for {
		a, err := s.callOnce(fn, u, b)
		if err != nil {
			s.note(fn + " error")
			return a, err
		}
		key := fmt.Sprintf("%s %d", fn, a.status)
		if c := a.code(); c != "" {
			key += " " + c
		}
		s.note(key)
		if a.status == http.StatusServiceUnavailable {
			shed++
		}
		switch {
		case a.status == http.StatusServiceUnavailable && shed < 10:
		case a.status == http.StatusTooManyRequests && time.Since(start) < joinPatience:
		default:
			return a, nil
		}
		wait := max(a.retry, 100*time.Millisecond)
		if !s.sleep(wait + rand.N(wait)) {
			return a, nil
		}
	}
}

// joinPatience is how long a user's call keeps trying after 429s.
const joinPatience = 3 * time.Minute

func (s *sim) callOnce(fn string, u *user, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(s.callCtx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/"+fn, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+u.acct.token)
	if s.appCheck != nil && !u.bot { // the real app proves itself; a script cannot
		token, err := s.appCheck.token()
		if err != nil {
			return answer{}, err
		}
		req.Header.Set(functions.AppCheckHeader, token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, body: map[string]any{}}
	if sec, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		a.retry = time.Duration(sec) * time.Second
	}
	if a.status == http.StatusTooManyRequests {
		return a, nil // a front end's answer: its body is not the functions' JSON
	}
	if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil {
		return a, fmt.Errorf("%s: HTTP %d with a body that is not JSON: %w", fn, resp.StatusCode, err)
	}
	return a, nil
}

// run is one user's life: join at its time, listen while waiting, and,
// once admitted, shop.
func (s *sim) run(ctx context.Context, u *user) {
	defer s.wg.Done()
	defer u.setPhase(phaseGone)
	if !s.sleep(time.Until(u.joinAt)) {
		u.outcome = "never joined"
		return
	}
	a, err := s.call("JoinQueue", u, map[string]any{"screeningId": s.screening})
	switch {
	case err != nil:
		u.outcome = "join failed"
		s.fail("user %d: JoinQueue: %v", u.i, err)
		return
	case a.status != http.StatusCreated && a.status != http.StatusOK:
		u.outcome = "join " + a.code()
		return
	}
	s.joined.Add(1)

	// The app waits as the user: polling SaleState, its place read and,
	// near the front, listened to (wait.go); with -listen-wait, listening
	// to the sale and to its place, as before issue #51.
	lctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+u.acct.token))
	var listeners sync.WaitGroup
	defer func() { cancel(); listeners.Wait() }()
	u.setPhase(phaseWaiting)
	s.waiting.Add(1)
	stillWaiting := true
	defer func() {
		if stillWaiting {
			s.waiting.Add(-1)
		}
	}()
	place := &latest[*firestore.DocumentSnapshot]{changed: make(chan struct{}, 1)}
	wait := s.waitPolling
	if s.cfg.ListenWait {
		wait = s.waitListening
	}
	passUntil, outcome := wait(lctx, u, a.str("queueId"), place, &listeners)
	if passUntil.IsZero() {
		u.outcome = outcome
		return
	}
	stillWaiting = false
	s.waiting.Add(-1)
	u.passUntil = passUntil
	u.setPhase(phaseAdmitted)
	s.inShop.Add(1)
	defer s.inShop.Add(-1)
	u.outcome = s.shop(lctx, u, passUntil)
}

// waitListening is the wait before issue #51 (-listen-wait): listeners on
// sales/{id} and on the place from the join on.
func (s *sim) waitListening(ctx context.Context, u *user, queueID string, place *latest[*firestore.DocumentSnapshot], listeners *sync.WaitGroup) (time.Time, string) {
	listeners.Go(func() { s.listenDoc(ctx, u, u.fs.Collection(sale.Sales).Doc(s.screening), nil, "sale") })
	listeners.Go(func() { s.listenDoc(ctx, u, u.fs.Collection(sale.Queue).Doc(queueID), place, "place") })
	for {
		if v := placeOf(place.get()); v.status != "" {
			switch {
			case v.status == sale.StatusAdmitted && !v.passUntil.IsZero():
				return v.passUntil, ""
			case v.status == sale.StatusDone, v.status == sale.StatusExpired:
				return time.Time{}, "pass " + v.status + " unseen"
			}
		}
		select {
		case <-place.changed:
		case <-s.stop:
			return time.Time{}, "still waiting"
		}
	}
}

// latest keeps the newest value a listener delivered and signals changes.
type latest[T any] struct {
	mu      sync.Mutex
	v       T
	changed chan struct{}
}

func (l *latest[T]) set(v T) {
	l.mu.Lock()
	l.v = v
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

func (l *latest[T]) get() T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v
}

// listenDoc listens to one document as u until ctx ends; each delivery of
// the document is one read. to, if set, gets every snapshot. kind names
// the listener in the gauge.
func (s *sim) listenDoc(ctx context.Context, u *user, ref *firestore.DocumentRef, to *latest[*firestore.DocumentSnapshot], kind string) {
	defer s.gauge.opened(kind)()
	it := ref.Snapshots(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err != nil {
			if ctx.Err() == nil && status.Code(err) != codes.Canceled {
				s.fail("user %d: listening to %s: %v", u.i, ref.Path, err)
			}
			return
		}
		if snap.Exists() {
			u.countReads(1)
		}
		if to != nil {
			to.set(snap)
		}
	}
}

// seatMap is an admitted user's view of the seat map, kept as the app
// keeps it during a sale: by a listener on the one document
// seatMaps/{id} (CONTRACT §7a; rules: only with a live pass), one read a
// version. It names no hold's end: the publisher writes a lapsed hold free.
type seatMap struct {
	mu        sync.Mutex
	seats     map[string]report.Seat
	err       error
	ready     chan struct{} // closed on the first snapshot or an error
	readyOnce sync.Once
	changed   chan struct{}
}

// idle is salestate.ts' seatMapIdle: the map shows no seat of the hall
// free, and the sale's public state (st, polled) is open or paused (an
// operator's pause: live passes go on) with no seat left. The app then
// stops listening to the map (issue #51).
func (m *seatMap) idle(hall []string, st *publicState) bool {
	if st == nil || (st.State != sale.StateOpen && st.State != sale.StatePaused) || st.SeatsLeft != 0 || len(hall) == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range hall {
		if _, taken := m.seats[id]; !taken {
			return false
		}
	}
	return true
}

// watchSeats keeps an admitted user's map as the app does (main.ts'
// syncListeners): listening, until the map shows nothing free while the
// SaleState polled (state) says no seat is left; then not listening, the
// last map kept, until a poll shows a seat left or another state, and
// listening again (one read).
func (s *sim) watchSeats(ctx context.Context, u *user, m *seatMap, state *latest[*publicState]) {
	for resumed := false; ; resumed = true {
		if resumed {
			s.seatMapResumes.Add(1)
		}
		lctx, stop := context.WithCancel(ctx)
		paused := atomic.Bool{}
		pauseIfIdle := func() {
			if m.idle(s.hall, state.get()) && !paused.Swap(true) {
				stop()
			}
		}
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			s.listenSeats(lctx, u, m, pauseIfIdle)
		}()
	listening:
		for {
			select {
			case <-ended:
				break listening
			case <-state.changed:
				pauseIfIdle()
			}
		}
		stop()
		if ctx.Err() != nil || !paused.Load() {
			return // the pass or the run ended, or the listener failed
		}
		s.seatMapPauses.Add(1)
		for m.idle(s.hall, state.get()) {
			select {
			case <-state.changed:
			case <-ctx.Done():
				return
			}
		}
	}
}

// pollAdmitted polls SaleState for an admitted user, as the app polls it
// for as long as the page is open (every refreshSeconds once admitted:
// salestate.ts' waitOf), into to.
func (s *sim) pollAdmitted(ctx context.Context, to *latest[*publicState]) {
	etag := ""
	for ctx.Err() == nil {
		st, tag := s.pollState(ctx, etag)
		etag = tag
		if st != nil {
			to.set(st)
		}
		t := time.NewTimer(s.nextPoll(placeView{status: sale.StatusAdmitted}, to.get()))
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-s.stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// listenSeats listens to the seat map into m until ctx ends or the
// listener fails; after each version, it calls after (nil: nothing).
func (s *sim) listenSeats(ctx context.Context, u *user, m *seatMap, after func()) {
	defer s.gauge.opened("seat map")()
	it := u.fs.Collection(sale.SeatMaps).Doc(s.screening).Snapshots(ctx)
	defer it.Stop()
	first := true
	for {
		snap, err := it.Next()
		if err != nil {
			if ctx.Err() != nil && !first {
				return // closed: the pass or the run ended, or the map paused (watchSeats)
			}
			switch {
			case ctx.Err() != nil || status.Code(err) == codes.Canceled:
			case status.Code(err) == codes.PermissionDenied && (u.confirming.Load() || !time.Now().Before(u.passUntil)):
				// The pass has ended (done, or passUntil): the emulator
				// re-judges a listener when it delivers a change, and ends it.
				s.seatMapCut.Add(1)
			default:
				s.fail("user %d: listening to the seat map, %.1f s after its admission (pass until %s), first snapshot %v: %v",
					u.i, time.Since(u.admittedFrom).Seconds(), u.passUntil.Format("15:04:05.000"), !first, err)
			}
			m.mu.Lock()
			m.err = err
			m.mu.Unlock()
			m.readyOnce.Do(func() { close(m.ready) })
			return
		}
		if snap.Exists() {
			u.countReads(1)
		}
		var doc sale.SeatMap
		if snap.Exists() {
			if err := snap.DataTo(&doc); err != nil {
				s.fail("user %d: seat map: %v", u.i, err)
			}
		}
		m.mu.Lock()
		clear(m.seats)
		for i, ch := range []byte(doc.Seats) {
			if i >= len(s.hall) {
				break
			}
			switch ch {
			case sale.SeatBooked:
				m.seats[s.hall[i]] = report.Seat{Status: booking.StatusBooked}
			case sale.SeatHeld:
				m.seats[s.hall[i]] = report.Seat{Status: booking.StatusHeld, HeldUntil: farFuture}
			}
		}
		m.mu.Unlock()
		first = false
		m.readyOnce.Do(func() { close(m.ready) })
		select {
		case m.changed <- struct{}{}:
		default:
		}
		if after != nil {
			after()
		}
	}
}

// farFuture stands for a held seat's end, which the one-document map does
// not carry: it shows the seat free once the hold has ended.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// confirmEntitled: a ConfirmHold sent with this much of its hold left must
// be confirmed (issue #31).
const confirmEntitled = 2 * time.Second

// free lists the seats the map shows free at now, leaving out those
// refused recently, and says when the next held seat's hold ends. A hold
// past its heldUntil is free (the app greys it out by its own clock; the
// server judges by Firestore's).
func (m *seatMap) free(hall []string, now time.Time, avoid map[string]time.Time) ([]string, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var free []string
	var next time.Time
	for _, id := range hall {
		if at, ok := avoid[id]; ok && now.Sub(at) < 3*time.Second {
			continue
		}
		d, ok := m.seats[id]
		switch {
		case !ok:
		case d.Status == booking.StatusBooked:
			continue
		case d.Status == booking.StatusHeld && d.HeldUntil.After(now):
			if next.IsZero() || d.HeldUntil.Before(next) {
				next = d.HeldUntil
			}
			continue
		}
		free = append(free, id)
	}
	return free, next
}

// shop is an admitted user's turn: it opens the seat map, holds seats (on
// a 409, others), then confirms, walks away or releases. It returns the
// outcome.
func (s *sim) shop(ctx context.Context, u *user, passUntil time.Time) string {
	mctx, cancel := context.WithCancel(ctx)
	m := &seatMap{seats: map[string]report.Seat{}, ready: make(chan struct{}), changed: make(chan struct{}, 1)}
	var listener sync.WaitGroup
	// The app polls SaleState for as long as the page is open, and pauses
	// the map's listener while nothing is free and no seat is left (watchSeats).
	state := &latest[*publicState]{changed: make(chan struct{}, 1)}
	listener.Go(func() { s.pollAdmitted(mctx, state) })
	listener.Go(func() { s.watchSeats(mctx, u, m, state) })
	defer func() { cancel(); listener.Wait() }() // the app closes the map with the pass

	select {
	case <-m.ready:
	case <-s.stop:
		return "admitted at the end"
	}
	if m.err != nil {
		return "seat map refused"
	}
	want := s.cfg.PickMin + u.rng.IntN(s.cfg.PickMax-s.cfg.PickMin+1)
	avoid := map[string]time.Time{}
	var hold heldRecord
	if s.cfg.Best {
		var outcome string
		if hold, outcome = s.holdBest(u, passUntil, m, want); hold.ID == "" {
			return outcome
		}
	}
	for tries := 0; hold.ID == ""; {
		now := time.Now()
		switch {
		case tries >= s.cfg.HoldTries:
			return "gave up"
		case !now.Before(passUntil):
			return "pass ended"
		case s.stopping():
			return "shopping at the end"
		}
		free, next := m.free(s.hall, now, avoid)
		if len(free) == 0 {
			wake := passUntil
			if !next.IsZero() && next.Before(wake) {
				wake = next
			}
			t := time.NewTimer(max(time.Until(wake), 10*time.Millisecond))
			select {
			case <-m.changed:
			case <-t.C:
			case <-s.stop:
			}
			t.Stop()
			continue
		}
		if react := s.react(u); react > 0 {
			// A person takes a moment to act on what the map shows, and
			// taps what it shows then.
			if !s.sleep(min(react, max(time.Until(passUntil), 0))) || !time.Now().Before(passUntil) {
				continue // the loop's top says how it ended
			}
			if free, _ = m.free(s.hall, time.Now(), avoid); len(free) == 0 {
				continue
			}
		}
		picked := pick(u.rng, free, want)
		a, err := s.call("HoldSeats", u, map[string]any{"screeningId": s.screening, "seats": picked,
			"requestId": fmt.Sprintf("surge-%d-hold-%d", u.i, tries), "holdSeconds": s.cfg.HoldSeconds})
		switch {
		case err != nil:
			s.fail("user %d: HoldSeats: %v", u.i, err)
			return "hold failed"
		case a.status == http.StatusCreated || a.status == http.StatusOK:
			until, _ := time.Parse(time.RFC3339Nano, a.str("heldUntil"))
			hold = heldRecord{ID: a.str("holdId"), UID: u.acct.uid, Seats: a.seats(), HeldUntil: until}
		case a.status == http.StatusConflict && (a.code() == "seat_taken" || a.code() == "seat_held" || a.code() == "seat_busy"):
			tries++
			conflicted := a.seats()
			if len(conflicted) == 0 {
				conflicted = picked
			}
			for _, seat := range conflicted {
				avoid[seat] = now
			}
		default:
			return "hold " + a.code()
		}
	}
	s.holds.Add(1)
	s.mu.Lock()
	s.records.Holds = append(s.records.Holds, hold)
	s.mu.Unlock()

	think := s.cfg.ThinkMin + time.Duration(u.rng.Int64N(int64(s.cfg.ThinkMax-s.cfg.ThinkMin)+1))
	r := u.rng.Float64()
	switch {
	case r < s.cfg.Confirm && s.payments != nil:
		// Checking out leaves the app for Stripe's page: its listeners
		// close with it, as the web app's do when it follows checkoutUrl.
		cancel()
		listener.Wait()
		return s.pay(u, hold) // checks out now, pays after thinking (pay.go)
	case r < s.cfg.Confirm:
		if !s.sleep(think) {
			return "holding at the end"
		}
		u.confirming.Store(true)
		left := time.Until(hold.HeldUntil) // the emulator's clock is this machine's
		a, err := s.call("ConfirmHold", u, map[string]any{"holdId": hold.ID})
		switch {
		case err != nil:
			s.fail("user %d: ConfirmHold: %v", u.i, err)
			return "confirm failed"
		case a.status == http.StatusGone && left >= confirmEntitled:
			s.confirmExpired.Add(1) // lost to the system's own slowness
			return "confirm " + a.code()
		case a.status != http.StatusCreated && a.status != http.StatusOK:
			return "confirm " + a.code()
		}
		s.seatsBooked.Add(int64(len(hold.Seats)))
		s.mu.Lock()
		s.records.Bookings = append(s.records.Bookings, bookedRecord{ID: a.str("bookingId"), HoldID: hold.ID, UID: u.acct.uid, Seats: a.seats()})
		s.mu.Unlock()
		return "booked"
	case r < s.cfg.Confirm+s.cfg.Walk:
		s.sleep(think)
		return "walked away"
	default:
		if !s.sleep(think) {
			return "holding at the end"
		}
		a, err := s.call("ReleaseHold", u, map[string]any{"holdId": hold.ID})
		switch {
		case err != nil:
			s.fail("user %d: ReleaseHold: %v", u.i, err)
			return "release failed"
		case a.status != http.StatusOK:
			return "release " + a.code()
		}
		return "released"
	}
}

// react is how long u takes to act on what the seat map shows: from
// -react-min to -react-max.
func (s *sim) react(u *user) time.Duration {
	return s.cfg.ReactMin + time.Duration(u.rng.Int64N(int64(s.cfg.ReactMax-s.cfg.ReactMin)+1))
}

// pick chooses up to n of free at random.
func pick(rng *rand.Rand, free []string, n int) []string {
	free = slices.Clone(free)
	rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	return free[:min(n, len(free))]
}
