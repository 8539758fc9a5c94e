package booking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
)

// claim is one request to take seats: for a booking or for a hold.
type claim struct {
	r      Request
	kind   ClaimKind
	id     string                 // the booking's or hold's ID
	ref    *firestore.DocumentRef // its document
	seats  []string               // sorted: one order for everybody
	execID string
	// seat is a taken seat's document, and doc the booking or hold
	// document, for a decision at server time now.
	seat func(now time.Time) map[string]any
	doc  func(now time.Time) any
	// tickets are a booking's tickets, created with it (WithTickets).
	tickets []IssuedTicket
	// until is a hold's end at server time now (zero for a booking).
	until func(now time.Time) time.Time
	// committed is when the commit that took the seats landed (zero if
	// this call did not take them).
	committed time.Time
	// pass is the user's pass, if that commit wrote the gate's record of
	// this claim on it: whatever moves the claim later moves that record in
	// the same commit.
	pass *firestore.DocumentRef
	// startsAt is the start of the screening as the claim was decided on
	// (zero: no cutoff): a commit that lands at or after it is undone
	// (late.go).
	startsAt time.Time
	// decided, if set, is the claim decided on a read its caller made
	// (HoldBest's): take commits on that decision first, without a read.
	decided *decision
	// flight is this claim's attempt in flight on its seats, if it leads
	// one (take); heldBy are seats (document path -> StatusHeld or
	// StatusBooked) it waited for another attempt to take, which took them
	// within this request (await): they are taken, and not read.
	flight *flight
	heldBy map[string]string
}

// decision is a claim decided on a read made before take: at Firestore
// time now, on the screening starting at startsAt, with the user's pass as
// read and the gate's updates of it (pass nil: ungated).
type decision struct {
	now      time.Time
	startsAt time.Time
	pass     *firestore.DocumentSnapshot
	passUps  []firestore.Update
}

const (
	// fastMargin: the one-commit path is taken only while the screening
	// surely starts more than this after the commit could land; closer to
	// the start, the request reads and its read time decides.
	fastMargin = 30 * time.Second
	// takeRounds bounds read-then-commit rounds lost to concurrent changes
	// of seats that then turned out free; the last loss answers seat_busy.
	takeRounds = 4
)

// take takes c's seats for c's document, all or none. It returns the
// document's snapshot if the request made it already (a retry, also one
// that raced its first attempt), else nil once the commit that took the
// seats landed.
func (s *Service) take(ctx context.Context, c *claim) (*firestore.DocumentSnapshot, error) {
	refs := make([]*firestore.DocumentRef, len(c.seats))
	for i, seat := range c.seats {
		refs[i] = s.seatDoc(c.r.ScreeningID, seat)
	}
	if c.decided != nil && !s.taken.any(refs) {
		done, err := s.takeDecided(ctx, c, refs)
		if done || err != nil {
			return nil, err
		}
	} else if now, ok := s.fastTime(c); ok && !s.taken.any(refs) {
		// Of this instance's requests for a seat, one at a time tries the
		// one commit; the others wait for it and then read: when it won,
		// they lose in that one read instead of queueing their own doomed
		// commits on the seat's document behind it.
		if f, mine := s.flights.join(refs); f != nil {
			if err := s.await(ctx, c, f, refs); err != nil {
				return nil, err
			}
		} else {
			c.flight = mine
			done, err := s.takeFast(ctx, c, refs, now)
			mine.end()
			c.flight = nil
			if done || err != nil {
				return nil, err
			}
		}
	} else if c.decided == nil && !s.taken.any(refs) {
		// Reading first, for seats not known taken: of this instance's
		// requests for a seat, one at a time reads and commits; the others
		// wait for it and then read once. When it took the seat, they lose
		// in that one read, instead of each reading, losing its commit to
		// it, and reading again to learn why (issue #51: a crowd of
		// shoppers sees a lapsed hold's seat free on the map at once).
		// Seats known taken are read at once: those requests lose anyway.
		if f, mine := s.flights.join(refs); f != nil {
			if err := s.await(ctx, c, f, refs); err != nil {
				return nil, err
			}
		} else {
			c.flight = mine
			defer mine.end()
		}
	}
	return s.takeRead(ctx, c, refs)
}

