package booking

import (
	"context"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Screening is a screening document, written by admins (CONTRACT §3). A
// screening may also carry a sale (CONTRACT §7), which the Service's Gate
// reads from the document itself.
type Screening struct {
	Title       string    `firestore:"title"`
	StartsAt    time.Time `firestore:"startsAt"`
	Rows        []string  `firestore:"rows"`
	SeatsPerRow int       `firestore:"seatsPerRow"`
	// Priced: the screening has a price (CONTRACT §10), so its seats are
	// paid for (through a Till), never booked for free.
	Priced bool `firestore:"-"`
}

// MaxHallSeats bounds a screening's layout (rows × seatsPerRow). A hall is
// read and drawn whole (best available, the sale's one-document seat map,
// a character a seat), so a layout written wrong by hand (a seatsPerRow of
// a billion) must be refused as malformed, not allocated.
const MaxHallSeats = 100_000

// Check refuses a layout that is no hall: a negative seatsPerRow, or more
// than MaxHallSeats seats.
func (sc Screening) Check() error {
	if sc.SeatsPerRow < 0 || sc.SeatsPerRow > MaxHallSeats || len(sc.Rows) > MaxHallSeats || len(sc.Rows)*sc.SeatsPerRow > MaxHallSeats {
		return fmt.Errorf("a layout of %d rows of %d seats: want seatsPerRow 0 or more and at most %d seats in all", len(sc.Rows), sc.SeatsPerRow, MaxHallSeats)
	}
	return nil
}

// ScreeningCacheTTL bounds how long a screening is trusted without a fresh
// snapshot. A snapshot listener keeps each screening a Service books for
// current (an admin's edit of startsAt or of the sale reaches a warm
// instance within the listener's delivery, milliseconds); the TTL only
// matters when that listener is cut off without noticing.
const ScreeningCacheTTL = 30 * time.Second

// maxScreenings bounds the screenings a Service keeps a listener on.
const maxScreenings = 256

// screenings keeps the screenings a Service books for, each fed by a
// snapshot listener.
type screenings struct {
	client *firestore.Client
	mu     sync.Mutex
	m      map[string]*screeningEntry
	closed bool
}

type screeningEntry struct {
	ready  chan struct{} // closed once the first snapshot (or error) is in
	stop   context.CancelFunc
	done   chan struct{} // the listener has exited
	mu     sync.Mutex
	snap   *firestore.DocumentSnapshot
	sc     Screening
	err    error
	at     time.Time // local arrival of the last snapshot
	used   time.Time
	listen bool // the listener is running
}

// cached is a screening as a listener or a read delivered it.
type cached struct {
	snap *firestore.DocumentSnapshot
	sc   Screening
	err  error // ErrScreeningNotFound, or the document is malformed
}

// current returns the screening as its listener last delivered it, and
// whether that is current enough to decide a request without reading it
// (the listener runs and delivered within ScreeningCacheTTL). Without a
// listener it answers ok false: the request reads, and a read that finds
// the screening opens one (put). So only screenings that exist get
// listeners: requests for made-up ids cannot evict real ones.
func (c *screenings) current(id string) (cached, bool) {
	c.mu.Lock()
	e := c.m[id]
	c.mu.Unlock()
	if e == nil {
		return cached{}, false
	}
	select {
	case <-e.ready:
	default:
		return cached{}, false
	}
	e.mu.Lock()
	e.used = time.Now()
	got, live := cached{e.snap, e.sc, e.err}, e.listen && time.Since(e.at) < ScreeningCacheTTL
	e.mu.Unlock()
	if !live {
		c.forget(id)
	}
	return got, live && got.snap != nil
}

// currentWithin is current, but only for a screening the listener or a
// read delivered within d (less than ScreeningCacheTTL): a caller that may
// skip its read of the screening this way leaves it to the requests that
// read it to keep the entry current (put), and the entry is older than d
// before it is older than the TTL, so one of them reads it then.
func (c *screenings) currentWithin(id string, d time.Duration) (cached, bool) {
	got, ok := c.current(id)
	if !ok {
		return got, false
	}
	c.mu.Lock()
	e := c.m[id]
	c.mu.Unlock()
	if e == nil {
		return cached{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return got, time.Since(e.at) < d
}

// put records a screening that a request read: a later read time wins.
// It opens the screening's listener if the screening exists and has none.
func (c *screenings) put(got cached) {
	c.mu.Lock()
	e := c.m[got.snap.Ref.ID]
	c.mu.Unlock()
	if e == nil {
		if !got.snap.Exists() {
			return
		}
		e = c.entry(got.snap.Ref.ID)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap == nil || !got.snap.ReadTime.Before(e.snap.ReadTime) {
		// A read is as good as a delivery: a screening nobody edits sends
		// its listener nothing, and one read per TTL keeps it current.
		e.snap, e.sc, e.err, e.at = got.snap, got.sc, got.err, time.Now()
	}
}

func (c *screenings) entry(id string) *screeningEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[id]; ok {
		return e
	}
	if c.m == nil {
		c.m = map[string]*screeningEntry{}
	}
	if len(c.m) >= maxScreenings {
		c.evictLocked()
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &screeningEntry{ready: make(chan struct{}), stop: cancel, done: make(chan struct{}), used: time.Now()}
	c.m[id] = e
	if c.closed { // answers "not current" for ever: every request reads
		cancel()
		close(e.ready)
		close(e.done)
		return e
	}
	go e.run(ctx, c.client.Collection(Screenings).Doc(id))
	return e
}

// evictLocked stops the least recently used listener.
func (c *screenings) evictLocked() {
	var oldest string
	var at time.Time
	for id, e := range c.m {
		e.mu.Lock()
		u := e.used
		e.mu.Unlock()
		if oldest == "" || u.Before(at) {
			oldest, at = id, u
		}
	}
	if e := c.m[oldest]; e != nil {
		e.stop()
		delete(c.m, oldest)
	}
}

// run feeds the entry from a snapshot listener until ctx ends or the
// listener fails; a failed listener leaves the entry to expire, so the
// next request reads first and opens a new one.
func (e *screeningEntry) run(ctx context.Context, ref *firestore.DocumentRef) {
	defer close(e.done)
	it := ref.Snapshots(ctx)
	defer it.Stop()
	first := true
	for {
		snap, err := it.Next()
		e.mu.Lock()
		switch {
		case err != nil:
			e.listen = false
		default:
			sc, derr := DecodeScreening(snap)
			e.snap, e.sc, e.err, e.at, e.listen = snap, sc, derr, time.Now(), true
		}
		e.mu.Unlock()
		if first {
			first = false
			close(e.ready)
		}
		if err != nil {
			return
		}
	}
}

// close stops every listener and waits for them.
func (c *screenings) close() {
	c.mu.Lock()
	c.closed = true
	m := c.m
	c.m = nil
	c.mu.Unlock()
	for _, e := range m {
		e.stop()
		<-e.done
	}
}

// forget drops a screening whose listener failed, so the next request
// opens a new one.
func (c *screenings) forget(id string) {
	c.mu.Lock()
	e := c.m[id]
	if e != nil {
		e.mu.Lock()
		dead := !e.listen
		e.mu.Unlock()
		if dead {
			delete(c.m, id)
			e.stop()
		}
	}
	c.mu.Unlock()
}

// DecodeScreening decodes a screening snapshot: ErrScreeningNotFound if it
// does not exist, malformed if its fields do not decode or its layout is no
// hall (Check). Everything that reads a screening's layout decodes it here.
func DecodeScreening(snap *firestore.DocumentSnapshot) (Screening, error) {
	if snap == nil || !snap.Exists() {
		id := ""
		if snap != nil {
			id = snap.Ref.ID
		}
		return Screening{}, fmt.Errorf("%w: %q", ErrScreeningNotFound, id)
	}
	var sc Screening
	if err := snap.DataTo(&sc); err != nil {
		return Screening{}, fmt.Errorf("booking: screening %q is malformed: %w", snap.Ref.ID, err)
	}
	if err := sc.Check(); err != nil {
		return Screening{}, fmt.Errorf("booking: screening %q is malformed: %w", snap.Ref.ID, err)
	}
	sc.Priced = snap.Data()["price"] != nil
	return sc, nil
}

// notFound: the error is Firestore's NotFound.
func notFound(err error) bool { return status.Code(err) == codes.NotFound }
