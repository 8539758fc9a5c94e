package sale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Public is a sale's public document, sales/{screeningId} (CONTRACT §7).
type Public struct {
	State     string    `firestore:"state"`
	OpensAt   time.Time `firestore:"opensAt"`
	Waiting   int64     `firestore:"waiting"`
	Admitted  int64     `firestore:"admitted"` // ever admitted
	Active    int64     `firestore:"active"`   // passes live now
	SeatsLeft int64     `firestore:"seatsLeft"`
	// AdmittedThrough: every place whose order sorts at or before it has
	// been admitted ("" before the first admission).
	AdmittedThrough string    `firestore:"admittedThrough"`
	Marks           []Mark    `firestore:"marks"`
	UpdatedAt       time.Time `firestore:"updatedAt"`
}

// Mark is a point along the waiting line: about Ahead places that have
// not been admitted sort before Order.
type Mark struct {
	Order string `firestore:"order" json:"order"`
	Ahead int64  `firestore:"ahead" json:"ahead"`
}

// admitState is a sale's private admission state, saleStates/{screeningId},
// written only in transactions guarded by the sale's admitter lease, at
// most once a tick.
type admitState struct {
	Admitted int64       `firestore:"admitted"` // admissions ever
	Recent   []admission `firestore:"recent"`   // admissions within the rate window
	Through  string      `firestore:"admittedThrough"`
	// Marks along the later joiners: orders with the number of places
	// before them when laid (the ranking keeps the early joiners' marks).
	Marks    []rankMark `firestore:"marks"`
	MarkedAt time.Time  `firestore:"markedAt"`
	// PublishedAt is when sales/{id} was last written: the time its step
	// read at, until a later transaction reads this document; then, while
	// PublishedLast says this document was written in the publication's
	// commit, that commit's time (the document's update time). The cadence
	// counts from the commit, so that writes a commit made late are still
	// a second apart (CONTRACT §7: at most once per second).
	PublishedAt   time.Time `firestore:"publishedAt"`
	PublishedLast bool      `firestore:"publishedLast"`
	Closed        bool      `firestore:"closed"`
	// OpensAt is the opening of the last valid configuration seen: a sale
	// made invalid while it runs is still published with it.
	OpensAt time.Time `firestore:"opensAt"`
	// Minute is the saleStats minute being counted.
	Minute minuteStats `firestore:"minute"`
	// Writes are the commit times of this document's writes before its
	// last (writeBudget).
	Writes []time.Time `firestore:"writes"`
}

// landed moves PublishedAt to the publication's commit time when this
// document, as read (snap), was written in that commit.
func (st *admitState) landed(snap *firestore.DocumentSnapshot) {
	if st.PublishedLast && snap.Exists() {
		st.PublishedAt, st.PublishedLast = snap.UpdateTime, false
	}
}

// minuteStats is what a saleStats minute is counted from: the levels when
// it began and its expirations so far (CONTRACT §8).
type minuteStats struct {
	Key      string    `firestore:"key"` // YYYYMMDDHHmm, UTC; "" before the first
	Start    time.Time `firestore:"start"`
	Admitted int64     `firestore:"admitted"` // admissions ever, when it began
	Waiting  int64     `firestore:"waiting"`  // places waiting, when it began
	Expired  int64     `firestore:"expired"`  // passes expired in it
}

type admission struct {
	At time.Time `firestore:"at"`
	N  int64     `firestore:"n"`
}

// Tuning of the admitter; not part of the contract.
const (
	rankPage = 500 // early joiners ranked per tick: ahead of any admission rate
	// firstRankPage: the opening's page is smaller, so that the first
	// admissions commit soon after opensAt (issue #31: within 2 s). A sale
	// that may admit more at once admits the rest a tick later, from the
	// next page.
	firstRankPage = 100
	maxBatch      = 500             // admissions per transaction
	expireBatch   = 500             // expirations per transaction
	earlyMarks    = MaxMarks / 2    // marks laid over the early joiners
	markEvery     = 5 * time.Second // a mark at the tail of the line this often
	publishEvery  = time.Second     // sales/{id} at most this often: a change of state
	heartbeat     = 30 * time.Second
	// The numbers of sales/{id} (waiting, admitted, active, seatsLeft,
	// admittedThrough, marks: "about N ahead of you") go out at most every
	// numbersEvery, and a change of state within publishEvery. seatsLeft
	// leaving nothing, or reaching it, counts as a change of state: an
	// admitted page stops listening to the seat map while nothing is free
	// and learns from SaleState when a seat comes free (issue #51).
	// Nobody needs the numbers to learn of their own admission (their
	// place says so). Before CONTRACT §14 every update was a read for each
	// person listening to sales/{id}, and the numbers went out less often
	// still with more than 50,000 people (one second more for each 10,000,
	// up to the heartbeat: 20 s at 200,000); now the people poll SaleState,
	// whose instances read the document at most once a second whatever
	// its writes, so its cadence costs no read per person (issue #51).
	numbersEvery   = 5 * time.Second
	rediscover     = 15 * time.Second
	takeRetry      = 250 * time.Millisecond
	giveUpTimeout  = 2 * time.Second
	discoverWindow = time.Hour // screenings that started longer ago are done
)

// errCrash: a test hook stopped the run as a crash would (leases kept).
var errCrash = errors.New("sale: crashed (test hook)")

// Admitter admits people from the queues of every sale, as the job
// admitQueue. Each sale is admitted under a lease of its own
// (locks/admit-{screeningId}), and every transaction that admits, ranks or
// publishes is guarded by it: of concurrent admitters (a duplicate run, a
// takeover after a crash) one admits a sale at a time, and a stale one
// commits nothing.
type Admitter struct {
	s      *Service
	locker *lock.Locker
	// changed names a sale whose screening changed (watch); buffered.
	changed chan string
	// Test hooks: ignoreLimits admits every head at once (a planted bug
	// for the metering checker); crash stops the run after an admission
	// commit, leaving its leases to end by themselves.
	ignoreLimits bool
	crash        func(admitted int64) bool
	// beforeCount runs in a step after its read time is taken, before its
	// counts.
	beforeCount func()
	// afterCount runs between a step's counts and its admitting
	// transaction; minute says the counts closed a minute.
	afterCount func(minute bool)
	// published runs in a transaction that publishes the sale, after its
	// reads and before its commit: a test makes the commit land late.
	published func()
	// lapsedReleaseFails: releasing a lapsed lease never gets through, as
	// on a store too loaded to commit it in time.
	lapsedReleaseFails bool
	// seatMapUnguarded: the seat map is written without the lease's guard
	// (a planted bug: a stale admitter overwrites it).
	seatMapUnguarded bool
	// seatMapMisses: the seat map's listener drops the changes of the
	// seats it names (never a new listener's first snapshot), as a resumed
	// stream that never delivered them would. seatMapRefresh, when set,
	// is how often it reads every seat whatever it sees, in place of the
	// constant of that name.
	seatMapMisses  func(seat string) bool
	seatMapRefresh time.Duration
	// seatMapDeaf: the seat map's listeners it names (1 the first, 2 the
	// next, ...) send nothing, not even a first snapshot, as the emulator's
	// listeners did for half a minute under a burst.
	seatMapDeaf func(listener int) bool
	metrics     *admitMetrics
}