// flights are the attempts to take seats in flight in this instance, by
// seat: one-commit attempts, and requests that read first for seats not
// known taken. A request that finds one on a seat it wants waits for it to
// end, then reads.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight // seat document path -> the attempt on it
}

// flight is one attempt in flight. Its request sets took and sent when a
// commit of its took seats, before done closes; a request that waited for
// it reads them after.
type flight struct {
	done chan struct{} // closed when the attempt ends
	// took: the seats (document path -> StatusHeld or StatusBooked) the
	// attempt's commit took, and sent: when that commit was sent (local
	// clock); none if it took none.
	took    map[string]string
	sent    time.Time
	release func()
}

// end ends the attempt: the seats are free for the next, and its waiters go on.
func (f *flight) end() { f.release() }

// tookSeats records that the attempt's commit, sent at sent, took refs:
// the seats were c's from its commit time on (a hold's until its end,
// which the commit landed before, or it is not recorded).
func (c *claim) tookSeats(refs []*firestore.DocumentRef, sent time.Time, now time.Time) {
	f := c.flight
	if f == nil || c.committed.IsZero() || c.landedLate(nil) {
		return
	}
	if c.until != nil && !c.committed.Before(c.until(now)) {
		return
	}
	state := StatusHeld
	if c.kind == ClaimBooking {
		state = StatusBooked
	}
	f.took = make(map[string]string, len(refs))
	for _, r := range refs {
		f.took[r.Path] = state
	}
	f.sent = sent
}

// await waits for the attempt f on some of c's seats refs to end. Of refs, those
// its commit took are known to c as taken (c.heldBy), if that commit was
// sent after c began waiting: it landed within c's request, so at its
// commit time they were taken, and c may be refused on them without
// reading them (takeRead). A commit sent earlier may have landed before
// c's request began, and the seats freed since: c reads them.
func (s *Service) await(ctx context.Context, c *claim, f *flight, refs []*firestore.DocumentRef) error {
	joined := time.Now()
	if h := s.hooks.awaiting; h != nil {
		h()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if len(f.took) == 0 || !f.sent.After(joined) {
		return nil
	}
	for _, r := range refs {
		if st, ok := f.took[r.Path]; ok {
			if c.heldBy == nil {
				c.heldBy = map[string]string{}
			}
			c.heldBy[r.Path] = st
		}
	}
	return nil
}

// join returns the attempt on one of refs in flight, to wait for, or,
// when there is none, registers this attempt on all of refs and returns it
// (nil, and the attempt, which its end ends).
func (f *flights) join(refs []*firestore.DocumentRef) (*flight, *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range refs {
		if fl, ok := f.m[r.Path]; ok {
			return fl, nil
		}
	}
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	fl := &flight{done: make(chan struct{})}
	for _, r := range refs {
		f.m[r.Path] = fl
	}
	fl.release = func() {
		f.mu.Lock()
		for _, r := range refs {
			delete(f.m, r.Path)
		}
		f.mu.Unlock()
		close(fl.done)
	}
	return nil, fl
}

// takenSeats remembers seats this instance saw taken (it took them, or a
// read found them booked or held) for a while. It decides nothing: a seat
// it names skips the one-commit attempt, which would fail, and reads first,
// so a request for a known-taken seat loses in one read instead of a failed
// commit and a read.
type takenSeats struct {
	mu sync.Mutex
	m  map[string]time.Time // seat document path -> when seen taken (local)
}

const (
	takenFor = 10 * time.Second
	takenMax = 10000
)

func (t *takenSeats) any(refs []*firestore.DocumentRef) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range refs {
		if at, ok := t.m[r.Path]; ok {
			if time.Since(at) < takenFor {
				return true
			}
			delete(t.m, r.Path)
		}
	}
	return false
}

// mark records refs as seen taken (taken true) or as freed by this
// instance (false).
func (t *takenSeats) mark(taken bool, refs ...*firestore.DocumentRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]time.Time{}
	}
	if taken && len(t.m) >= takenMax {
		clear(t.m)
	}
	for _, r := range refs {
		if taken {
			t.m[r.Path] = time.Now()
		} else {
			delete(t.m, r.Path)
		}
	}
}

