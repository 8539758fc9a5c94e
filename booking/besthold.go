package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrNoSeatsTogether: no block of the requested count of free seats is
// left (CONTRACT §11: 409 no_seats_together), and nothing was held. The
// error is a *NoSeatsError.
var ErrNoSeatsTogether = errors.New("booking: no seats together")

// NoSeatsError says how many seats were asked for and how many are left.
type NoSeatsError struct {
	Count     int
	Apart     bool // the request took seats apart too
	SeatsLeft int  // free seats, as the request last knew the hall
}

func (e *NoSeatsError) Error() string {
	if e.Apart {
		return fmt.Sprintf("%v: %d seats asked for, %d left", ErrNoSeatsTogether, e.Count, e.SeatsLeft)
	}
	return fmt.Sprintf("%v: no %d free seats side by side are left in one row (%d seats left)", ErrNoSeatsTogether, e.Count, e.SeatsLeft)
}

func (e *NoSeatsError) Is(err error) bool { return err == ErrNoSeatsTogether }

// BestRequest asks for Count good seats of one screening for one user: the
// server chooses them (CONTRACT §11).
type BestRequest struct {
	UID         string
	ScreeningID string
	Count       int  // 1..MaxSeats
	Apart       bool // the seats need not sit together (the contract's together: false)
	RequestID   string
}

func (r BestRequest) validate() error {
	if err := (Request{UID: r.UID, ScreeningID: r.ScreeningID, RequestID: r.RequestID, Seats: []string{"A1"}}).validate(); err != nil {
		return err
	}
	if r.Count < 1 || r.Count > MaxSeats {
		return fmt.Errorf("%w: count must be a whole number from 1 to %d", ErrInvalidArgument, MaxSeats)
	}
	return nil
}

// bestRounds bounds the claims one request tries: each lost one teaches it
// at least one taken seat, so on a hall that keeps changing it gives up
// (503, safe to retry with the same requestId) rather than run on.
const bestRounds = 24

