package sale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SeatMaps holds each sale's seat map in one document (CONTRACT §7a):
// seatMaps/{screeningId} {seats, updatedAt}, one character a seat in
// layout order: '.' free, 'h' held, 'b' booked.
const SeatMaps = "seatMaps"

// Seat map characters.
const (
	SeatFree   = '.'
	SeatHeld   = 'h'
	SeatBooked = 'b'
)

// SeatMap is a seatMaps document.
type SeatMap struct {
	Seats     string    `firestore:"seats"`
	UpdatedAt time.Time `firestore:"updatedAt"`
}

// seatMapEvery is the least time between two writes of a seat map: a
// document takes about one write a second, sustained.
const seatMapEvery = time.Second

// seatMapRetry is how soon a write that failed, or a listener that
// failed, is tried again.
const seatMapRetry = 200 * time.Millisecond

// seatMapCancelledRetries: how many commits in a row that the store
// answered Canceled (with the publisher's own context still live) are
// tried again at once, not after seatMapRetry. The Firestore emulator
// tells a commit's change to the document's listeners within the commit,
// and fails the commit with CANCELLED ("call already cancelled") when one
// of them was closed by its client and not yet forgotten, most often a
// shopper whose pass has just ended, whom the rules now refuse. Each such
// commit rids it of one of those listeners, and while the map does not
// change (no seat free) a hundred of them can gather: after seatMapRetry
// each, the map stalled 26 s in a priced surge (15:43) and minutes in
// another (15:17), with seats free that no shopper could see.
const seatMapCancelledRetries = 500

// seatMapRefresh is how often the publisher reads every seat afresh
// whatever it sees: at most one read a seat each time (2,000 for the
// largest hall, 2,000 a minute), so that no change a listener missed lasts
// longer. A miss that changes how many seats are booked or held is found
// sooner, by the admitter's counts (seatCheck).
const seatMapRefresh = time.Minute

// seatMapLag is how long a listener that has not caught up with a count
// must have sent nothing, from seatMapLag after the count's answer on,
// before the count is judged on its state (see due): a quiet sale's
// listener sends nothing, and a change takes it well under a second.
const seatMapLag = 2 * time.Second

// seatMapMismatches is how many counts in a row must disagree with the
// listener's state at their read times before the publisher reads every
// seat afresh. A change the listener missed makes every count disagree
// (but now and then one that a deletion it cannot date covers), so the
// second costs a tick; it keeps a count the listener's state at its read
// time is not exactly known for from costing a full read: a seat written
// twice between two of the listener's snapshots (it shows the last write
// only), a write the emulator delivered more than seatMapSettle late, a
// quiet listener that was in fact slow.
const seatMapMismatches = 2

// seatCheck is the admitter's count of a sale's seats, taken by a step
// (it reads them every tick anyway, for seatsLeft): the seats booked, and
// those whose heldUntil is after at, both as they were at at, a read time
// (Firestore's clock: Admitter.seatsAt). The step had the answer at
// answered (the local clock). The seat map's publisher checks its
// listener's state at at against them: a change the listener missed (the
// emulator's resumed streams can miss one) that changes either count is
// found within a few ticks, not at the next periodic refresh, however
// fast other seats change.
type seatCheck struct {
	answered     time.Time
	at           time.Time
	booked, held int64
}

// offerSeatCheck hands c to the publisher (nil: none runs), in place of a
// count it has not taken yet: it never waits.
func offerSeatCheck(ch chan seatCheck, c seatCheck) {
	if ch == nil {
		return
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- c:
	default:
	}
}

// seatChange is a change of one seat's document that the publisher took
// from its listener, kept for the counts (seatCheck): the seat before
// (was; had: it had a document) and after (now; has). A written document
// carries its write's time (now.at, Firestore's commit time) and its
// creation's (now.created); a deletion carries no time: it was made after
// after (the later of was.at and seatMapSettle before the read time of the
// listener's snapshot before) and at or before by (the read time of the
// snapshot that brought it). A document deleted and created again between
// two snapshots comes as a change of it whose creation is after was.at:
// its deletion is dated the same way, before its creation.
type seatChange struct {
	id        string
	was, now  seatSeen
	had, has  bool
	after, by time.Time
}