// Admitter returns an admitter with an owner ID of its own.
func (s *Service) Admitter() (*Admitter, error) {
	l, err := lock.New(s.client, Locks, lock.WithLeaseDuration(s.o.lease), lock.WithMeterProvider(s.o.meter.mp))
	if err != nil {
		return nil, err
	}
	return &Admitter{s: s, locker: l, changed: make(chan string, 16), metrics: newAdmitMetrics(s.o.meter.mp)}, nil
}

// saleRun is what one run knows of a sale it admits.
type saleRun struct {
	id    string
	lease *lock.Lease
	// lapsed is a lease this run stopped using because its keep-alive could
	// not confirm a renewal in time. A renewal may still have landed
	// unheard, so it can stand in Firestore for a while yet, and the lock
	// is not reentrant: a take that finds it still standing releases it
	// (conditionally: only while it is still this acquisition) and tries
	// again; one that ended is taken over as any ended lease is.
	lapsed  *lock.Lease
	ctx     context.Context // ends when the lease is lost
	sctx    context.Context // the step under way: ctx, with the step's deadline
	stop    func()
	st      admitState // as of this run's last commit
	rank    rankState  // as of this run's last commit
	counter bool       // the tickets-sold counter has its shards
	bad     string     // the misconfiguration last logged
	last    *Public    // as last published by this run
	line    *line      // the head of the waiting line, as this run read it (nil: nothing known)
	// pending: when (Firestore's clock) numbers or a state this run knows
	// but did not publish yet may go out (zero: nothing pending). The step
	// looks again then, so that an idle sale's change of state waits for
	// publishEvery, not for the idle tick.
	pending time.Time
	// held: when (Firestore's clock) the sale's state may be written
	// again, its write budget spent (zero: now); the step waits for it,
	// writing nothing. rankHeld: the same for the ranking; the step goes on
	// without a new page, and looks again then.
	held, rankHeld time.Time
	due            time.Time // when to step it next (local clock: scheduling only)
	// seatCounts takes the step's counts of booked and held seats to the
	// seat map's publisher, which checks its listener against them (nil:
	// no publisher runs; see seatCheck).
	seatCounts chan seatCheck
}