// HoldBest holds r.Count free seats that the server chooses, best first
// (BestBlocks' order: the screening's preference, the orphan rule), for d
// (0: DefaultHold), in Hold's one commit. It returns the hold and whether
// this call made it (false: a retry of the same user and requestId, which
// answers the hold that requestId made).
//
// The candidates come from one read: during a sale, the sale's seat-map
// document (its Gate's SeatMap, CONTRACT §7a), which lags the seats by up
// to a second; otherwise the screening's seat documents. The same batched
// read takes the request's own hold (a retry), the screening and, under a
// gate, the user's pass, so a caller without a pass, past the seat cap or
// before the opening is refused before any seat is tried, as Hold refuses
// it. A block that turns out taken or held meanwhile is left out and the
// next is tried: the caller gets ErrNoSeatsTogether only when no block of
// r.Count is left in what the read and the lost claims showed. During a
// sale the map lags the seats by up to a second, so before a refusal the
// seats it shows held are read where their being free would make a block
// (one batched read, only then): no seat whose hold ended or was released
// before the request came is missed for the map's lag. Within one
// instance, concurrent requests choose around each other's claims in
// flight and the seats the instance saw taken in the last seconds; those
// only steer the choice, never the final refusal. When the only blocks
// left have seats the instance saw taken since the request last read them
// (the map lags), those seats are read in one batched read (shared
// between the instance's requests as the map's held seats are) before any
// of them is claimed: one read instead of a lost claim for each.
//
// Errors: ErrInvalidArgument (also a count over the sale's seat cap),
// ErrScreeningNotFound, ErrScreeningStarted, the gate's errors,
// ErrNoSeatsTogether (*NoSeatsError), or a Firestore error (an Aborted one
// when the hall kept changing under bestRounds claims). Nothing is held on
// any error.
func (s *Service) HoldBest(ctx context.Context, executionID string, r BestRequest, d time.Duration) (_ Hold, _ bool, err error) {
	ctx, done := s.metrics.start(ctx, metricOpHold)
	defer done(&err)
	if d == 0 {
		d = DefaultHold
	}
	if err := checkHoldLength(d); err != nil {
		return Hold{}, false, err
	}
	if err := r.validate(); err != nil {
		return Hold{}, false, err
	}
	read, err := s.readHall(ctx, r, d)
	if err != nil {
		return Hold{}, false, err
	}
	if read.mine != nil {
		return s.holdAgain(ctx, executionID, r, d, read.mine)
	}
	h, pref := read.hall, read.preference
	learned := make([]bool, len(h.Free)) // seats the claims found taken or held
	busy := make([]bool, len(h.Free))    // seats of claims that answered seat_busy: tried last
	best := func(h Hall) Block { return Best(h, pref, r.Count, !r.Apart) }
	if s.hooks.bestChoice != nil {
		best = s.hooks.bestChoice
	}
	// checked is when this request last read each seat itself (local
	// clock, before the read was sent): what the instance saw of a seat
	// before that, the read knew.
	checked := make([]time.Time, len(h.Free))
	if read.held == nil { // the hall is the seat documents as read
		for i := range checked {
			checked[i] = read.sent
		}
	}
	seatsPath := s.client.Collection(Screenings).Doc(r.ScreeningID).Collection(SeatsCollection).Path
	for claims, waits, checks := 0, 0, 0; claims < bestRounds && waits < 4*bestRounds; {
		// The seats free in h that the instance saw taken since this
		// request last read them: during a sale the map lags them.
		seen, seenAt := make([]bool, len(h.Free)), make([]time.Time, len(h.Free))
		for seat, at := range s.taken.seatsUnder(seatsPath) {
			if i, ok := h.index(seat); ok && h.Free[i] && at.After(checked[i]) {
				seen[i], seenAt[i] = true, at
			}
		}
		mine, wait, check := s.picks.choose(r.ScreeningID, h, best, func(free []bool) {
			for i := range free {
				free[i] = free[i] && !busy[i] && !seen[i]
			}
		}, func(b Block) bool {
			return checks < bestRounds && slices.ContainsFunc(b, func(i int) bool { return seen[i] })
		})
		if check {
			// No block is left but ones with seats the instance saw taken:
			// read those seats in the way in one batched read, rather than
			// lose a claim on each in turn. A read by another request of
			// the instance serves if it began after this request's first
			// read and after the seats were seen taken (in a burst many
			// requests check the same seats at once).
			checks++
			need := seenInTheWay(h, best, seen, maxCheck)
			since := read.sent
			for _, i := range need {
				if seenAt[i].After(since) {
					since = seenAt[i]
				}
			}
			c, err := s.heldCheck(ctx, r.ScreeningID, h, need, since)
			if err != nil {
				return Hold{}, false, err
			}
			var freed []*firestore.DocumentRef
			for _, i := range need {
				checked[i] = c.began
				if c.free[i] {
					freed = append(freed, s.seatDoc(r.ScreeningID, h.SeatIDs(Block{i})[0]))
				} else {
					h.Free[i], learned[i] = false, true
				}
			}
			s.taken.mark(false, freed...)
			continue
		}
		if wait != nil {
			// The only block left is being claimed by another request of
			// this instance: rather than a claim that would lose to it, wait
			// for its end. If it holds the seats now, they are taken.
			waits++
			select {
			case <-wait.done:
			case <-ctx.Done():
				return Hold{}, false, ctx.Err()
			}
			if wait.won {
				for _, seat := range wait.seats {
					if i, ok := h.index(seat); ok {
						h.Free[i], learned[i] = false, true
					}
				}
			}
			continue
		}
		if mine == nil && read.held != nil && !read.checkedHeld {
			// The map lags the seats by up to a second: a hold it shows may
			// have ended or been released since. Before telling the caller
			// nothing is left, read the seats it shows held where their
			// being free would make a block (one batched read, shared with
			// the instance's other requests that need it; none if no such
			// seat), and choose again.
			read.checkedHeld = true
			freed, err := s.freedSeats(ctx, r.ScreeningID, h, read.held, learned, r.Count, !r.Apart, read.sent)
			if err != nil {
				return Hold{}, false, err
			}
			for _, i := range freed {
				h.Free[i] = true
			}
			if len(freed) > 0 {
				continue
			}
		}
		if mine == nil {
			// A retry's first attempt may have landed since the read.
			if snap, err := s.client.Collection(Holds).Doc(holdID(r.UID, r.RequestID)).Get(ctx); err == nil {
				return s.holdAgain(ctx, executionID, r, d, snap)
			} else if !notFound(err) {
				return Hold{}, false, err
			}
			return Hold{}, false, &NoSeatsError{Count: r.Count, Apart: r.Apart, SeatsLeft: h.FreeSeats()}
		}
		claims++
		seats := mine.seats
		req := Request{UID: r.UID, ScreeningID: r.ScreeningID, Seats: seats, RequestID: r.RequestID}
		if err := req.validate(); err != nil { // a layout whose rows are no seat ids' rows
			s.picks.leave(r.ScreeningID, mine, false)
			return Hold{}, false, err
		}
		// The first claim commits on the first read's decision, if it made
		// one (a sale's: the pass as read); later ones read again.
		decided := read.decided
		read.decided = nil
		hold, created, err := s.hold(ctx, executionID, req, d, decided)
		s.picks.leave(r.ScreeningID, mine, err == nil)
		var se *SeatsError
		switch {
		case errors.As(err, &se) && errors.Is(err, ErrSeatBusy):
			for _, seat := range seats {
				if i, ok := h.index(seat); ok {
					busy[i] = true
				}
			}
			continue
		case errors.As(err, &se):
			for _, seat := range se.Seats {
				if i, ok := h.index(seat); ok {
					h.Free[i], learned[i] = false, true
				}
			}
			continue
		case err != nil:
			return Hold{}, false, err
		}
		if !sameBest(hold, r) {
			return Hold{}, false, fmt.Errorf("%w: requestId %q was already used for another request", ErrInvalidArgument, r.RequestID)
		}
		return hold, created, nil
	}
	return Hold{}, false, status.Errorf(codes.Aborted, "booking: the hall kept changing under %d claims; try again", bestRounds)
}