// madeAfter says whether the change was made after t (+1: the seat was
// still as before at t), at or before it (-1: it was as after), or cannot
// tell (0: a deletion that may have been made either side of t; the seat
// was as before, or had no document). A document written more than once
// between two snapshots shows only its last write: it is taken as made
// then (from its creation on, for one created then).
func (c seatChange) madeAfter(t time.Time) int {
	made, gone := c.now.at, false
	switch {
	case !c.has:
		made, gone = c.by, true
	case !c.had && !c.now.created.IsZero():
		made = c.now.created
	case c.now.created.After(c.was.at):
		made, gone = c.now.created, true
	}
	switch {
	case !made.After(t):
		return -1
	case gone && c.after.Before(t):
		return 0
	}
	return 1
}

// Layout lists a screening's seat IDs in seat-map order: rows in order,
// then seat numbers ascending.
func Layout(sc booking.Screening) []string {
	out := make([]string, 0, len(sc.Rows)*max(sc.SeatsPerRow, 0))
	for _, row := range sc.Rows {
		for n := 1; n <= sc.SeatsPerRow; n++ {
			out = append(out, row+strconv.Itoa(n))
		}
	}
	return out
}

// seatMapPublisher keeps one sale's seatMaps document, for the admitter
// that holds the sale's lease. It learns every change from one listener on
// the sale's seats (one read a changed seat, and one a seat when it
// starts: a run's first snapshot), not from the shoppers: the map costs the
// store one write a second at most, whatever the audience, and each
// watching shopper one read a write.
type seatMapPublisher struct {
	a     *Admitter
	id    string
	lease *lock.Lease
	order []string
	index map[string]int
	seats map[string]seatSeen // the seats with a document
	// Firestore's clock, estimated from the last snapshot: a hold past its
	// heldUntil shows free (CONTRACT §3), judged as the server judges it.
	readTime time.Time
	readAt   time.Time
	shown    string // as last written (or found) in seatMaps
	shownAt  time.Time
	// What it cost, logged when it stops: the listener's snapshots and
	// the seat changes they carried (a read each), and the map's writes.
	snapshots, changes, writes int
	refreshes                  int // fresh reads that found the listener wrong
	direct                     int // reads of every seat by the publisher itself (readAfresh)
	// For the admitter's counts: the changes the listener brought (and the
	// publisher took) in the last seatMapKept, oldest first; since: the
	// earliest read time they tell the listener's state at (its first
	// snapshot's, or the last change forgotten: a count read earlier is
	// not judged); the counts not judged yet; mismatched: counts in a row
	// that disagreed. counted: fresh reads the counts asked for.
	history    []seatChange
	since      time.Time
	checks     []seatCheck
	mismatched int
	counted    int
}

// seatSeen is a seat's document as the publisher knows it: its status
// and heldUntil, its last write's time (at: UpdateTime) and its creation's
// (CreateTime).
type seatSeen struct {
	status      string
	heldUntil   time.Time
	at, created time.Time
}

// same says whether s and o show the same on a map, and count the same.
func (s seatSeen) same(o seatSeen) bool {
	return s.status == o.status && s.heldUntil.Equal(o.heldUntil)
}

// publishSeatMap keeps the sale's seat map until ctx ends (the lease is
// lost, or the run lets the sale go). Failures are logged and tried again;
// a stale admitter's write fails on the lease's fence.
// checks brings the admitter's counts of the seats (see seatCheck).
func (a *Admitter) publishSeatMap(ctx context.Context, id string, lease *lock.Lease, checks <-chan seatCheck) {
	p := &seatMapPublisher{a: a, id: id, lease: lease, seats: map[string]seatSeen{}}
	err := p.run(ctx, checks)
	if err != nil && ctx.Err() == nil {
		a.s.o.log.Warn("sale: seat map: stopped; the next run publishes it", "screeningId", id, "error", err.Error())
	}
	a.s.o.log.Info("sale: seat map: stopped publishing", "screeningId", id,
		"snapshots", p.snapshots, "seatChanges", p.changes, "writes", p.writes,
		"refreshesForCounts", p.counted, "refreshesThatFoundMisses", p.refreshes, "directReads", p.direct)
}