// fastTime says whether c may take the one-commit path, and the server
// time its writes are built for: the screening is current (its listener
// delivers), valid for the seats, ungated, and surely not starting within
// fastMargin of now by the bounds of Firestore's clock.
func (s *Service) fastTime(c *claim) (time.Time, bool) {
	got, ok := s.screenings.current(c.r.ScreeningID)
	if !ok || got.err != nil || got.sc.checkSeats(c.seats) != nil {
		return time.Time{}, false
	}
	if (s.gate != nil && s.gate.Gated(got.snap)) || (c.kind == ClaimBooking && got.sc.Priced) {
		return time.Time{}, false
	}
	lo, hi, ok := s.clock.bounds()
	if !ok || (!got.sc.StartsAt.IsZero() && !hi.Add(fastMargin).Before(got.sc.StartsAt)) {
		return time.Time{}, false
	}
	c.startsAt = got.sc.StartsAt
	// The middle of the bounds: a hold's heldUntil is off from "the
	// server's time of the request + its length" by at most half their
	// width (a round trip, milliseconds). Firestore stores microseconds.
	return lo.Add(hi.Sub(lo) / 2).Truncate(time.Microsecond), true
}

// takeFast is the one-commit path: creates of the seat documents (each
// fails if the seat has a document), the create of c's document and of a
// booking's tickets, and the counter, in one commit. done is false when the commit lost a
// precondition: something is on one of the seats, or the document exists
// (a retry); the read path then finds out which.
func (s *Service) takeFast(ctx context.Context, c *claim, refs []*firestore.DocumentRef, now time.Time) (done bool, err error) {
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := s.client.Batch()
	for _, ref := range refs {
		s.writeSeat(b, c, ref, nil, now)
	}
	b.Create(c.ref, c.doc(now))
	s.createTickets(b, c.tickets)
	if err := s.count(ctx, b, c); err != nil {
		return false, err
	}
	if h := s.hooks.beforeCommit; h != nil {
		h(true)
	}
	sent := time.Now()
	res, err := b.Commit(ctx)
	switch {
	case err == nil:
		s.observe(res[0].UpdateTime, sent, c, now)
		s.taken.mark(true, refs...)
		c.committed = res[0].UpdateTime
		c.tookSeats(refs, sent, now)
		return true, nil
	case isConflict(err):
		return false, nil
	}
	return false, err // ambiguous ones included: the read path settles them
}

// takeDecided is the one-commit path of a claim its caller decided on its
// own read (c.decided; a gated one too): creates of the seat documents
// (the read showed the seats free; one with a document fails the commit),
// the create of c's document, the gate's updates of the pass on the
// version read, and the counter, in one commit. done is false when a
// precondition failed; the read path then finds out why.
func (s *Service) takeDecided(ctx context.Context, c *claim, refs []*firestore.DocumentRef) (done bool, err error) {
	d := c.decided
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := s.client.Batch()
	for _, ref := range refs {
		s.writeSeat(b, c, ref, nil, d.now)
	}
	b.Create(c.ref, c.doc(d.now))
	s.createTickets(b, c.tickets)
	if d.pass != nil && len(d.passUps) > 0 {
		b.Update(d.pass.Ref, d.passUps, firestore.LastUpdateTime(d.pass.UpdateTime))
	}
	if err := s.count(ctx, b, c); err != nil {
		return false, err
	}
	if h := s.hooks.beforeCommit; h != nil {
		h(true)
	}
	c.startsAt = d.startsAt
	sent := time.Now()
	res, err := b.Commit(ctx)
	switch {
	case err == nil:
		s.clock.observe(res[0].UpdateTime, sent, time.Now())
		s.taken.mark(true, refs...)
		c.committed = res[0].UpdateTime
		if d.pass != nil && len(d.passUps) > 0 {
			c.pass = d.pass.Ref
		}
		return true, nil
	case isConflict(err):
		return false, nil
	}
	return false, err // ambiguous ones included: a retry settles them
}

// observe records a commit's time in the clock estimate. A hold whose end
// was placed by the estimate is checked against the commit: an estimate off
// by more than a second is dropped (the hold stands as stored; the next
// request reads first and samples again).
func (s *Service) observe(committed, sent time.Time, c *claim, now time.Time) {
	s.clock.observe(committed, sent, time.Now())
	if off := committed.Sub(now); off > time.Second || off < -time.Second {
		s.clock.forget()
	}
}

