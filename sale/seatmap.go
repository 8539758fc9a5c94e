package sale

import (
	"context"
	"fmt"
	"slices"
	"sort"
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

// seatMapLag is how long after a count's answer the listener may still
// deliver the state the count saw: a count is judged against every state
// the listener showed from just before it was sent until seatMapLag after
// its answer.
const seatMapLag = 2 * time.Second

// seatMapMismatches is how many counts in a row, each judged on its own
// states, must disagree with the listener before the publisher reads every
// seat afresh.
const seatMapMismatches = 2

// seatCheck is the admitter's count of a sale's seats, taken by a step
// (it reads them every tick anyway, for seatsLeft): the seats booked, and
// those whose heldUntil is after at (Firestore's clock), as the queries of
// countUntil count them. The step sent them at sent and had the answer at
// answered (the local clock). The seat map's publisher checks its
// listener against them: a change the listener missed (the emulator's
// resumed streams can miss one) that changes either count is found within
// a few ticks, not at the next periodic refresh.
type seatCheck struct {
	sent, answered time.Time
	at             time.Time
	booked, held   int64
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

// seatLevel is what the listener showed from a moment (the local clock)
// until the next: the seats booked, and every seat's heldUntil (sorted),
// to count the held at a check's time.
type seatLevel struct {
	from   time.Time
	booked int64
	until  []time.Time
}

// heldAt counts the seats whose heldUntil is after at.
func (l seatLevel) heldAt(at time.Time) int64 {
	i := sort.Search(len(l.until), func(i int) bool { return l.until[i].After(at) })
	return int64(len(l.until) - i)
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
	// The listener's recent states, oldest first, and the admitter's
	// counts not judged yet; mismatched: counts in a row that disagreed.
	// counted: fresh reads the counts asked for.
	levels     []seatLevel
	checks     []seatCheck
	mismatched int
	counted    int
}

type seatSeen struct {
	status    string
	heldUntil time.Time
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
		"refreshesForCounts", p.counted, "refreshesThatFoundMisses", p.refreshes)
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
		p.see(s)
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
	// emulator), when the admitter's counts disagree with it
	// (seatMapMismatches in a row), and every seatMapRefresh: a full read,
	// as anti-entropy against a change a resumed stream never delivered.
	// Each listener's first snapshot replaces what the publisher knew.
	type delivery struct {
		gen  int
		snap *firestore.QuerySnapshot
		err  error
	}
	deliveries := make(chan delivery, 1)
	gen := 0
	var stopListener context.CancelFunc = func() {}
	listen := func() {
		stopListener()
		gen++
		lctx, stop := context.WithCancel(ctx)
		stopListener = stop
		go func(gen int) {
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

	ready, fresh := false, false
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
		case c := <-checks:
			if !ready || fresh { // a fresh read is on its way
				continue
			}
			if p.check(c, time.Now()) {
				p.counted++
				p.a.s.o.log.Info("sale: seat map: the seats' counts disagree with the listener; reading every seat afresh",
					"screeningId", p.id, "booked", c.booked, "held", c.held)
				listen()
				fresh = true
				refresh.Reset(every)
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
			if fresh {
				p.replace(d.snap)
				fresh = false
			} else {
				p.take(d.snap, p.a.seatMapMisses)
			}
			p.level(time.Now())
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
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
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
// place of what the publisher knew, and logs the seats it had wrong.
func (p *seatMapPublisher) replace(snap *firestore.QuerySnapshot) {
	old := p.seats
	p.seats = map[string]seatSeen{}
	p.take(snap, nil)
	missed := 0
	for id, s := range p.seats {
		if old[id] != s {
			missed++
		}
	}
	for id := range old {
		if _, ok := p.seats[id]; !ok {
			missed++
		}
	}
	if missed > 0 {
		p.refreshes++
		p.a.s.o.log.Warn("sale: seat map: a fresh read found seats the listener had missed", "screeningId", p.id, "seats", missed)
	}
}

// take applies a snapshot's changes, but those of the seats miss names
// (a test hook: see Admitter.seatMapMisses).
func (p *seatMapPublisher) take(snap *firestore.QuerySnapshot, miss func(string) bool) {
	p.snapshots++
	p.changes += len(snap.Changes)
	for _, c := range snap.Changes {
		if miss != nil && miss(c.Doc.Ref.ID) {
			continue
		}
		if c.Kind == firestore.DocumentRemoved {
			delete(p.seats, c.Doc.Ref.ID)
			continue
		}
		p.see(c.Doc)
	}
	p.readTime, p.readAt = snap.ReadTime, time.Now()
}

// level records what the listener shows from now on, for the checks.
func (p *seatMapPublisher) level(now time.Time) {
	l := seatLevel{from: now}
	for _, s := range p.seats {
		if s.status == booking.StatusBooked {
			l.booked++
		}
		if !s.heldUntil.IsZero() {
			l.until = append(l.until, s.heldUntil)
		}
	}
	slices.SortFunc(l.until, func(a, b time.Time) int { return a.Compare(b) })
	p.levels = append(p.levels, l)
	p.forget(now)
}

// seatMapKept is how long the publisher keeps its listener's states for
// the counts to come: a count comes after its answer, now and then a step
// later.
const seatMapKept = 10 * time.Second

// forget drops the states no count can need: those before seatMapKept ago
// but the one current then, unless a count still to be judged was sent
// earlier. A count waits at most seatMapRefresh: when the counts stop (the
// admitter's steps fail before they count), the states would otherwise pile
// up with every snapshot, each with every hold's end, for as long as the
// run lasts; the periodic fresh read covers what such a count would find.
func (p *seatMapPublisher) forget(now time.Time) {
	stale := now.Add(-seatMapRefresh)
	n := 0
	for n < len(p.checks) && p.checks[n].answered.Before(stale) {
		n++
	}
	p.checks = p.checks[n:]
	keep := now.Add(-seatMapKept)
	if len(p.checks) > 0 && p.checks[0].sent.Before(keep) {
		keep = p.checks[0].sent
	}
	drop := 0
	for drop+1 < len(p.levels) && !p.levels[drop+1].from.After(keep) {
		drop++
	}
	p.levels = p.levels[drop:]
}

// check takes the admitter's count c at now and judges the counts whose
// states have all come (seatMapLag after their answer): a count agrees
// when some state the listener showed between just before it was sent
// and seatMapLag after its answer has its booked seats, and some such
// state its held ones (its two queries read at two moments). It says
// whether seatMapMismatches counts in a row have disagreed: the listener
// missed a change, and every seat should be read afresh.
func (p *seatMapPublisher) check(c seatCheck, now time.Time) bool {
	p.checks = append(p.checks, c)
	judged := 0
	for _, c := range p.checks {
		if now.Sub(c.answered) < seatMapLag {
			break
		}
		judged++
		// The state current when it was sent, and those that followed
		// until seatMapLag after its answer.
		first := 0
		for i, l := range p.levels {
			if !l.from.After(c.sent) {
				first = i
			}
		}
		booked, held := false, false
		for _, l := range p.levels[first:] {
			if l.from.After(c.answered.Add(seatMapLag)) {
				break
			}
			booked = booked || l.booked == c.booked
			held = held || l.heldAt(c.at) == c.held
		}
		if booked && held {
			p.mismatched = 0
		} else {
			p.mismatched++
		}
	}
	p.checks = p.checks[judged:]
	p.forget(now)
	if p.mismatched < seatMapMismatches {
		return false
	}
	p.mismatched, p.checks = 0, nil
	return true
}

// see takes in a seat document.
func (p *seatMapPublisher) see(doc *firestore.DocumentSnapshot) {
	d := doc.Data()
	s := seatSeen{}
	s.status, _ = d["status"].(string)
	s.heldUntil, _ = d["heldUntil"].(time.Time)
	p.seats[doc.Ref.ID] = s
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