// publishSeatMapOnce brings the seat map up to date once, for a run of one
// pass: it reads every seat document (a listener would not outlive the
// pass). The stored map's updatedAt keeps the writes a second apart.
func (a *Admitter) publishSeatMapOnce(ctx context.Context, id string, lease *lock.Lease) error {
	p := &seatMapPublisher{a: a, id: id, lease: lease, seats: map[string]seatSeen{}}
	if err := p.load(ctx); err != nil {
		return fmt.Errorf("seat map: %w", err)
	}
	snaps, err := p.seatsRef().Documents(ctx).GetAll()
	if err != nil {
		return fmt.Errorf("seat map: %w", err)
	}
	for _, s := range snaps {
		p.seats[s.Ref.ID] = seen(s)
	}
	if len(snaps) > 0 {
		p.readTime, p.readAt = snaps[0].ReadTime, time.Now()
	} else {
		p.readTime, p.readAt = time.Now(), time.Now()
	}
	if _, err := p.publish(ctx); err != nil {
		return fmt.Errorf("seat map: %w", err)
	}
	return nil
}

func (p *seatMapPublisher) seatsRef() *firestore.CollectionRef {
	return p.a.s.client.Collection(booking.Screenings).Doc(p.id).Collection(booking.SeatsCollection)
}

// load reads the screening's layout and the map as stored.
func (p *seatMapPublisher) load(ctx context.Context) error {
	screening := p.a.s.client.Collection(booking.Screenings).Doc(p.id)
	snaps, err := p.a.s.client.GetAll(ctx, []*firestore.DocumentRef{screening, p.a.s.client.Collection(SeatMaps).Doc(p.id)})
	if err != nil {
		return err
	}
	if err := p.setLayout(snaps[0]); err != nil {
		return err
	}
	if snaps[1].Exists() {
		var m SeatMap
		if snaps[1].DataTo(&m) == nil {
			p.shown, p.shownAt = m.Seats, m.UpdatedAt
		}
	}
	return nil
}

// setLayout takes the screening's layout: the map's seats and their order.
func (p *seatMapPublisher) setLayout(screening *firestore.DocumentSnapshot) error {
	sc, err := booking.DecodeScreening(screening)
	if err != nil {
		return err
	}
	p.order = Layout(sc)
	p.index = make(map[string]int, len(p.order))
	for i, s := range p.order {
		p.index[s] = i
	}
	return nil
}

// watchLayout sends each version of the screening document until ctx ends,
// listening again after a failure: a row added during a sale shows on the
// map.
func (p *seatMapPublisher) watchLayout(ctx context.Context, out chan<- *firestore.DocumentSnapshot) {
	ref := p.a.s.client.Collection(booking.Screenings).Doc(p.id)
	for ctx.Err() == nil {
		it := ref.Snapshots(ctx)
		for {
			snap, err := it.Next()
			if err != nil {
				break
			}
			select {
			case out <- snap:
			case <-ctx.Done():
			}
		}
		it.Stop()
		select {
		case <-time.After(seatMapRetry):
		case <-ctx.Done():
		}
	}
}