// takeRead reads first: c's document, the screening, the user's pass under
// a gate and the seats, in one batched read; decides by its read time;
// then commits with every decision as a precondition (each seat exactly as
// read, the document absent, the pass as read). A commit that loses to a
// concurrent change reads again.
func (s *Service) takeRead(ctx context.Context, c *claim, refs []*firestore.DocumentRef) (*firestore.DocumentSnapshot, error) {
	scRef := s.client.Collection(Screenings).Doc(c.r.ScreeningID)
	pass := s.passRef(c.r.ScreeningID, c.r.UID)
	var lastErr error
	for round := range takeRounds {
		if round > 0 { // let the winner of the race we lost finish
			sleep(ctx, time.Duration(rand.Int64N(int64(2*time.Millisecond)<<round)))
		}
		// A screening its listener keeps current is not read with the
		// rest: most requests that read first lose to a taken seat, and
		// they are refused on the listener's screening (refuseBySeats); the
		// others read it then.
		listened, fromListener := s.listenedScreening(c)
		all := []*firestore.DocumentRef{c.ref}
		if !fromListener {
			all = append(all, scRef)
		}
		all = append(all, pass...)
		var read []int // the seats read: all but those known taken (heldBy)
		for i, ref := range refs {
			if _, known := c.heldBy[ref.Path]; !known {
				all = append(all, ref)
				read = append(read, i)
			}
		}
		sent := time.Now()
		snaps, err := s.client.GetAll(ctx, all)
		if err == nil && s.hooks.batchRead != nil {
			s.hooks.batchRead(snaps)
		}
		if err != nil {
			if lastErr != nil && isAmbiguous(lastErr) {
				return nil, fmt.Errorf("%w (and the answer of the commit before was lost: %v)", err, lastErr)
			}
			return nil, err
		}
		now := snaps[0].ReadTime
		s.clock.observe(now, sent, time.Now())
		rest := snaps[1:]
		got := listened
		if !fromListener {
			got = cached{snap: rest[0]}
			got.sc, got.err = DecodeScreening(rest[0])
			rest = rest[1:]
			// Before a retry's answer too: the read opens the screening's listener.
			s.screenings.put(got)
		}
		if got.err == nil {
			c.startsAt = got.sc.StartsAt
		}
		passSnaps := rest[:len(pass)]
		seats := make([]*firestore.DocumentSnapshot, len(refs)) // nil: known taken, not read
		for j, i := range read {
			seats[i] = rest[len(pass)+j]
		}
		if snaps[0].Exists() { // this request's document: a retry, or our own lost answer
			return snaps[0], nil
		}
		if slices.ContainsFunc(seats, c.owns) {
			// A batched read is not one snapshot: the emulator reads its
			// documents one at a time, so a commit of this request (a
			// retry's first attempt, or our own commit sent again) that
			// landed during the read shows in the seats and not in our
			// document read before them. The seats name the request: the
			// commit is ours, and its document is there to answer with.
			if own, err := c.ref.Get(ctx); err == nil {
				return own, nil
			} else if !notFound(err) {
				return nil, err
			}
		}
		if fromListener {
			if err := s.refuseBySeats(c, got, passSnaps, seats, refs, now); err != nil {
				return nil, err
			}
			// Not refused by its seats: the screening as read now decides.
			scSnaps, err := s.client.GetAll(ctx, []*firestore.DocumentRef{scRef})
			if err != nil {
				return nil, err
			}
			got = cached{snap: scSnaps[0]}
			got.sc, got.err = DecodeScreening(scSnaps[0])
			s.screenings.put(got)
			if got.err == nil {
				c.startsAt = got.sc.StartsAt
			}
		}
		if got.err != nil {
			return nil, got.err
		}
		if err := got.sc.checkSeats(c.seats); err != nil {
			return nil, err
		}
		if got.sc.started(now) {
			return nil, ErrScreeningStarted
		}
		if c.kind == ClaimBooking && got.sc.Priced {
			return nil, ErrPaymentRequired // hold, then pay (CONTRACT §10)
		}
		decide := func() error {
			states := c.seatStates(refs, seats, now)
			err := got.sc.decide(c.seats, states, now)
			var se *SeatsError
			if errors.As(err, &se) {
				for i, st := range states {
					if st != "" {
						s.taken.mark(true, refs[i])
					}
				}
			}
			return err
		}
		// The gate's pass checks come first (a caller without a pass learns
		// nothing of the seats), then the seats, then the cap: a seat
		// somebody holds (the caller's own hold included: confirm it
		// instead) is seat_held whatever the cap says (CONTRACT §3). All
		// hold before anything is written; the order only picks the answer.
		var passUps []firestore.Update
		gated := s.gate != nil && s.gate.Gated(got.snap)
		if gated {
			passUps, err = s.gate.Admit(got.snap, passSnaps[0], Claim{Kind: c.kind, ID: c.id, UID: c.r.UID, ScreeningID: c.r.ScreeningID, Seats: c.seats, Until: c.holdUntil(now)}, now)
			if errors.Is(err, ErrSeatLimit) {
				if serr := decide(); serr != nil {
					return nil, serr
				}
			}
			if err != nil {
				return nil, err
			}
		}
		if err := decide(); err != nil {
			return nil, err
		}
		if len(c.heldBy) > 0 { // decide refused it: those seats are taken
			return nil, fmt.Errorf("booking: a claim on seats known taken got past its decision")
		}
		//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
		b := s.client.Batch()
		for i, ref := range refs {
			s.writeSeat(b, c, ref, seats[i], now)
		}
		b.Create(c.ref, c.doc(now))
		s.createTickets(b, c.tickets)
		if gated && len(passUps) > 0 {
			if passSnaps[0].Exists() {
				b.Update(passSnaps[0].Ref, passUps, firestore.LastUpdateTime(passSnaps[0].UpdateTime))
			} else {
				return nil, fmt.Errorf("booking: the gate admitted %s without a pass document", c.r.UID)
			}
		}
		if err := s.count(ctx, b, c); err != nil {
			return nil, err
		}
		if h := s.hooks.beforeCommit; h != nil {
			h(false)
		}
		sent = time.Now()
		res, err := b.Commit(ctx)
		if err == nil {
			s.clock.observe(res[0].UpdateTime, sent, time.Now())
			s.taken.mark(true, refs...)
			c.committed = res[0].UpdateTime
			if gated && len(passUps) > 0 {
				c.pass = passSnaps[0].Ref
			}
			c.tookSeats(refs, sent, now)
			return nil, nil
		}
		if !isConflict(err) && !isAmbiguous(err) {
			return nil, err
		}
		lastErr = err // read again: a lost answer shows as our document
	}
	// The last commit may have landed unheard: the client library sent it
	// again, and that copy failed its preconditions on our own writes, which
	// looks like a lost race. Our document says so.
	if snap, err := c.ref.Get(ctx); err == nil {
		return snap, nil
	} else if !notFound(err) {
		return nil, err
	}
	if isAmbiguous(lastErr) {
		return nil, lastErr
	}
	return nil, &SeatsError{Kind: ErrSeatBusy, Seats: c.seats}
}