// sameBest: a stored hold is what r asks for.
func sameBest(h Hold, r BestRequest) bool {
	return h.UID == r.UID && h.ScreeningID == r.ScreeningID && len(h.Seats) == r.Count
}

// holdAgain answers a retry: the hold its requestId made (mine), through
// Hold's claim path, which finds it (and undoes it, had it landed after
// the start).
func (s *Service) holdAgain(ctx context.Context, executionID string, r BestRequest, d time.Duration, mine *firestore.DocumentSnapshot) (Hold, bool, error) {
	var stored Hold
	if err := mine.DataTo(&stored); err != nil {
		return Hold{}, false, err
	}
	stored.ID = mine.Ref.ID
	if !sameBest(stored, r) {
		return Hold{}, false, fmt.Errorf("%w: requestId %q was already used for another request", ErrInvalidArgument, r.RequestID)
	}
	req := Request{UID: r.UID, ScreeningID: r.ScreeningID, Seats: stored.Seats, RequestID: r.RequestID}
	if err := req.validate(); err != nil {
		return Hold{}, false, err
	}
	h, _, err := s.hold(ctx, executionID, req, d, nil)
	if err != nil {
		return Hold{}, false, err
	}
	if !sameBest(h, r) {
		return Hold{}, false, fmt.Errorf("%w: requestId %q was already used for another request", ErrInvalidArgument, r.RequestID)
	}
	return h, false, nil
}

// hallRead is what HoldBest's first read found.
type hallRead struct {
	hall       Hall
	preference []string
	mine       *firestore.DocumentSnapshot // the request's own hold: a retry
	// held are the seats the sale's seat map showed held, if the hall was
	// read from it (nil: from the seat documents).
	held        []bool
	checkedHeld bool
	sent        time.Time // when the read was sent (local clock)
	// decided is the gate's decision on the read (during a sale), for the
	// first claim to commit on without reading again.
	decided *decision
}