func (p *seatMapPublisher) run(ctx context.Context, checks <-chan seatCheck) error {
	if err := p.load(ctx); err != nil {
		return err
	}

	// The listener, started again when it fails (a listener's stream can
	// end with an error the SDK does not retry, e.g. Canceled on a busy
	// emulator), when the admitter's counts disagree with its state at
	// their read times (seatMapMismatches in a row), and every
	// seatMapRefresh: a full read, as anti-entropy against a change a
	// resumed stream never delivered. Each listener's first snapshot
	// replaces what the publisher knew.
	type delivery struct {
		gen  int
		snap *firestore.QuerySnapshot
		err  error
	}
	deliveries := make(chan delivery, 1)
	gen := 0
	var stopListener context.CancelFunc = func() {}
	// A fresh listener's first snapshot is awaited seatMapBehind at most;
	// then the publisher reads every seat itself (readAfresh).
	firstLate := time.NewTimer(time.Hour)
	defer firstLate.Stop()
	afreshFailed := 0 // readAfresh's failures in a row, for its back-off
	listen := func() {
		stopListener()
		gen++
		afreshFailed = 0
		resetTimer(firstLate, seatMapBehind)
		lctx, stop := context.WithCancel(ctx)
		stopListener = stop
		go func(gen int) {
			if p.a.seatMapDeaf != nil && p.a.seatMapDeaf(gen) {
				<-lctx.Done()
				return
			}
			it := p.seatsRef().Snapshots(lctx)
			defer it.Stop()
			for {
				snap, err := it.Next()
				select {
				case deliveries <- delivery{gen, snap, err}:
				case <-lctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}(gen)
	}
	listen()
	defer func() { stopListener() }()
	layouts := make(chan *firestore.DocumentSnapshot)
	go p.watchLayout(ctx, layouts)
	every := seatMapRefresh
	if p.a.seatMapRefresh > 0 {
		every = p.a.seatMapRefresh
	}
	refresh := time.NewTicker(every)
	defer refresh.Stop()

	ready, fresh := false, true // the first snapshot is every seat
	counted := func(c seatCheck) {
		p.counted++
		p.a.s.o.log.Info("sale: seat map: the seats' counts disagree with the listener; reading every seat afresh",
			"screeningId", p.id, "readTime", c.at, "booked", c.booked, "held", c.held, "listenerReadTime", p.readTime)
		listen()
		fresh = true
		refresh.Reset(every)
	}
	failures, cancelled := 0, 0 // commits failed in a row; of them, Canceled
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			listen()
			fresh = true
			p.mismatched, p.checks = 0, nil
			continue
		case <-firstLate.C:
			if !fresh {
				continue
			}
			if err := p.readAfresh(ctx, ready); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				afreshFailed++
				p.a.s.o.log.Warn("sale: seat map: reading every seat", "screeningId", p.id, "error", err.Error(), "failures", afreshFailed)
				resetTimer(firstLate, afreshBackoff(afreshFailed))
				continue
			}
			afreshFailed = 0
			fresh, ready = false, true
		case c := <-checks:
			if !ready || fresh { // a fresh read is on its way
				continue
			}
			if c, ask := p.check(c, time.Now()); ask {
				counted(c)
			}
			continue
		case screening := <-layouts:
			if !screening.Exists() {
				continue
			}
			if err := p.setLayout(screening); err != nil {
				p.a.s.o.log.Warn("sale: seat map: the screening's layout", "screeningId", p.id, "error", err.Error())
				continue
			}
		case d := <-deliveries:
			switch {
			case d.gen != gen:
				continue // an old listener's
			case d.err != nil && ctx.Err() != nil:
				return nil
			case d.err != nil:
				p.a.s.o.log.Warn("sale: seat map: the seats' listener failed; listening again", "screeningId", p.id, "error", d.err.Error())
				time.Sleep(seatMapRetry)
				listen()
				fresh = true
				p.mismatched, p.checks = 0, nil
				continue
			}
			if d.snap.ReadTime.Before(p.readTime) {
				continue // older than what the publisher read itself meanwhile (readAfresh)
			}
			if fresh {
				p.replace(d.snap, ready)
				fresh = false
			} else {
				p.take(d.snap, p.a.seatMapMisses, time.Now())
				if c, ask := p.judge(time.Now()); ask {
					counted(c)
				}
			}
			ready = true
		case <-timer.C:
		}
		if !ready {
			continue
		}
		wait, err := p.publish(ctx)
		if err != nil && ctx.Err() == nil {
			// A lease that has gone ends ctx.
			if failures++; failures == 1 || failures%60 == 0 {
				p.a.s.o.log.Warn("sale: seat map: publish", "screeningId", p.id, "failures", failures, "error", err.Error())
			}
			wait = retryPublish(err, cancelled)
			if status.Code(err) == codes.Canceled {
				cancelled++
			}
		} else if err == nil {
			failures, cancelled = 0, 0
		}
		resetTimer(timer, wait)
	}
}

// resetTimer makes t fire after d, whether or not it has fired meanwhile.
func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// retryPublish is how soon a publish that failed with err is tried again,
// after cancelled commits in a row that the store answered Canceled: at
// once for such an answer (up to seatMapCancelledRetries of them; see
// there), else soon, since on a busy store a commit fails now and then and
// a shopper's map should not lag a second more.
func retryPublish(err error, cancelled int) time.Duration {
	if status.Code(err) == codes.Canceled && cancelled < seatMapCancelledRetries {
		return 0
	}
	return seatMapRetry
}