// Run admits until the local clock reaches until (the next tick of the
// job's schedule), or, with until zero, makes one pass over every sale and
// returns. A sale another admitter holds is left to it (and taken over
// when its lease ends). Leases are released at the end, so the next run
// goes on at once.
func (a *Admitter) Run(ctx context.Context, until time.Time) error {
	runs := map[string]*saleRun{}
	finished := map[string]bool{}
	crashed := false
	defer func() {
		for _, r := range runs {
			a.drop(r, !crashed)
			if r.lapsed != nil && !crashed {
				a.giveUp(r)
			}
		}
	}()
	var discovered time.Time
	for {
		if discovered.IsZero() || time.Since(discovered) >= rediscover {
			ids, err := a.discover(ctx)
			if err != nil && until.IsZero() {
				return err
			}
			if err != nil {
				a.s.o.log.Warn("sale: admitter: list sales", "error", err.Error())
			}
			for _, id := range ids {
				if runs[id] == nil && !finished[id] {
					runs[id] = &saleRun{id: id}
				}
			}
			discovered = time.Now()
		}
		wake := a.s.o.idleTick
		var errs []error
		for id, r := range runs {
			if left := time.Until(r.due); left > 0 { // each sale on its own ticks
				wake = min(wake, left)
				continue
			}
			if r.lease == nil {
				held, err := a.take(ctx, r, !until.IsZero())
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if !held {
					wake = min(wake, takeRetry)
					continue
				}
			}
			var cancel context.CancelFunc
			r.sctx, cancel = context.WithTimeout(r.ctx, a.stepTimeout())
			w, done, err := a.step(r)
			if err == nil && !done && until.IsZero() {
				err = a.publishSeatMapOnce(r.sctx, r.id, r.lease)
			}
			cancel()
			switch {
			case errors.Is(err, errCrash):
				crashed = true
				return err
			case err != nil && r.ctx.Err() != nil: // the lease was lost: take it again soon
				a.s.o.log.Warn("sale: admitter lost its lease", "screeningId", id, "error", context.Cause(r.ctx).Error())
				r.lapsed = r.lease
				a.drop(r, false)
				r.due = time.Time{}
				wake = min(wake, takeRetry)
				continue
			case err != nil:
				a.s.o.log.Warn("sale: admitter step failed", "screeningId", id, "error", err.Error())
				errs = append(errs, fmt.Errorf("sale %s: %w", id, err))
				w = a.s.o.tick
			}
			if done {
				a.drop(r, true)
				delete(runs, id)
				finished[id] = true
				continue
			}
			r.due = time.Now().Add(w)
			wake = min(wake, w)
		}
		if until.IsZero() {
			return errors.Join(errs...)
		}
		left := time.Until(until)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(max(min(wake, left), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case id := <-a.changed:
			t.Stop()
			if r := runs[id]; r != nil { // look at it now: an operator or admin changed it
				r.due = time.Time{}
			}
		case <-t.C:
		}
	}
}

// watch wakes the run the moment the screening of sale r changes (a pause,
// a resume, a close, a new rate or maxActive: CONTRACT §7a wants them
// within 2 s, and an idle sale is stepped only every idle tick). It ends
// with ctx. Each change costs one read; nothing is decided on it: the step
// reads the screening again.
func (a *Admitter) watch(ctx context.Context, id string) {
	it := a.s.client.Collection(booking.Screenings).Doc(id).Snapshots(ctx)
	defer it.Stop()
	first := true
	for {
		if _, err := it.Next(); err != nil {
			return // ctx ended, or the listener failed: the ticks still step it
		}
		if first {
			first = false
			continue
		}
		select {
		case a.changed <- id:
		default: // a wake-up is pending already
		}
	}
}

// discover lists the sales to look after: screenings with a sale that have
// not started, or started within the last hour (they are closed then).
// The filter on startsAt is the local clock's, for listing only: every
// decision is taken on Firestore's.
func (a *Admitter) discover(ctx context.Context) ([]string, error) {
	snaps, err := a.s.client.Collection(booking.Screenings).Where("startsAt", ">=", time.Now().Add(-discoverWindow)).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range snaps {
		if a.s.Gated(s) {
			ids = append(ids, s.Ref.ID)
		}
	}
	return ids, nil
}

func (a *Admitter) stateRef(id string) *firestore.DocumentRef {
	return a.s.client.Collection(States).Doc(id)
}

// stepTimeout bounds a step (and a take): a fault cannot stall the run's
// loop, which looks after every sale in turn, for longer (issue #29.12).
// It is the lease's length up to 10 s: a 30-s lease (DefaultAdmitterLease)
// tolerates slow renewals, not a 30-s stall of every sale behind one.
func (a *Admitter) stepTimeout() time.Duration {
	return max(min(a.s.o.lease, 10*time.Second), 5*time.Second)
}

// take tries the sale's admitter lease once; false: another admitter
// holds it. It is bounded like a step: the lease's own RPCs end after
// about a lease, and an unanswered grant is settled before it returns.
func (a *Admitter) take(runCtx context.Context, r *saleRun, long bool) (bool, error) {
	ctx, cancel := context.WithTimeout(runCtx, a.stepTimeout())
	defer cancel()
	key := "admit-" + r.id
	lease, err := a.locker.TryAcquire(ctx, key)
	// Held by our own lapsed lease (a renewal landed unheard): give it up
	// and try again. A lapsed lease that ended meanwhile is simply taken
	// over, so a release that cannot get through never holds a take up.
	var held *lock.HeldError
	if errors.As(err, &held) && r.lapsed != nil && held.Holders[0].Owner == a.locker.Owner() && a.giveUp(r) {
		lease, err = a.locker.TryAcquire(ctx, key)
	}
	if errors.Is(err, lock.ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.lapsed = nil // released, or ended and taken over by this grant
	var st admitState
	var rs rankState
	// sales/{id} as published (by the run before, most often): a new run
	// publishes again only what changed, not once more on taking the sale.
	var last *Public
	snaps, err := a.s.client.GetAll(ctx, []*firestore.DocumentRef{a.stateRef(r.id), a.rankingRef(r.id), a.s.client.Collection(Sales).Doc(r.id)})
	if err == nil {
		err = errors.Join(decode(snaps[0], &st), decode(snaps[1], &rs))
	}
	if err != nil {
		lease.Release(ctx)
		return false, err
	}
	var p Public
	if snaps[2].Exists() && snaps[2].DataTo(&p) == nil && p.State != StateClosed {
		last = &p
	}
	r.lease, r.st, r.rank, r.last, r.pending, r.line = lease, st, rs, last, time.Time{}, nil
	r.seatCounts = nil
	if long {
		r.seatCounts = make(chan seatCheck, 1)
	}
	checks := r.seatCounts
	kctx, stopKeepAlive := lease.KeepAlive(runCtx)
	wctx, stopWatch := context.WithCancel(kctx)
	var watched sync.WaitGroup
	watched.Add(2)
	go func() {
		defer watched.Done()
		a.watch(wctx, r.id)
	}()
	go func() {
		defer watched.Done()
		if long { // a one-pass run publishes the seat map in its step
			a.publishSeatMap(wctx, r.id, lease, checks)
		}
	}()
	r.ctx, r.stop = kctx, func() {
		stopWatch()
		watched.Wait()
		stopKeepAlive()
	}
	return true, nil
}

// giveUp releases the run's lapsed lease, if it is still this
// acquisition's; true once it is gone (released, or found ended or taken
// over). On a failure it is tried again at the next take.
func (a *Admitter) giveUp(r *saleRun) bool {
	ctx, cancel := context.WithTimeout(context.Background(), giveUpTimeout)
	defer cancel()
	var err error
	if a.lapsedReleaseFails {
		err = errors.New("sale: a lapsed lease's release did not get through (test hook)")
	} else {
		err = r.lapsed.Release(ctx)
	}
	if err != nil && !errors.Is(err, lock.ErrNotHeld) {
		a.s.o.log.Warn("sale: admitter: release a lapsed lease", "screeningId", r.id, "error", err.Error())
		return false
	}
	r.lapsed = nil
	return true
}

// drop stops renewing the sale's lease and, if release, gives it up.
func (a *Admitter) drop(r *saleRun, release bool) {
	a.metrics.forget(r.id)
	if r.lease == nil {
		return
	}
	r.stop()
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.lease.Release(ctx) // a lease not released ends by itself
		cancel()
	}
	r.lease = nil
}

// counts are the aggregations a step reads outside its transaction.
type counts struct {
	waiting    int64 // places waiting
	booked     int64 // seats booked
	held       int64 // seats under live holds
	seats      int64 // seats in the hall (0: unknown, the screening is malformed)
	live       int64 // passes live (an estimate for the heads' query)
	at         time.Time
	admittedAt int64 // r.st.Admitted when counted
	// minute: the holds and bookings made in the saleStats minute being
	// counted, read when that minute is over (nil before).
	minute *minuteCounts
}

// minuteCounts are a saleStats minute's counts that only a query finds.
type minuteCounts struct {
	key                        string
	end                        time.Time // the counts' stretch ends here: the next minute begins here
	holds, bookings            int64
	revenue, refunds, latePaid int64 // with Takings
}

func (c counts) soldOut() bool { return c.seats > 0 && c.booked >= c.seats }

// mode is what a step may do with a sale.
type mode struct {
	cfg Config // the configuration, or, while invalid, what is known of it
	// paused: nobody is admitted (an operator paused the sale, or its
	// configuration is invalid); passes still expire and the sale is still
	// published, and closed at its start.
	paused bool
	valid  bool // the configuration is valid
}

// step looks after one sale once: it ranks early joiners (from opensAt on),
// admits who may be admitted, expires ended passes, publishes, and writes
// the sale's minute figures. It returns when to look again, and done when
// the sale needs no more looking after (closed, or gone).
func (a *Admitter) step(r *saleRun) (time.Duration, bool, error) {
	ctx, o := r.sctx, a.s.o
	snap, err := a.s.client.Collection(booking.Screenings).Doc(r.id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	t0 := snap.ReadTime
	cfg, err := a.s.config(snap)
	if errors.Is(err, ErrNoSale) {
		return 0, true, nil
	}
	sc, scErr := booking.DecodeScreening(snap)
	if err == nil && scErr != nil {
		err = fmt.Errorf("%w: screening %q: %v", ErrMisconfigured, r.id, scErr)
	}
	m := mode{cfg: cfg, valid: err == nil, paused: controlOf(snap).Paused}
	if err != nil {
		// A sale made invalid while it runs (by hand, not through Operate)
		// stops new admissions only: passes still expire, the sale is still
		// published (as paused) and closed at its start (CONTRACT §7a).
		if err.Error() != r.bad {
			o.log.Error("sale: admitting nobody new: the sale is misconfigured; passes still expire and the sale still closes at its start",
				"screeningId", r.id, "error", err.Error())
			r.bad = err.Error()
		}
		m.paused = true
		m.cfg = Config{OpensAt: r.st.OpensAt}
		if at, ok := snap.Data()["sale"].(map[string]any)["opensAt"].(time.Time); ok {
			m.cfg.OpensAt = at
		}
	} else if r.bad != "" {
		o.log.Info("sale: the sale's configuration is valid again; admitting", "screeningId", r.id)
		r.bad = ""
	}
	r.held, r.rankHeld = time.Time{}, time.Time{}
	if startsAt, ok := snap.Data()["startsAt"].(time.Time); (ok && !t0.Before(startsAt)) || controlOf(snap).Closed {
		if err := a.close(r, m.cfg, sc, scErr == nil); err != nil {
			// Not done: a close that failed (a count or its commit cut
			// off) is tried again a tick later, not left to the next run.
			return 0, false, err
		}
		if r.held.IsZero() {
			return 0, true, nil
		}
		return max(r.held.Sub(t0)+10*time.Millisecond, 10*time.Millisecond), false, nil // the budget, or the second since the last publication: close a moment later
	}
	if m.valid && !r.counter {
		if err := a.ensureCounter(ctx, r.id, cfg); err != nil {
			return 0, false, err
		}
		r.counter = true
	}

	opened := m.valid && !t0.Before(cfg.OpensAt.Add(o.joinWindow))
	if opened {
		ranked := r.rank.Ranked
		if err := a.rank(r); err != nil {
			return 0, false, err
		}
		if r.rank.Ranked != ranked {
			r.line = nil // a straggler may sort before places the run knows
		}
	}

	if a.beforeCount != nil {
		a.beforeCount()
	}
	c, err := a.count(ctx, r, sc, scErr == nil, t0)
	if err != nil {
		return 0, false, err
	}
	if a.afterCount != nil {
		a.afterCount(c.minute != nil)
	}
	offerSeatCheck(r.seatCounts, seatCheck{answered: time.Now(), at: t0.Truncate(time.Microsecond), booked: c.booked, held: c.held})
	var heads []*firestore.DocumentSnapshot
	if opened && !m.paused && !c.soldOut() {
		free := int64(min(maxBatch, cfg.MaxActive-int(c.live), cfg.AdmitPerMinute-int(inWindow(r.st.Recent, t0, o.rateWindow))))
		if a.ignoreLimits {
			free = maxBatch
		}
		bound := ""
		switch {
		case r.rank.Done:
			bound = lateBound(t0.Add(-o.joinWindow))
		case r.rank.Frontier != "":
			bound = earlyOrder(r.rank.Frontier)
		}
		if free > 0 && bound != "" && c.waiting > 0 {
			if heads, err = a.heads(ctx, r, bound, int(free)); err != nil {
				return 0, false, err
			}
		}
	}
	if err := a.admit(r, m, c, heads); err != nil {
		return 0, false, err
	}
	if a.crash != nil && a.crash(r.st.Admitted) {
		return 0, false, errCrash
	}

	// When to look again: at the opening, and every tick while anyone
	// waits or holds a pass: a pass that ends or turns done is refilled
	// within a tick, and the sale's documents take at most a write a tick.
	// A change to the screening wakes the run at once (watch).
	wake := o.idleTick
	if !opened && m.valid {
		wake = min(wake, cfg.OpensAt.Add(o.joinWindow).Sub(t0))
	}
	if c.waiting > 0 || c.live > 0 || (opened && !r.rank.Done) {
		wake = min(wake, o.tick)
	}
	if !r.pending.IsZero() {
		wake = min(wake, r.pending.Sub(t0)+10*time.Millisecond) // a publication held back by its cadence
	}
	if next := o.minuteStart(t0).Add(o.minute).Sub(t0); r.st.Minute.Key != "" {
		wake = min(wake, next+10*time.Millisecond) // the minute's figures on time
	}
	if !r.rankHeld.IsZero() {
		wake = min(wake, r.rankHeld.Sub(t0)+10*time.Millisecond) // the next page then
	}
	if !r.held.IsZero() {
		// This step wrote nothing: it is all still to do, once it may.
		wake = r.held.Sub(t0) + 10*time.Millisecond
	}
	return max(wake, 10*time.Millisecond), false, nil
}

// minuteKey names the saleStats minute of t: YYYYMMDDHHmm in UTC (with
// seconds, YYYYMMDDHHmmss, for the shorter minutes of tests).
func (o options) minuteKey(t time.Time) string {
	if o.minute == time.Minute {
		return t.UTC().Truncate(time.Minute).Format("200601021504")
	}
	return o.minuteStart(t).Format("20060102150405")
}

func (o options) minuteStart(t time.Time) time.Time { return t.UTC().Truncate(o.minute) }

// Stats holds each sale's minute figures: saleStats/{screeningId}/minutes/{YYYYMMDDHHmm}.
const Stats = "saleStats"

// Minute is a sale's figures for one minute (CONTRACT §8): the levels at
// its end, and the counts within it. Written by the admitter once the
// minute is over, in its guarded transaction; a minute during which no
// admitter looked after the sale is counted into the next one it writes.
type Minute struct {
	At        time.Time `firestore:"at" json:"at"`
	Waiting   int64     `firestore:"waiting" json:"waiting"`
	Admitted  int64     `firestore:"admitted" json:"admitted"`
	Active    int64     `firestore:"active" json:"active"`
	SeatsLeft int64     `firestore:"seatsLeft" json:"seatsLeft"`
	// SeatsHeld and SeatsSold split the taken seats at the minute's end:
	// under live holds, and booked (seatsLeft is the rest of the hall).
	SeatsHeld  int64 `firestore:"seatsHeld" json:"seatsHeld"`
	SeatsSold  int64 `firestore:"seatsSold" json:"seatsSold"`
	Joins      int64 `firestore:"joins" json:"joins"`
	Admissions int64 `firestore:"admissions" json:"admissions"`
	Holds      int64 `firestore:"holds" json:"holds"`
	Bookings   int64 `firestore:"bookings" json:"bookings"`
	Expired    int64 `firestore:"expired" json:"expired"`
	// Revenue and Refunds are the amounts paid and refunded within the
	// minute, in the currency's smallest unit, and LatePayments the late
	// payments booked (CONTRACT §10; zero for a free screening).
	Revenue      int64 `firestore:"revenue" json:"revenue"`
	Refunds      int64 `firestore:"refunds" json:"refunds"`
	LatePayments int64 `firestore:"latePayments" json:"latePayments"`
}

// inWindow counts the admissions within the rate window before now.
func inWindow(recent []admission, now time.Time, window time.Duration) int64 {
	var n int64
	for _, ad := range recent {
		if ad.At.After(now.Add(-window)) {
			n += ad.N
		}
	}
	return n
}

func (a *Admitter) queue(id string) firestore.Query {
	return a.s.client.Collection(Queue).Where("screeningId", "==", id)
}

// count reads the aggregations a step needs, outside any read-write
// transaction (a count inside one would lock the seats and the line it
// counts). now is a time Firestore has read at (the step's read time of the
// screening): the seats booked and held are counted as they were at now
// (seatsAt), for the seat map's publisher to judge its listener by. When the
// saleStats minute being counted is over, it also counts the holds and
// bookings made in it (two more aggregations, once a minute).
func (a *Admitter) count(ctx context.Context, r *saleRun, sc booking.Screening, known bool, now time.Time) (counts, error) {
	return a.countUntil(ctx, r, sc, known, now, false)
}

// countUntil is count; closing counts the last minute up to now, which is
// then the local clock's (possibly ahead of Firestore's: no read at it), and
// the seats as they are.
func (a *Admitter) countUntil(ctx context.Context, r *saleRun, sc booking.Screening, known bool, now time.Time, closing bool) (counts, error) {
	seats := a.s.client.Collection(booking.Screenings).Doc(r.id).Collection("seats")
	c := counts{at: now, admittedAt: r.st.Admitted}
	if known {
		c.seats = int64(len(sc.Rows) * sc.SeatsPerRow)
	}
	var errs [7]error
	var wg sync.WaitGroup
	wg.Go(func() { c.waiting, errs[0] = countOf(ctx, a.queue(r.id).Where("status", "==", StatusWaiting), nil) })
	if closing {
		wg.Go(func() { c.booked, errs[1] = countOf(ctx, seats.Where("status", "==", booking.StatusBooked), nil) })
		wg.Go(func() { c.held, errs[2] = countOf(ctx, seats.Where("heldUntil", ">", now), nil) })
	} else {
		wg.Go(func() { c.booked, c.held, c.live, errs[1] = a.seatsAt(ctx, r.id, seats, now) })
	}
	if closing {
		wg.Go(func() { c.live, errs[3] = a.live(ctx, r.id, now, nil) })
	}
	if m := r.st.Minute; m.Key != "" && (closing || a.s.o.minuteKey(now) > m.Key) {
		// Made from the minute's start until now: a minute no admitter
		// looked after is counted into this one.
		end := a.s.o.minuteStart(now)
		if closing {
			end = now
		}
		mc := &minuteCounts{key: m.Key, end: end}
		made := func(coll string) firestore.Query {
			return a.s.client.Collection(coll).Where("screeningId", "==", r.id).Where("createdAt", ">=", m.Start).Where("createdAt", "<", end)
		}
		wg.Go(func() { mc.holds, errs[4] = countOf(ctx, made(booking.Holds), nil) })
		wg.Go(func() { mc.bookings, errs[5] = countOf(ctx, made(booking.Bookings), nil) })
		if t := a.s.o.takings; t != nil {
			wg.Go(func() { mc.revenue, mc.refunds, mc.latePaid, errs[6] = t.Takings(ctx, r.id, m.Start, end) })
		}
		c.minute = mc
	}
	wg.Wait()
	return c, errors.Join(errs[:]...)
}

// seatsAt counts the seats booked, the seats held at t (heldUntil after t)
// and the passes live at t as they were at t, a time Firestore has read at:
// all in one read-only transaction at read time t (the only way the Go
// client runs an aggregation at a read time: AggregationQuery.Get ignores a
// query's WithReadOptions), which locks nothing. The seat map's publisher
// compares the seats with its listener's state at exactly t (seatCheck).
// The passes are of the same state: a booking of the last seats ends its
// pass in the same commit, so a step never sees the pass gone and the seats
// still free, and admits nobody into a sale that is sold out
// (TestNobodyIsAdmittedByCountsThatStraddleTheLastBooking).
func (a *Admitter) seatsAt(ctx context.Context, id string, seats *firestore.CollectionRef, t time.Time) (booked, held, live int64, err error) {
	t = t.Truncate(time.Microsecond) // Firestore refuses a finer read time
	err = a.s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		var errs [3]error
		var wg sync.WaitGroup
		wg.Go(func() { booked, errs[0] = countOf(ctx, seats.Where("status", "==", booking.StatusBooked), tx) })
		wg.Go(func() { held, errs[1] = countOf(ctx, seats.Where("heldUntil", ">", t), tx) })
		wg.Go(func() { live, errs[2] = a.live(ctx, id, t, tx) })
		wg.Wait()
		return errors.Join(errs[:]...)
	}, firestore.TransactionReadTime(t))
	return booked, held, live, err
}