// freedSeats reads the seat documents of the seats held says are held
// (less those a claim found taken), in the rows where their all being free
// would make a block of count (every row, for seats apart), and returns
// those that are free by the read's time: released, or whose hold ended.
// A read of those seats by another request of the instance that began
// after since (the request's own first read) serves too. A booked seat is
// freed only by a cancellation, which a sale does not wait for.
func (s *Service) freedSeats(ctx context.Context, screeningID string, h Hall, held, learned []bool, count int, together bool, since time.Time) ([]int, error) {
	could := h
	could.Free = slices.Clone(h.Free)
	for i := range held {
		could.Free[i] = could.Free[i] || (held[i] && !learned[i])
	}
	if Best(could, nil, count, together) == nil {
		return nil, nil
	}
	m := h.SeatsPerRow
	var need []int
	for r := range h.Rows {
		row := Hall{Rows: h.Rows[r : r+1], SeatsPerRow: m, Free: could.Free[r*m : (r+1)*m]}
		if together && Best(row, nil, count, true) == nil {
			continue
		}
		for i := r * m; i < (r+1)*m; i++ {
			if held[i] && !learned[i] && !h.Free[i] {
				need = append(need, i)
			}
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	c, err := s.heldCheck(ctx, screeningID, h, need, since)
	if err != nil {
		return nil, err
	}
	var freed []int
	for _, i := range need {
		if c.free[i] {
			freed = append(freed, i)
		}
	}
	return freed, nil
}

// heldCheck returns a finished read of at least the seats need, begun after
// since: another request's, or its own.
func (s *Service) heldCheck(ctx context.Context, screeningID string, h Hall, need []int, since time.Time) (*heldCheck, error) {
	s.held.mu.Lock()
	c := s.held.m[screeningID]
	covers := c != nil && !c.began.Before(since)
	for _, i := range need {
		covers = covers && c.asked[i]
	}
	if covers {
		select {
		case <-c.done:
			covers = c.err == nil // a read that failed is not shared after
		default:
		}
	}
	if !covers {
		c = &heldCheck{began: time.Now(), asked: map[int]bool{}, done: make(chan struct{}), free: map[int]bool{}}
		refs := make([]*firestore.DocumentRef, len(need))
		for j, i := range need {
			c.asked[i] = true
			refs[j] = s.seatDoc(screeningID, h.SeatIDs(Block{i})[0])
		}
		if s.held.m == nil {
			s.held.m = map[string]*heldCheck{}
		}
		s.held.m[screeningID] = c
		s.held.mu.Unlock()
		// Not the caller's ctx: other requests wait on this read.
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		snaps, err := s.client.GetAll(rctx, refs)
		cancel()
		for j, snap := range snaps {
			if err == nil && seatState(snap, snap.ReadTime) == "" {
				c.free[need[j]] = true
			}
		}
		c.err = err
		close(c.done)
	} else {
		s.held.mu.Unlock()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

// readHall reads, in one batched read, the request's own hold, the
// screening, the user's pass and the sale's seat map (under a gate), and
// decides what Hold would decide before the seats (the start, the gate);
// without a seat map it then reads the seat documents. It returns the hall
// as read.
func (s *Service) readHall(ctx context.Context, r BestRequest, d time.Duration) (hallRead, error) {
	id := holdID(r.UID, r.RequestID)
	scRef := s.client.Collection(Screenings).Doc(r.ScreeningID)
	refs := []*firestore.DocumentRef{s.client.Collection(Holds).Doc(id), scRef}
	pass := s.passRef(r.ScreeningID, r.UID)
	refs = append(refs, pass...)
	// The seat map only where the screening may be gated: an ungated one
	// this instance keeps current costs no read of a map it does not have.
	withMap := false
	if s.gate != nil {
		got, ok := s.screenings.current(r.ScreeningID)
		if withMap = !ok || got.err != nil || s.gate.Gated(got.snap); withMap {
			refs = append(refs, s.gate.SeatMap(r.ScreeningID))
		}
	}
	sent := time.Now()
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return hallRead{}, err
	}
	now := snaps[0].ReadTime
	s.clock.observe(now, sent, time.Now())
	got := cached{snap: snaps[1]}
	got.sc, got.err = DecodeScreening(snaps[1])
	s.screenings.put(got)
	if snaps[0].Exists() {
		return hallRead{mine: snaps[0]}, nil
	}
	if got.err != nil {
		return hallRead{}, got.err
	}
	sc := got.sc
	if sc.started(now) {
		return hallRead{}, ErrScreeningStarted
	}
	hr := hallRead{hall: Hall{Rows: sc.Rows, SeatsPerRow: sc.SeatsPerRow}, preference: preferenceOf(snaps[1]), sent: sent}
	if s.gate != nil && s.gate.Gated(snaps[1]) {
		if limit := s.gate.SeatCap(snaps[1]); limit > 0 && r.Count > limit {
			return hallRead{}, fmt.Errorf("%w: count %d is more than the %d seats one person may hold and book in this sale", ErrInvalidArgument, r.Count, limit)
		}
		// The gate decides as it will in the claim's commit (which decides
		// again, on a fresh read): no pass, no seats.
		c := Claim{Kind: ClaimHold, ID: id, UID: r.UID, ScreeningID: r.ScreeningID, Seats: make([]string, r.Count), Until: now.Add(d)}
		ups, err := s.gate.Admit(snaps[1], snaps[2], c, now)
		if err != nil {
			return hallRead{}, err
		}
		// The pass's record of a hold names its count, not its seats: the
		// updates stand for whichever block is chosen, on the pass as read.
		if len(ups) == 0 || snaps[2].Exists() {
			hr.decided = &decision{now: now, startsAt: sc.StartsAt, pass: snaps[2], passUps: ups}
		}
		if withMap {
			if free, held, ok := mapFree(snaps[len(snaps)-1], len(sc.Rows)*sc.SeatsPerRow); ok {
				hr.hall.Free, hr.held = free, held
				return hr, nil
			}
		}
	}
	// No sale, or its map is not written yet (or is of another layout):
	// the seat documents, judged at their read's time.
	free := make([]bool, len(sc.Rows)*max(sc.SeatsPerRow, 0))
	for i := range free {
		free[i] = true
	}
	hr.hall.Free = free
	docs, err := scRef.Collection(SeatsCollection).Documents(ctx).GetAll()
	if err != nil {
		return hallRead{}, err
	}
	for _, doc := range docs {
		if seatState(doc, doc.ReadTime) == "" {
			continue
		}
		if i, ok := hr.hall.index(doc.Ref.ID); ok {
			free[i] = false
		}
	}
	return hr, nil
}

// mapFree decodes a seat-map document (CONTRACT §7a: a character a seat,
// '.' free, 'h' held) of a hall of n seats: the seats free and those held;
// ok false if it is missing or of another length.
func mapFree(snap *firestore.DocumentSnapshot, n int) (free, held []bool, ok bool) {
	if snap == nil || !snap.Exists() {
		return nil, nil, false
	}
	seats, _ := snap.Data()["seats"].(string)
	if len(seats) != n || n == 0 {
		return nil, nil, false
	}
	free, held = make([]bool, n), make([]bool, n)
	for i := range n {
		free[i], held[i] = seats[i] == '.', seats[i] == 'h'
	}
	return free, held, true
}

// preferenceOf is the screening's preference (CONTRACT §11: row labels,
// best first). Anything but a list of strings is no preference.
func preferenceOf(screening *firestore.DocumentSnapshot) []string {
	list, _ := screening.Data()["preference"].([]any)
	var out []string
	for _, v := range list {
		if label, ok := v.(string); ok {
			out = append(out, label)
		}
	}
	return out
}

// index is a seat's index in the layout order.
func (h Hall) index(seat string) (int, bool) {
	cut := strings.IndexFunc(seat, func(r rune) bool { return r >= '0' && r <= '9' })
	if cut <= 0 {
		return 0, false
	}
	row := slices.Index(h.Rows, seat[:cut])
	n, err := strconv.Atoi(seat[cut:])
	if row < 0 || err != nil || n < 1 || n > h.SeatsPerRow {
		return 0, false
	}
	return row*h.SeatsPerRow + n - 1, true
}

// picks are the best-available claims this instance is making right now,
// by screening and seat. A request that chooses meanwhile chooses around
// them, so concurrent requests of one instance do not all try the same best
// block and queue behind its one winner; when the only block left is being
// claimed, it waits for that claim instead of making one that would lose.
type picks struct {
	mu sync.Mutex
	m  map[string]map[string]*claimInFlight // screening -> seat -> claim
}

// claimInFlight is one such claim.
type claimInFlight struct {
	seats []string
	done  chan struct{} // closed when the claim has ended
	won   bool          // set before done closes: it holds its seats
}

// choose picks the best block of h and marks it as being claimed (mine;
// leave ends it). It chooses first around the claims in flight and the
// seats hint marks taken; when that leaves nothing, from h as it is. If
// that block is being claimed, it returns that claim to wait for; if
// check says that block is to be read first, it marks nothing and returns
// checkFirst. All nil and false: h has no block.
func (p *picks) choose(screening string, h Hall, best func(Hall) Block, hint func(free []bool), check func(Block) bool) (mine, wait *claimInFlight, checkFirst bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inFlight := p.m[screening]
	steered := h
	steered.Free = slices.Clone(h.Free)
	for seat := range inFlight {
		if i, ok := h.index(seat); ok {
			steered.Free[i] = false
		}
	}
	hint(steered.Free)
	b := best(steered)
	steer := b != nil
	if !steer {
		b = best(h)
	}
	if b == nil {
		return nil, nil, false
	}
	seats := h.SeatIDs(b)
	for _, seat := range seats {
		if c := inFlight[seat]; c != nil {
			return nil, c, false
		}
	}
	if !steer && check(b) {
		return nil, nil, true
	}
	if inFlight == nil {
		if p.m == nil {
			p.m = map[string]map[string]*claimInFlight{}
		}
		inFlight = map[string]*claimInFlight{}
		p.m[screening] = inFlight
	}
	c := &claimInFlight{seats: seats, done: make(chan struct{})}
	for _, seat := range seats {
		inFlight[seat] = c
	}
	return c, nil, false
}

// leave ends a claim that choose marked; won: it holds its seats.
func (p *picks) leave(screening string, c *claimInFlight, won bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, seat := range c.seats {
		if p.m[screening][seat] == c {
			delete(p.m[screening], seat)
		}
	}
	if len(p.m[screening]) == 0 {
		delete(p.m, screening)
	}
	c.won = won
	close(c.done)
}

// heldChecks share the reads of the seats a sale's map shows held between
// the instance's best-available requests that are about to refuse (a burst
// of them comes at once, when the map shows the last seats): a read that
// began after a request's own first read is as fresh as that request needs.
type heldChecks struct {
	mu sync.Mutex
	m  map[string]*heldCheck // by screening: the latest read
}

type heldCheck struct {
	began time.Time    // local clock, before it was sent
	asked map[int]bool // the seats read, by layout index
	done  chan struct{}
	free  map[int]bool // of asked, those free by the read's time
	err   error
}

// seatsUnder lists the ids of the documents in the collection at path that
// the instance saw taken within takenFor, with when it saw each taken.
func (t *takenSeats) seatsUnder(path string) map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	prefix := path + "/"
	out := map[string]time.Time{}
	for p, at := range t.m {
		if id, ok := strings.CutPrefix(p, prefix); ok && time.Since(at) < takenFor {
			out[id] = at
		}
	}
	return out
}

// maxCheck bounds the seats one check of HoldBest reads.
const maxCheck = 100

// seenInTheWay lists the seats of seen (free in h, but seen taken by the
// instance) that stand before the first block of h without one, in the
// order best tries them: those of the blocks best would claim one after
// another, each lost on a seen seat; at most about max of them.
func seenInTheWay(h Hall, best func(Hall) Block, seen []bool, max int) []int {
	h.Free = slices.Clone(h.Free)
	var need []int
	for len(need) < max {
		b := best(h)
		in := false
		for _, i := range b {
			if seen[i] && h.Free[i] {
				in = true
				h.Free[i] = false
				need = append(need, i)
			}
		}
		if !in {
			break
		}
	}
	return need
}