// replace takes a new listener's first snapshot (every seat document) in
// place of what the publisher knew, and logs the seats it had wrong
// (compare: it knew some). The counts are judged on this state from its
// read time on.
func (p *seatMapPublisher) replace(snap *firestore.QuerySnapshot, compare bool) {
	p.snapshots++
	p.changes += len(snap.Changes)
	var docs []*firestore.DocumentSnapshot
	for _, c := range snap.Changes {
		if c.Kind != firestore.DocumentRemoved {
			docs = append(docs, c.Doc)
		}
	}
	p.replaceSeats(docs, snap.ReadTime, compare)
}

// afreshBackoff is how long the publisher waits after readAfresh failed
// failures times in a row: seatMapRetry, doubled each time, up to
// seatMapBehind. Each try reads every seat document (2,000 in a large
// hall), so a store that refuses them for a while is not asked five times
// a second.
func afreshBackoff(failures int) time.Duration {
	d := seatMapRetry
	for i := 1; i < failures && d < seatMapBehind; i++ {
		d *= 2
	}
	return min(d, seatMapBehind)
}

// readAfresh reads every seat document itself, when a fresh listener has
// sent nothing for seatMapBehind (the emulator's listeners have sent
// nothing for half a minute under a burst, while the store took the
// writes), and takes them as replace does. The listener goes on: its
// snapshots older than this read are passed over.
func (p *seatMapPublisher) readAfresh(ctx context.Context, compare bool) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	asked := p.now()
	docs, err := p.seatsRef().Documents(rctx).GetAll()
	if err != nil {
		return err
	}
	readTime := asked // no seat document: every seat free, as of no earlier than the ask
	if len(docs) > 0 {
		readTime = docs[0].ReadTime
	}
	p.direct++
	p.a.s.o.log.Info("sale: seat map: a fresh listener sent nothing; read every seat", "screeningId", p.id, "waited", seatMapBehind.String(), "seats", len(docs))
	p.replaceSeats(docs, readTime, compare)
	return nil
}

// replaceSeats takes docs, every seat document as read at readTime, in
// place of what the publisher knew (see replace).
func (p *seatMapPublisher) replaceSeats(docs []*firestore.DocumentSnapshot, readTime time.Time, compare bool) {
	old := p.seats
	p.seats = map[string]seatSeen{}
	for _, d := range docs {
		p.seats[d.Ref.ID] = seen(d)
	}
	p.history, p.since, p.checks, p.mismatched = nil, readTime, nil, 0
	p.took(readTime, time.Now())
	missed := 0
	for id, s := range p.seats {
		if o, ok := old[id]; !ok || !o.same(s) {
			missed++
		}
	}
	for id := range old {
		if _, ok := p.seats[id]; !ok {
			missed++
		}
	}
	if missed > 0 && compare {
		p.refreshes++
		p.a.s.o.log.Warn("sale: seat map: a fresh read found seats the listener had missed", "screeningId", p.id, "seats", missed)
	}
}

// take applies a snapshot's changes (come at now), but those of the
// seats miss names (a test hook: see Admitter.seatMapMisses).
func (p *seatMapPublisher) take(snap *firestore.QuerySnapshot, miss func(string) bool, now time.Time) {
	p.snapshots++
	p.changes += len(snap.Changes)
	for _, c := range snap.Changes {
		if miss != nil && miss(c.Doc.Ref.ID) {
			continue
		}
		if c.Kind == firestore.DocumentRemoved {
			p.change(c.Doc.Ref.ID, seatSeen{}, false, snap.ReadTime)
			continue
		}
		p.change(c.Doc.Ref.ID, seen(c.Doc), true, snap.ReadTime)
	}
	p.took(snap.ReadTime, now)
}