// live counts the passes live at now: admitted, passUntil after now.
func (a *Admitter) live(ctx context.Context, id string, now time.Time, tx *firestore.Transaction) (int64, error) {
	return countOf(ctx, a.queue(id).Where("status", "==", StatusAdmitted).Where("passUntil", ">", now), tx)
}

// countOf runs a count aggregation: one read per 1000 index entries.
func countOf(ctx context.Context, q firestore.Query, tx *firestore.Transaction) (int64, error) {
	aq := q.NewAggregationQuery().WithCount("n")
	if tx != nil {
		aq = aq.Transaction(tx)
	}
	res, err := aq.Get(ctx)
	if err != nil {
		return 0, err
	}
	v, _ := res["n"].(*pb.Value)
	return v.GetIntegerValue(), nil
}

// line is what a run knows of the head of a sale's waiting line, so that
// each waiting place is read by a query once, not once a tick until it is
// admitted (issue #51: the 16 shards' heads read afresh for every refill
// cost 23 reads an admission). For each shard it keeps the waiting places
// read, in order, and the order through which they are all of the shard's:
// every waiting place of shard s whose order sorts at or before known[s]
// is in places[s] (as read; a place taken since is dropped).
//
// That stays true while the run holds the lease, since nothing else
// admits, and a place never gets an order at or before a bound the run has
// read through: a later joiner's order is its join time, and the bound
// leaves out the joins still in their window; an early joiner's is
// ranked, by this run, after the frontier. The run forgets the line when
// it ranks (a straggler may sort before places it knows) and when it
// takes the lease (another admitter may have admitted meanwhile). A place
// that left the line otherwise (an operator's revoke) is found so by the
// admitting transaction, which reads every place it admits. A join whose
// commit overran its window breaks it (it lands behind what was read
// through): heads checks a kept line with a count before using it.
type line struct {
	places [Shards][]*firestore.DocumentSnapshot
	known  [Shards]string // "": nothing known yet
}