// listenedScreening is c's screening as its listener keeps it, when a
// request that reads first may be refused by its seats on it without
// reading the screening (takeRead): current (fastTime's test) and
// delivered or read within half the TTL, valid for the seats, and surely
// not starting within fastMargin. A screening nobody edits sends its
// listener nothing, and a refusal that skips the read does not refresh the
// entry: past half the TTL the next request reads the screening again
// (put), so the entry stays current, for a read every 15 s, not one a
// request.
func (s *Service) listenedScreening(c *claim) (cached, bool) {
	got, ok := s.screenings.currentWithin(c.r.ScreeningID, ScreeningCacheTTL/2)
	if !ok || got.err != nil || got.sc.checkSeats(c.seats) != nil {
		return cached{}, false
	}
	if _, hi, ok := s.clock.bounds(); !ok || (!got.sc.StartsAt.IsZero() && !hi.Add(fastMargin).Before(got.sc.StartsAt)) {
		return cached{}, false
	}
	return got, true
}

// refuseBySeats refuses c by its seats, read at now, on the screening as
// its listener has it (got): a seat booked or under a live hold
// (ErrSeatTaken, ErrSeatHeld), for a caller the gate lets through as far
// as the seats (its pass checks come first, as in takeRead: a caller
// without a live pass learns nothing of the seats). Anything else is nil:
// the gate refusing, a priced booking, seats free. Those are decided on the
// screening read afresh, as is everything that writes; a refusal by the
// seats needs no fresher screening, since no screening lets a request take
// a seat that is taken (a sale closed or a screening started meanwhile
// would refuse it too, under another code).
func (s *Service) refuseBySeats(c *claim, got cached, pass, seats []*firestore.DocumentSnapshot, refs []*firestore.DocumentRef, now time.Time) error {
	if got.sc.started(now) || (c.kind == ClaimBooking && got.sc.Priced) {
		return nil
	}
	if s.gate != nil && s.gate.Gated(got.snap) {
		_, err := s.gate.Admit(got.snap, pass[0], Claim{Kind: c.kind, ID: c.id, UID: c.r.UID, ScreeningID: c.r.ScreeningID, Seats: c.seats, Until: c.holdUntil(now)}, now)
		if err != nil && !errors.Is(err, ErrSeatLimit) {
			return nil
		}
	}
	states := c.seatStates(refs, seats, now)
	err := got.sc.decide(c.seats, states, now)
	var se *SeatsError
	if !errors.As(err, &se) {
		return nil
	}
	for i, st := range states {
		if st != "" {
			s.taken.mark(true, refs[i])
		}
	}
	return err
}