// change takes seat id's new state (has: it has a document) from the
// listener's snapshot read at by, and keeps the change for the counts.
func (p *seatMapPublisher) change(id string, s seatSeen, has bool, by time.Time) {
	was, had := p.seats[id]
	if has {
		p.seats[id] = s
	} else {
		delete(p.seats, id)
	}
	p.history = append(p.history, seatChange{id: id, was: was, now: s, had: had, has: has, after: later(p.readTime.Add(-seatMapSettle), was.at), by: by})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// took ends a snapshot read at readTime, come at now (the local clock).
func (p *seatMapPublisher) took(readTime, now time.Time) {
	p.readTime, p.readAt = readTime, now
	p.forget(now)
}

// seatMapKept is how long (by Firestore's clock, before the listener's
// last snapshot) the publisher keeps the changes it took, for the counts
// to come: a count is judged seatMapLag after its answer, and comes a step
// after its read time, now and then a few.
const seatMapKept = 10 * time.Second

// forget drops the changes no count can need: those made seatMapKept
// before the listener's last snapshot, unless a count still to be judged
// was read earlier (back to seatMapRefresh at most), and the counts that
// waited longer than seatMapRefresh. When the counts stop (the admitter's
// steps fail before they count), the changes would otherwise pile up with
// every snapshot for as long as the run lasts; the periodic fresh read
// covers what such a count would find.
func (p *seatMapPublisher) forget(now time.Time) {
	n := 0
	for n < len(p.checks) && now.Sub(p.checks[n].answered) > seatMapRefresh {
		n++
	}
	p.checks = p.checks[n:]
	keep := p.readTime.Add(-seatMapKept)
	if len(p.checks) > 0 && p.checks[0].at.Before(keep) {
		keep = later(p.checks[0].at, p.readTime.Add(-seatMapRefresh))
	}
	drop := 0
	for _, c := range p.history {
		made := c.by
		if c.has {
			made = c.now.at
		}
		if made.After(keep) {
			break
		}
		p.since = later(p.since, made)
		drop++
	}
	p.history = p.history[drop:]
}

// check takes the admitter's count c at now (the local clock) and judges
// the counts due (judge).
func (p *seatMapPublisher) check(c seatCheck, now time.Time) (seatCheck, bool) {
	p.checks = append(p.checks, c)
	return p.judge(now)
}

// seatMapSettle is how far past a count's read time the listener's
// snapshots must have come before the count is judged, and how much
// earlier than the snapshot before a deletion may have been made: the
// emulator's snapshot now and then lacks a write older than its read time
// (up to 53 ms seen under a burst), and brings it in the next.
const seatMapSettle = 250 * time.Millisecond

// seatMapBehind is how long after a count's answer a listener that has not
// reached the count's read time (it still sends, but older changes) is
// judged behind: the emulator's listener trails the store by 6-11 s under
// a burst, and the map with it; a fresh listener reads the seats as they
// are.
const seatMapBehind = 5 * time.Second

// due says whether count c can be judged at now: the listener has shown a
// snapshot read seatMapSettle past c's read time (it has caught up with
// c), or, seatMapLag after c's answer, none for seatMapLag (nothing
// changed: a listener sends nothing then). A listener that trails the
// store still sends snapshots: c waits for it, up to seatMapBehind.
func (p *seatMapPublisher) due(c seatCheck, now time.Time) bool {
	if !p.readTime.Before(c.at.Add(seatMapSettle)) {
		return true
	}
	return now.Sub(c.answered) >= seatMapLag && now.Sub(p.readAt) >= seatMapLag
}

// judge judges the counts that are due: a count agrees when the
// listener's state at its read time has as many seats booked and as many
// held (countsAt); one read before the publisher's changes go back (since)
// tells nothing. A count the listener is still behind seatMapBehind after
// its answer disagrees. It says whether seatMapMismatches counts in a row
// have disagreed, and the last: the listener missed a change, or trails
// the store by seconds, and every seat should be read afresh.
func (p *seatMapPublisher) judge(now time.Time) (seatCheck, bool) {
	judged := 0
	var last seatCheck
	for _, c := range p.checks {
		due := p.due(c, now)
		if !due && now.Sub(c.answered) < seatMapBehind {
			break
		}
		judged++
		if c.at.Before(p.since) {
			continue
		}
		if due && p.agrees(c) {
			p.mismatched = 0
			continue
		}
		p.mismatched++
		last = c
	}
	p.checks = p.checks[judged:]
	if p.mismatched < seatMapMismatches {
		return seatCheck{}, false
	}
	p.mismatched, p.checks = 0, nil
	return last, true
}

// agrees says whether count c agrees with the listener's state at its
// read time.
func (p *seatMapPublisher) agrees(c seatCheck) bool {
	booked, held := p.countsAt(c.at)
	return booked[0] <= c.booked && c.booked <= booked[1] && held[0] <= c.held && c.held <= held[1]
}

// countsAt counts the seats booked and those held at t (heldUntil after
// t) as the listener showed them at t: its seats now, with every change
// made after t undone. A deletion it cannot date either side of t makes
// each count a range, [0] without the seat and [1] with it.
func (p *seatMapPublisher) countsAt(t time.Time) (booked, held [2]int64) {
	type then struct {
		s          seatSeen
		has, maybe bool
	}
	undone := map[string]then{}
	settled := map[string]bool{}
	for i := len(p.history) - 1; i >= 0; i-- {
		c := p.history[i]
		if settled[c.id] {
			continue
		}
		switch c.madeAfter(t) {
		case 1:
			undone[c.id] = then{s: c.was, has: c.had}
		case 0:
			undone[c.id] = then{s: c.was, has: c.had, maybe: true}
			settled[c.id] = true
		default:
			settled[c.id] = true
		}
	}
	add := func(s seatSeen, from int) {
		for i := from; i < 2; i++ {
			if s.status == booking.StatusBooked {
				booked[i]++
			}
			if s.heldUntil.After(t) {
				held[i]++
			}
		}
	}
	for id, s := range p.seats {
		if _, ok := undone[id]; !ok {
			add(s, 0)
		}
	}
	for _, u := range undone {
		switch {
		case u.has && u.maybe:
			add(u.s, 1)
		case u.has:
			add(u.s, 0)
		}
	}
	return booked, held
}

// seen is a seat document as the publisher keeps it.
func seen(doc *firestore.DocumentSnapshot) seatSeen {
	d := doc.Data()
	s := seatSeen{at: doc.UpdateTime, created: doc.CreateTime}
	s.status, _ = d["status"].(string)
	s.heldUntil, _ = d["heldUntil"].(time.Time)
	return s
}

// now estimates Firestore's clock: the last snapshot's read time, plus the
// time since it came.
func (p *seatMapPublisher) now() time.Time { return p.readTime.Add(time.Since(p.readAt)) }

// render is the map at now, and when it next changes by itself (the
// earliest end of a hold; zero: never).
func (p *seatMapPublisher) render(now time.Time) (string, time.Time) {
	b := []byte(strings.Repeat(string(SeatFree), len(p.order)))
	var next time.Time
	for id, s := range p.seats {
		i, ok := p.index[id]
		if !ok {
			continue // not a seat of the layout: nothing to show
		}
		switch {
		case s.status == booking.StatusBooked:
			b[i] = SeatBooked
		case s.status == booking.StatusHeld && now.Before(s.heldUntil):
			b[i] = SeatHeld
			if next.IsZero() || s.heldUntil.Before(next) {
				next = s.heldUntil
			}
		}
	}
	return string(b), next
}

// publish writes the map if it changed, at most once a seatMapEvery, and
// says when to look again.
func (p *seatMapPublisher) publish(ctx context.Context) (time.Duration, error) {
	now := p.now()
	seats, next := p.render(now)
	wait := time.Hour
	if !next.IsZero() {
		wait = next.Sub(now) + 10*time.Millisecond
	}
	if seats == p.shown {
		return wait, nil
	}
	if since := time.Since(p.shownAt); !p.shownAt.IsZero() && since < seatMapEvery && since > -seatMapEvery {
		return seatMapEvery - since, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.a.stepTimeout())
	defer cancel()
	ref := p.a.s.client.Collection(SeatMaps).Doc(p.id)
	sent := false // the commit is sent: it may land, whatever the answer
	err := p.a.s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if !p.a.seatMapUnguarded {
			if err := p.lease.Guard(tx); err != nil {
				return err
			}
		}
		if err := tx.Set(ref, map[string]any{"seats": seats, "updatedAt": firestore.ServerTimestamp}); err != nil {
			return err
		}
		sent = true
		return nil
	}, firestore.MaxAttempts(1))
	if err != nil {
		// A commit that failed may have landed unheard (its answer
		// dropped, its connection reset; the client then retries it and
		// hears "Transaction is invalid or closed", whatever the first
		// did): it counts as a write for the spacing, but shown stays, so
		// the map is written again once the gap has passed. A commit the
		// store answered Canceled is tried again at once, as before (see
		// seatMapCancelledRetries: a second each would stall the map); a
		// failure before the commit wrote nothing, and waits no more.
		if sent && status.Code(err) != codes.Canceled {
			p.shownAt = time.Now()
		}
		return 0, err
	}
	// The local clock spaces the writes: the commit time is not returned
	// by a transaction.
	p.shown, p.shownAt = seats, time.Now()
	p.writes++
	return wait, nil
}