// headRounds bounds the queries of one heads call: each round reads the
// shards whose known part holds the merge back.
const headRounds = 4

// heads returns up to want waiting places in admission order with order
// at or before bound: the heads of the line's shards, merged, from what
// the run knows of the line (r.line), reading only the shards whose known
// part ends before bound and holds the merge back, from where it ends. A
// shard's page is a share of want and two more, so that a refill of one
// reads a couple of places of each shard once, not every shard each time.
//
// A line kept from an earlier tick is checked first, with one count: a
// join whose commit overran its window (the server got it late) lands
// with an order the run may have read through already, and a query from
// where the shard is known would never find it; before issue #51 the next
// tick's fresh queries admitted it first. So the waiting places at or
// before the front are counted, and a count that differs from those the
// line holds (a late landing, or one revoked or admitted unheard) makes
// the run forget the line and read it afresh: such a place is admitted
// within a tick, as before (TestALaterJoinWhoseCommitLandsLateIsStillAdmittedFirst).
func (a *Admitter) heads(ctx context.Context, r *saleRun, bound string, want int) ([]*firestore.DocumentSnapshot, error) {
	kept := r.line != nil
	ready, front, err := a.readHeads(ctx, r, bound, want)
	if err != nil || !kept || front == "" {
		return ready[:min(len(ready), want)], err
	}
	n, err := countOf(ctx, a.queue(r.id).Where("status", "==", StatusWaiting).Where("order", "<=", front), nil)
	if err != nil {
		return nil, err
	}
	if n != int64(len(ready)) {
		a.s.o.log.Info("sale: the waiting line changed behind what the admitter read of it; reading it again",
			"screeningId", r.id, "waitingThrough", n, "known", len(ready), "through", front)
		r.line = nil
		if ready, _, err = a.readHeads(ctx, r, bound, want); err != nil {
			return nil, err
		}
	}
	return ready[:min(len(ready), want)], nil
}