// seatStates are c's seats' states at now (seatState): as read (seats),
// or, for those it knows taken by another attempt within this request and
// did not read (heldBy, seats[i] nil), as that attempt took them (held, or
// booked).
func (c *claim) seatStates(refs []*firestore.DocumentRef, seats []*firestore.DocumentSnapshot, now time.Time) []string {
	states := make([]string, len(refs))
	for i, ref := range refs {
		if st, known := c.heldBy[ref.Path]; known && seats[i] == nil {
			states[i] = st
			continue
		}
		states[i] = seatState(seats[i], now)
	}
	return states
}

// owns: seat's document names c (a booking's bookingId, a hold's holdId):
// the commit that wrote it wrote c's document too.
func (c *claim) owns(seat *firestore.DocumentSnapshot) bool {
	if seat == nil || !seat.Exists() {
		return false
	}
	field := "bookingId"
	if c.kind == ClaimHold {
		field = "holdId"
	}
	id, _ := seat.Data()[field].(string)
	return id == c.id
}

// holdUntil is the claim's hold end at server time now, or zero.
func (c *claim) holdUntil(now time.Time) time.Time {
	if c.until == nil {
		return time.Time{}
	}
	return c.until(now)
}

// writeSeat adds the write that takes one seat to b: a create where the
// seat had no document (prev nil or absent), else a replacement of every
// field on the exact version read (a lapsed hold's document).
func (s *Service) writeSeat(b *firestore.WriteBatch, c *claim, ref *firestore.DocumentRef, prev *firestore.DocumentSnapshot, now time.Time) {
	data := c.seat(now)
	data["lockedBy"] = c.execID
	if s.hooks.noSeatPrecondition { // a planted bug for the checkers
		b.Set(ref, data)
		return
	}
	if prev == nil || !prev.Exists() {
		b.Create(ref, data)
		return
	}
	ups := make([]firestore.Update, 0, len(data)+len(prev.Data()))
	for k, v := range data {
		ups = append(ups, firestore.Update{Path: k, Value: v})
	}
	for k := range prev.Data() {
		if _, ok := data[k]; !ok {
			ups = append(ups, firestore.Update{Path: k, Value: firestore.Delete})
		}
	}
	b.Update(ref, ups, firestore.LastUpdateTime(prev.UpdateTime))
}

// count adds a booking's tickets-sold increment to b (holds sell nothing).
func (s *Service) count(ctx context.Context, b *firestore.WriteBatch, c *claim) error {
	if c.kind != ClaimBooking {
		return nil
	}
	ctr, err := s.counter(ctx, c.r.ScreeningID)
	if err != nil {
		return err
	}
	shard, ups := ctr.IncrementWrite(int64(len(c.seats)))
	b.Update(shard, ups)
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