// readHeads is heads from what the run knows of the line: every waiting
// place it knows at or before front (the order through which every shard
// is known), in order, and front.
func (a *Admitter) readHeads(ctx context.Context, r *saleRun, bound string, want int) ([]*firestore.DocumentSnapshot, string, error) {
	if r.line == nil {
		r.line = &line{}
	}
	l := r.line
	per := want/Shards + 2
	for round := 0; ; round++ {
		// Every place at or before front is known, in every shard.
		front := bound
		for s := range Shards {
			front = min(front, l.known[s])
		}
		var ready []*firestore.DocumentSnapshot
		for s := range Shards {
			for _, p := range l.places[s] {
				if orderOf(p) > front {
					break
				}
				ready = append(ready, p)
			}
		}
		slices.SortFunc(ready, func(x, y *firestore.DocumentSnapshot) int { return cmp.Compare(orderOf(x), orderOf(y)) })
		if len(ready) >= want || front >= bound || round == headRounds {
			return ready, front, nil
		}
		var errs [Shards]error
		var wg sync.WaitGroup
		for s := range Shards {
			// A shard known through bound has nothing more to give; one
			// with a page in hand beyond the front gives it next round.
			if l.known[s] >= bound || (l.known[s] > front && len(l.places[s]) >= per) {
				continue
			}
			wg.Go(func() {
				q := a.queue(r.id).Where("status", "==", StatusWaiting).Where("shard", "==", s)
				if l.known[s] != "" {
					q = q.Where("order", ">", l.known[s])
				}
				docs, err := q.Where("order", "<=", bound).OrderBy("order", firestore.Asc).Limit(per).Documents(ctx).GetAll()
				if err != nil {
					errs[s] = err
					return
				}
				l.places[s] = append(l.places[s], docs...)
				if len(docs) < per {
					l.known[s] = bound
				} else {
					l.known[s] = orderOf(docs[len(docs)-1])
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			r.line = nil // a shard's page may be half taken in: read the line afresh
			return nil, "", err
		}
	}
}

// taken drops the places an admitting transaction read from the line:
// each is admitted now, or was found out of the line.
func (l *line) taken(ids map[string]bool) {
	if l == nil || len(ids) == 0 {
		return
	}
	for s := range Shards {
		l.places[s] = slices.DeleteFunc(l.places[s], func(p *firestore.DocumentSnapshot) bool { return ids[p.Ref.ID] })
	}
}

func orderOf(s *firestore.DocumentSnapshot) string {
	o, _ := s.Data()["order"].(string)
	return o
}

// readState reads a sale's private document at ref in tx into v (zero
// when missing).
func readState(tx *firestore.Transaction, ref *firestore.DocumentRef, v any) (*firestore.DocumentSnapshot, error) {
	snap, err := tx.Get(ref)
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	return snap, decode(snap, v)
}

// decode decodes snap into v, leaving v as it is when snap is missing.
func decode(snap *firestore.DocumentSnapshot, v any) error {
	if snap == nil || !snap.Exists() {
		return nil
	}
	return snap.DataTo(v)
}

// admit is a step's one guarded transaction: it writes the last minute's
// figures once it is over, expires ended passes, admits as many of heads
// as maxActive and the rate window allow (judged at its read time; none
// while paused), lays a mark at the tail of the line now and then, and
// publishes the sale (at most once per publishEvery).
func (a *Admitter) admit(r *saleRun, m mode, c counts, heads []*firestore.DocumentSnapshot) error {
	ctx, o, cfg := r.sctx, a.s.o, m.cfg
	var st admitState
	var pub, cur *Public // published now; the numbers as of now
	var pending time.Time
	var held time.Time
	var taken map[string]bool // the places read to be admitted: off the line, one way or the other
	err := a.s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		pub, cur, st, pending, held, taken = nil, nil, admitState{}, time.Time{}, time.Time{}, nil
		stSnap, err := readState(tx, a.stateRef(r.id), &st)
		if err != nil {
			return err
		}
		if err := r.lease.Guard(tx); err != nil {
			return err
		}
		st.landed(stSnap)
		now := stSnap.ReadTime
		if !o.budget.allows(st.Writes, stSnap, now) {
			// The state has taken its writes for the window: this step
			// admits, expires and publishes nothing; the next one, once it
			// may write, does it all.
			held = o.budget.from(st.Writes, stSnap)
			return nil
		}
		// The screening again, in the transaction: a pause or a new
		// configuration that commits before this admission decides it, and
		// one that comes after waits for it (the read's lock), so nobody is
		// admitted past a pause, or past a lowered maxActive or rate.
		scSnap, err := tx.Get(a.s.client.Collection(booking.Screenings).Doc(r.id))
		if err != nil {
			return err
		}
		paused := m.paused || controlOf(scSnap).Paused || controlOf(scSnap).Closed
		if fresh, err := a.s.config(scSnap); err != nil {
			paused = true
		} else if m.valid {
			cfg = fresh
		}

		// Every read first (a transaction reads before it writes).
		ended, err := tx.Documents(a.queue(r.id).Where("status", "==", StatusAdmitted).Where("passUntil", "<=", now).
			OrderBy("passUntil", firestore.Asc).Limit(expireBatch)).GetAll()
		if err != nil {
			return err
		}
		live, err := a.live(ctx, r.id, now, tx)
		if err != nil {
			return err
		}
		recent := slices.DeleteFunc(slices.Clone(st.Recent), func(ad admission) bool { return !ad.At.After(now.Add(-o.rateWindow)) })
		free := min(int64(cfg.MaxActive)-live, int64(cfg.AdmitPerMinute)-inWindow(recent, now, o.rateWindow))
		if a.ignoreLimits {
			free = int64(len(heads))
		}
		if paused {
			free = 0
		}
		var places []*firestore.DocumentSnapshot
		if free > 0 && len(heads) > 0 {
			take := heads[:min(int64(len(heads)), free)]
			refs := make([]*firestore.DocumentRef, len(take))
			taken = make(map[string]bool, len(take))
			for i, h := range take {
				refs[i] = h.Ref
				taken[h.Ref.ID] = true
			}
			if places, err = tx.GetAll(refs); err != nil {
				return err
			}
		}

		changed := len(recent) != len(st.Recent)
		// The minute's figures, once it is over: levels as counted now,
		// counts since it began (before this transaction's own expirations
		// and admissions, which belong to the new minute).
		start := o.minuteStart(now)
		if st.Minute.Key != "" && c.minute != nil && c.minute.key == st.Minute.Key && o.minuteKey(now) > st.Minute.Key {
			if err := tx.Set(a.minuteRef(r.id, st.Minute.Key), figures(st, c, live, now)); err != nil {
				return err
			}
			st.Minute = minuteStats{}
			// The next minute begins where the counts ended, though this
			// transaction may run minutes later (a stalled step): nothing
			// made in between is left out of every minute. A minute it
			// runs past is counted into that one, as a minute no admitter
			// looked after is.
			start = c.minute.end
		}
		if st.Minute.Key == "" {
			st.Minute = minuteStats{Key: o.minuteKey(start), Start: start, Admitted: st.Admitted, Waiting: c.waiting}
			changed = true
		}
		if m.valid && !st.OpensAt.Equal(cfg.OpensAt) {
			st.OpensAt = cfg.OpensAt
			changed = true
		}
		st.Minute.Expired += int64(len(ended))
		for _, p := range ended {
			if err := tx.Update(p.Ref, []firestore.Update{{Path: "status", Value: StatusExpired}}); err != nil {
				return err
			}
			changed = true
		}
		var admittedNow int64
		until := now.Add(cfg.Pass())
		for _, p := range places {
			if !p.Exists() || p.Data()["status"] != StatusWaiting {
				continue
			}
			if err := tx.Update(p.Ref, []firestore.Update{
				{Path: "status", Value: StatusAdmitted}, {Path: "admittedAt", Value: now}, {Path: "passUntil", Value: until},
			}); err != nil {
				return err
			}
			admittedNow++
			st.Through = max(st.Through, orderOf(p))
		}
		if admittedNow > 0 {
			recent = append(recent, admission{At: now, N: admittedNow})
			st.Admitted += admittedNow
			live += admittedNow
			changed = true
		}
		st.Recent = recent

		// A mark at the tail of the line: everyone counted waiting, plus
		// everyone admitted, is ahead of an order joined at c.at.
		if !c.at.Before(cfg.OpensAt) && c.waiting > 0 && now.Sub(st.MarkedAt) >= markEvery {
			st.Marks = append(st.Marks, rankMark{Order: lateBound(c.at), Rank: c.admittedAt + c.waiting})
			st.MarkedAt = now
			changed = true
		}
		if n := len(st.Marks); n > 0 {
			st.Marks = thin(slices.DeleteFunc(st.Marks, func(m rankMark) bool { return m.Rank < st.Admitted }), MaxMarks-earlyMarks)
			changed = changed || len(st.Marks) != n
		}

		if c.seats > 0 && !cfg.OpensAt.IsZero() {
			p := public(st, r.rank, mode{cfg: cfg, paused: paused, valid: m.valid}, c, live, admittedNow, now)
			cur = &p
			// When p may go out (zero: nothing to publish): a new state,
			// or the heartbeat, after publishEvery; new numbers after
			// their interval. Until then it is pending.
			var at time.Time
			switch {
			case r.last == nil || p.State != r.last.State || (p.SeatsLeft == 0) != (r.last.SeatsLeft == 0) ||
				now.Sub(st.PublishedAt) >= heartbeat:
				at = st.PublishedAt.Add(publishEvery)
			case !samePublic(*r.last, p):
				at = st.PublishedAt.Add(numbersEvery)
			}
			if !at.IsZero() && !now.Before(at) {
				if err := tx.Set(a.s.client.Collection(Sales).Doc(r.id), p); err != nil {
					return err
				}
				st.PublishedAt, st.PublishedLast = now, true
				pub = &p
				changed = true
				if a.published != nil {
					a.published()
				}
			} else {
				pending = at
			}
		}
		if !changed {
			return nil
		}
		st.Writes = o.budget.after(st.Writes, stSnap)
		return tx.Set(a.stateRef(r.id), st)
	})
	if err != nil {
		return err
	}
	if !held.IsZero() {
		r.held = held
		return nil
	}
	a.metrics.admitted(ctx, r.id, st.Admitted-r.st.Admitted)
	r.st = st
	r.line.taken(taken)
	if pub != nil {
		r.last = pub
	}
	r.pending = pending
	// The gauges follow the numbers as the admitter knows them, not as
	// last published (they go out every numbersEvery).
	a.metrics.published(r.id, cmp.Or(cur, r.last))
	return nil
}

// public is the sale's public document at now. Its marks are the
// ranking's and the line's that still have someone ahead. Sold out shows
// over paused (nobody would get in either way), and paused over scheduled.
func public(st admitState, rs rankState, m mode, c counts, live, admittedNow int64, now time.Time) Public {
	p := Public{
		State: StateOpen, OpensAt: m.cfg.OpensAt, Waiting: max(0, c.waiting-admittedNow),
		Admitted: st.Admitted, Active: live, SeatsLeft: max(0, c.seats-c.booked-c.held),
		AdmittedThrough: st.Through, UpdatedAt: now, Marks: []Mark{},
	}
	switch {
	case c.soldOut():
		p.State = StateSoldOut
	case m.paused:
		p.State = StatePaused
	case now.Before(m.cfg.OpensAt):
		p.State = StateScheduled
	}
	for _, m := range thin(append(slices.Clone(rs.Marks), st.Marks...), MaxMarks) {
		if ahead := m.Rank - st.Admitted; ahead > 0 {
			p.Marks = append(p.Marks, Mark{Order: m.Order, Ahead: ahead})
		}
	}
	return p
}

// samePublic: nothing a reader sees has changed (updatedAt aside).
func samePublic(x, y Public) bool {
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	return x.State == y.State && x.OpensAt.Equal(y.OpensAt) && x.Waiting == y.Waiting && x.Admitted == y.Admitted &&
		x.Active == y.Active && x.SeatsLeft == y.SeatsLeft && x.AdmittedThrough == y.AdmittedThrough && slices.Equal(x.Marks, y.Marks)
}

// close publishes a sale whose screening has started, or that an operator
// closed, as closed, once, whatever its configuration (a misconfigured sale
// closes too, so that its seat map opens to everyone: the rules gate it
// until the sale is closed), and writes its last minute's figures.
func (a *Admitter) close(r *saleRun, cfg Config, sc booking.Screening, known bool) error {
	if r.st.Closed {
		return nil
	}
	now := time.Now()
	var c counts
	if r.st.Minute.Key != "" {
		var err error
		if c, err = a.countUntil(r.sctx, r, sc, known, now, true); err != nil {
			return err
		}
	}
	return a.s.client.RunTransaction(r.sctx, func(ctx context.Context, tx *firestore.Transaction) error {
		var st admitState
		r.held = time.Time{}
		stSnap, err := readState(tx, a.stateRef(r.id), &st)
		if err != nil {
			return err
		}
		if err := r.lease.Guard(tx); err != nil {
			return err
		}
		if st.Closed {
			return nil
		}
		st.landed(stSnap)
		now := stSnap.ReadTime
		if b := a.s.o.budget; !b.allows(st.Writes, stSnap, now) {
			r.held = b.from(st.Writes, stSnap) // closed a moment later
			return nil
		}
		if next := st.PublishedAt.Add(publishEvery); now.Before(next) {
			r.held = next // published less than a second ago: closed a moment later
			return nil
		}
		if st.Minute.Key != "" && c.minute != nil && c.minute.key == st.Minute.Key {
			if err := tx.Set(a.minuteRef(r.id, st.Minute.Key), figures(st, c, c.live, now)); err != nil {
				return err
			}
		}
		st.Closed = true
		st.PublishedAt, st.PublishedLast = now, true
		opensAt := cfg.OpensAt
		if opensAt.IsZero() {
			opensAt = st.OpensAt
		}
		p := Public{State: StateClosed, OpensAt: opensAt, Admitted: st.Admitted, AdmittedThrough: st.Through, Marks: []Mark{}, UpdatedAt: now}
		if err := tx.Set(a.s.client.Collection(Sales).Doc(r.id), p); err != nil {
			return err
		}
		st.Writes = a.s.o.budget.after(st.Writes, stSnap)
		return tx.Set(a.stateRef(r.id), st)
	})
}

// figures are the saleStats minute st.Minute, written at now: the levels
// as counted (c, live), the counts since it began. Joins are the places
// that came into the line: waiting now, plus admitted since, less waiting
// then (a place leaves the line by admission only).
func figures(st admitState, c counts, live int64, now time.Time) Minute {
	return Minute{
		At: now, Waiting: c.waiting, Admitted: st.Admitted, Active: live, SeatsLeft: max(0, c.seats-c.booked-c.held),
		SeatsHeld: c.held, SeatsSold: c.booked,
		Admissions: st.Admitted - st.Minute.Admitted, Expired: st.Minute.Expired,
		Joins: max(0, c.waiting+st.Admitted-st.Minute.Waiting-st.Minute.Admitted),
		Holds: c.minute.holds, Bookings: c.minute.bookings,
		Revenue: c.minute.revenue, Refunds: c.minute.refunds, LatePayments: c.minute.latePaid,
	}
}

func (a *Admitter) minuteRef(id, key string) *firestore.DocumentRef {
	return a.s.client.Collection(Stats).Doc(id).Collection("minutes").Doc(key)
}

// counterShards is how many shards the tickets-sold counter of a sale
// needs: each admitted user confirms about one booking, so bookings come
// at most at the admission rate; 1.5 shards per booking a second keeps
// each shard under one write a second.
func counterShards(cfg Config) int {
	return min(counter.MaxShards, max(booking.CounterShards, int(math.Ceil(float64(cfg.AdmitPerMinute)/60*1.5))))
}

// ensureCounter creates the sale's tickets-sold counter, or grows it, to
// counterShards.
func (a *Admitter) ensureCounter(ctx context.Context, id string, cfg Config) error {
	want := counterShards(cfg)
	c, err := counter.Open(ctx, a.s.client, booking.CounterID(id))
	if errors.Is(err, counter.ErrNotFound) {
		c, err = counter.Create(ctx, a.s.client, booking.CounterID(id), want)
		if errors.Is(err, counter.ErrExists) { // booking made it meanwhile
			c, err = counter.Open(ctx, a.s.client, booking.CounterID(id))
		}
	}
	if err != nil {
		return err
	}
	if c.NumShards() >= want {
		return nil
	}
	if err := c.Grow(ctx, want); err != nil && !errors.Is(err, counter.ErrInvalidInput) { // ErrInvalidInput: grown meanwhile
		return err
	}
	return nil
}
