// Package booking books cinema seats (CONTRACT §3): two users can never get
// the same seat, and different seats of one screening book in parallel.
//
// Each seat has its own lease (lock/), taken for all requested seats at
// once, all or nothing, in a fixed order. Under those leases one Firestore
// transaction, guarded by their fencing tokens, checks the seats are free,
// writes the seat documents and the booking, and bumps the screening's
// tickets-sold counter (counter/). The leases are released whatever
// happens. The package knows nothing of HTTP.
package booking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collections (CONTRACT §3) and the server-only seat leases.
const (
	Screenings     = "screenings"
	Bookings       = "bookings"
	SeatLocks      = "seatLocks"
	MaxSeats       = 10  // per booking
	MaxRequestID   = 128 // bytes
	SeatLease      = 10 * time.Second
	CounterShards  = 10
	StatusBooked   = "booked" // a seat document's status
	StatusHeld     = "held"   // a seat's or a hold's status
	StatusOK       = "confirmed"
	StatusCanceled = "cancelled"
)

// Errors to branch on; the HTTP layer maps them to status codes.
var (
	ErrInvalidArgument   = errors.New("booking: invalid argument")
	ErrScreeningNotFound = errors.New("booking: screening not found")
	ErrBookingNotFound   = errors.New("booking: booking not found")
	ErrForbidden         = errors.New("booking: not the booking's user")
	// ErrSeatTaken: a seat is booked already. The error is a *SeatsError.
	ErrSeatTaken = errors.New("booking: seat taken")
	// ErrSeatHeld: a seat is under a live hold (the caller's own too:
	// confirm that hold instead). The error is a *SeatsError.
	ErrSeatHeld = errors.New("booking: seat held")
	// ErrSeatBusy: another request holds a seat's lease right now; trying
	// again shortly may succeed. The error is a *SeatsError.
	ErrSeatBusy = errors.New("booking: seat busy")
	// ErrScreeningStarted: the screening has begun (by Firestore's clock);
	// it takes no booking or hold.
	ErrScreeningStarted = errors.New("booking: screening started")
)

// SeatsError names the seats that stopped a booking.
type SeatsError struct {
	Kind  error // ErrSeatTaken, ErrSeatHeld or ErrSeatBusy
	Seats []string
}

func (e *SeatsError) Error() string     { return fmt.Sprintf("%v: %v", e.Kind, e.Seats) }
func (e *SeatsError) Is(err error) bool { return err == e.Kind }

// Booking is a booking document (CONTRACT §3).
type Booking struct {
	ID          string    `firestore:"-" json:"bookingId"`
	UID         string    `firestore:"uid" json:"-"`
	ScreeningID string    `firestore:"screeningId" json:"screeningId"`
	Seats       []string  `firestore:"seats" json:"seats"`
	Status      string    `firestore:"status" json:"status"`
	RequestID   string    `firestore:"requestId" json:"-"`
	CreatedAt   time.Time `firestore:"createdAt,serverTimestamp" json:"-"`
	HoldID      string    `firestore:"holdId,omitempty" json:"-"`
}

// Screening is a screening document, written by admins.
type Screening struct {
	Title       string    `firestore:"title"`
	StartsAt    time.Time `firestore:"startsAt"`
	Rows        []string  `firestore:"rows"`
	SeatsPerRow int       `firestore:"seatsPerRow"`
}

// Request asks for seats of one screening for one user.
type Request struct {
	UID         string
	ScreeningID string
	Seats       []string
	RequestID   string // the client's idempotency key
}

// Service books and cancels. Safe for concurrent use.
type Service struct {
	client     *firestore.Client
	seatLease  time.Duration
	mu         sync.Mutex
	counters   map[string]*counter.Counter
	screenings map[string]cachedScreening
	// afterLeases runs between taking the seat leases and the transaction;
	// tests use it to stall a booking.
	afterLeases func()
}

// New returns a Service on client.
func New(client *firestore.Client) *Service {
	return &Service{client: client, seatLease: SeatLease, counters: map[string]*counter.Counter{}, screenings: map[string]cachedScreening{}}
}

// CounterID is the id of a screening's tickets-sold counter.
func CounterID(screeningID string) string { return "tickets-" + screeningID }

var seatPattern = regexp.MustCompile(`^([A-Z]{1,2})([1-9][0-9]{0,2})$`)

// validate checks a request's shape; it needs no Firestore.
func (r Request) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	switch {
	case r.UID == "":
		return bad("no user")
	case r.ScreeningID == "":
		return bad("screeningId is required")
	case lock.ValidateKey(r.ScreeningID) != nil || len(r.ScreeningID) > 200:
		return bad("screeningId %q is not a valid id", r.ScreeningID)
	case r.RequestID == "":
		return bad("requestId is required")
	case len(r.RequestID) > MaxRequestID:
		return bad("requestId is longer than %d bytes", MaxRequestID)
	case len(r.Seats) == 0:
		return bad("seats is empty")
	case len(r.Seats) > MaxSeats:
		return bad("%d seats, at most %d per booking", len(r.Seats), MaxSeats)
	}
	seen := map[string]bool{}
	for _, s := range r.Seats {
		if !seatPattern.MatchString(s) {
			return bad("seat %q is not a seat id like F12", s)
		}
		if seen[s] {
			return bad("seat %s appears twice", s)
		}
		seen[s] = true
	}
	return nil
}

// checkSeats checks every seat exists in the screening's layout.
func (sc Screening) checkSeats(seats []string) error {
	var bad []string
	for _, s := range seats {
		m := seatPattern.FindStringSubmatch(s)
		n, _ := strconv.Atoi(m[2])
		if !slices.Contains(sc.Rows, m[1]) || n > sc.SeatsPerRow {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: no such seats in this screening: %v", ErrInvalidArgument, bad)
	}
	return nil
}

// bookingID is derived from the user and the request ID, so a retry finds
// the booking its first attempt made.
func bookingID(uid, requestID string) string {
	h := sha256.Sum256([]byte(uid + "\x00" + requestID))
	return hex.EncodeToString(h[:16])
}

func seatKey(screeningID, seat string) string { return screeningID + "_" + seat }

func (s *Service) seatDoc(screeningID, seat string) *firestore.DocumentRef {
	return s.client.Collection(Screenings).Doc(screeningID).Collection("seats").Doc(seat)
}

// Book books all requested seats or none. It returns the booking and
// whether this call created it (false: a retry of the same user and
// requestId got the existing booking back, also while the first attempt
// is still in flight: the retry joins it). executionID names the call in
// logs; the seat leases belong to the request.
//
// Errors: ErrInvalidArgument, ErrScreeningNotFound, ErrScreeningStarted,
// ErrSeatTaken, ErrSeatHeld and ErrSeatBusy (all three *SeatsError), or a
// Firestore error. Nothing is written on any error.
func (s *Service) Book(ctx context.Context, executionID string, r Request) (Booking, bool, error) {
	id := bookingID(r.UID, r.RequestID)
	bref := s.client.Collection(Bookings).Doc(id)
	seats := sortedSeats(r.Seats)
	b := Booking{ID: id, UID: r.UID, ScreeningID: r.ScreeningID, Seats: seats, Status: StatusOK, RequestID: r.RequestID}
	prev, err := s.claim(ctx, r, bref, func(w writes, prevSeats []*firestore.DocumentSnapshot, _ time.Time) error {
		ctr, err := s.counter(ctx, r.ScreeningID)
		if err != nil {
			return err
		}
		for i, seat := range seats {
			if err := w.seat(s.seatDoc(r.ScreeningID, seat), prevSeats[i], map[string]any{
				"status": StatusBooked, "bookingId": id, "bookedAt": firestore.ServerTimestamp,
			}); err != nil {
				return err
			}
		}
		if err := w.create(bref, b); err != nil {
			return err
		}
		shard, ups := ctr.IncrementWrite(int64(len(seats)))
		return w.update(shard, ups)
	})
	if err != nil {
		return Booking{}, false, err
	}
	if prev == nil {
		return b, true, nil
	}
	if err := prev.DataTo(&b); err != nil {
		return Booking{}, false, err
	}
	b.ID = id
	if !sameRequest(b.UID, b.ScreeningID, b.Seats, r) {
		return Booking{}, false, fmt.Errorf("%w: requestId %q was already used for other seats", ErrInvalidArgument, r.RequestID)
	}
	return b, false, nil
}

// claim takes r's seats for the document at ref (a booking or a hold),
// all or none. It returns ref's snapshot if the request made it already (a
// retry), else nil once write, called in the deciding transaction with the
// snapshot's read time (Firestore's clock), has committed.
//
// A seat is free when it has no document, or its hold ended by that read
// time. The steps: one batched read that answers retries and losers
// without locking; the seat leases, all or nothing, owned by the request
// (so a retry of a request still in flight joins it instead of answering
// seat_busy); one transaction, guarded by the leases, that reads the seats
// again and writes, releasing the leases in the same commit.
func (s *Service) claim(ctx context.Context, r Request, ref *firestore.DocumentRef, write func(w writes, seats []*firestore.DocumentSnapshot, now time.Time) error) (*firestore.DocumentSnapshot, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	seats := sortedSeats(r.Seats) // one order for everybody
	sc, err := s.screening(ctx, r.ScreeningID)
	if err != nil {
		return nil, err
	}
	if err := sc.checkSeats(seats); err != nil {
		return nil, err
	}
	refs := make([]*firestore.DocumentRef, len(seats))
	for i, seat := range seats {
		refs[i] = s.seatDoc(r.ScreeningID, seat)
	}
	// Retries and losers are answered by one read, before any lease.
	snaps, err := s.client.GetAll(ctx, append([]*firestore.DocumentRef{ref}, refs...))
	if err != nil {
		return nil, err
	}
	if snaps[0].Exists() {
		return snaps[0], nil
	}
	if err := sc.decide(seats, snaps[1:], snaps[0].ReadTime); err != nil {
		return nil, err
	}

	locker, err := lock.New(s.client, SeatLocks, lock.WithOwner("request-"+ref.ID), lock.WithLeaseDuration(s.seatLease))
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = seatKey(r.ScreeningID, seat)
	}
	leases, err := locker.TryAcquireAll(ctx, keys, lock.Reentrant())
	var held *lock.HeldError
	if errors.As(err, &held) {
		return nil, &SeatsError{Kind: ErrSeatBusy, Seats: seatsOf(r.ScreeningID, held.Keys())}
	}
	if errors.Is(err, lock.ErrHeld) {
		return nil, &SeatsError{Kind: ErrSeatBusy, Seats: seats}
	}
	if err != nil {
		return nil, err
	}
	committed := false // the transaction released the leases with its writes
	defer func() {
		if committed {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		leases.Release(rctx) // a lease lost meanwhile is nobody's loss: the transaction checked
	}()
	if s.afterLeases != nil {
		s.afterLeases()
	}

	// Fast path: one commit whose preconditions stand in for the
	// transaction's reads: each seat exactly as the first read found it
	// free, the document absent, every lease exactly this acquisition's
	// (the fencing). Anything changed since fails it, and the transaction
	// below decides again.
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := s.client.Batch()
	if err := leases.ReleaseInBatch(b); err == nil {
		if err := write(batchWrites{b}, snaps[1:], snaps[0].ReadTime); err != nil {
			return nil, err
		}
		_, err := b.Commit(ctx)
		switch {
		case err == nil:
			committed = true
			return nil, nil
		case !isConflict(err):
			// It may have landed unheard: the document says so.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if got, rerr := ref.Get(rctx); rerr == nil && got.Exists() {
				committed = true
				return got, nil
			}
			return nil, err
		}
	}

	var prev *firestore.DocumentSnapshot
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		prev = nil
		// One read for the leases (fencing), the seats and the document.
		snaps, err := leases.GuardWith(tx, append(refs, ref)...)
		if errors.Is(err, lock.ErrNotHeld) {
			return &SeatsError{Kind: ErrSeatBusy, Seats: seats}
		}
		if err != nil {
			return err
		}
		if doc := snaps[len(seats)]; doc.Exists() { // the same request won a race with itself
			prev = doc
			return nil
		}
		now := snaps[0].ReadTime
		if err := sc.decide(seats, snaps[:len(seats)], now); err != nil {
			return err
		}
		if err := write(txWrites{tx}, snaps[:len(seats)], now); err != nil {
			return err
		}
		return leases.ReleaseIn(tx)
	}, firestore.MaxAttempts(3))
	if err != nil {
		return nil, err
	}
	committed = prev == nil
	return prev, nil
}

// decide answers whether seats (their snapshots, read at now) can be taken:
// ErrScreeningStarted once the screening has begun (a screening without
// startsAt has no cutoff), else ErrSeatTaken
// naming the booked seats, else ErrSeatHeld naming those under a live
// hold, else nil.
func (sc Screening) decide(seats []string, snaps []*firestore.DocumentSnapshot, now time.Time) error {
	if !sc.StartsAt.IsZero() && !now.Before(sc.StartsAt) { // no startsAt: no cutoff
		return ErrScreeningStarted
	}
	var taken, held []string
	for i, snap := range snaps {
		switch seatState(snap, now) {
		case StatusBooked:
			taken = append(taken, seats[i])
		case StatusHeld:
			held = append(held, seats[i])
		}
	}
	switch {
	case len(taken) > 0:
		return &SeatsError{Kind: ErrSeatTaken, Seats: taken}
	case len(held) > 0:
		return &SeatsError{Kind: ErrSeatHeld, Seats: held}
	}
	return nil
}

// seatState is a seat's state at server time now: StatusBooked, StatusHeld
// (a hold that has not ended), or "" (free; a lapsed hold is free whether
// or not its document is gone yet).
func seatState(snap *firestore.DocumentSnapshot, now time.Time) string {
	if snap == nil || !snap.Exists() {
		return ""
	}
	d := snap.Data()
	switch d["status"] {
	case StatusBooked:
		return StatusBooked
	case StatusHeld:
		if until, ok := d["heldUntil"].(time.Time); ok && now.Before(until) {
			return StatusHeld
		}
	}
	return ""
}

// writes is where a claim's writes go: the deciding transaction, or the
// fast path's single commit, whose preconditions stand in for the
// transaction's reads.
type writes interface {
	// seat replaces a seat document that was read as prev and found free.
	seat(ref *firestore.DocumentRef, prev *firestore.DocumentSnapshot, data map[string]any) error
	create(ref *firestore.DocumentRef, data any) error
	update(ref *firestore.DocumentRef, ups []firestore.Update) error
}

type txWrites struct{ tx *firestore.Transaction }

func (w txWrites) seat(ref *firestore.DocumentRef, _ *firestore.DocumentSnapshot, data map[string]any) error {
	return w.tx.Set(ref, data)
}
func (w txWrites) create(ref *firestore.DocumentRef, data any) error { return w.tx.Create(ref, data) }
func (w txWrites) update(ref *firestore.DocumentRef, ups []firestore.Update) error {
	return w.tx.Update(ref, ups)
}

type batchWrites struct{ b *firestore.WriteBatch }

// seat writes only if the seat is still as read: absent (a create), or the
// very document of a lapsed hold (an update on its update time that
// replaces every field).
func (w batchWrites) seat(ref *firestore.DocumentRef, prev *firestore.DocumentSnapshot, data map[string]any) error {
	if prev == nil || !prev.Exists() {
		w.b.Create(ref, data)
		return nil
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
	w.b.Update(ref, ups, firestore.LastUpdateTime(prev.UpdateTime))
	return nil
}
func (w batchWrites) create(ref *firestore.DocumentRef, data any) error {
	w.b.Create(ref, data)
	return nil
}
func (w batchWrites) update(ref *firestore.DocumentRef, ups []firestore.Update) error {
	w.b.Update(ref, ups)
	return nil
}

// isConflict: a precondition failed (something changed since it was read).
func isConflict(err error) bool {
	switch status.Code(err) {
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound, codes.Aborted:
		return true
	}
	return false
}

func sortedSeats(seats []string) []string {
	out := slices.Clone(seats)
	slices.Sort(out)
	return out
}

// sameRequest: a stored document (uid, screening, seats) is what r asks for.
func sameRequest(uid, screeningID string, seats []string, r Request) bool {
	return uid == r.UID && screeningID == r.ScreeningID && slices.Equal(seats, sortedSeats(r.Seats))
}

func seatsOf(screeningID string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k[len(screeningID)+1:]
	}
	return out
}

// ScreeningCacheTTL is how long a Service trusts a screening's seat layout
// before reading it again.
const ScreeningCacheTTL = time.Minute

type cachedScreening struct {
	sc      Screening
	expires time.Time
}

// screening reads a screening's layout, cached for ScreeningCacheTTL: the
// layout only decides which seat ids are valid, never who has a seat.
func (s *Service) screening(ctx context.Context, id string) (Screening, error) {
	s.mu.Lock()
	c, ok := s.screenings[id]
	s.mu.Unlock()
	if ok && time.Now().Before(c.expires) {
		return c.sc, nil
	}
	snap, err := s.client.Collection(Screenings).Doc(id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Screening{}, fmt.Errorf("%w: %q", ErrScreeningNotFound, id)
	}
	if err != nil {
		return Screening{}, err
	}
	var sc Screening
	if err := snap.DataTo(&sc); err != nil {
		return Screening{}, fmt.Errorf("booking: screening %q is malformed: %w", id, err)
	}
	s.mu.Lock()
	s.screenings[id] = cachedScreening{sc: sc, expires: time.Now().Add(ScreeningCacheTTL)}
	s.mu.Unlock()
	return sc, nil
}

// counter returns the screening's tickets-sold counter, creating it on
// first use (idempotent) and caching the handle.
func (s *Service) counter(ctx context.Context, screeningID string) (*counter.Counter, error) {
	s.mu.Lock()
	c := s.counters[screeningID]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := counter.Open(ctx, s.client, CounterID(screeningID))
	if errors.Is(err, counter.ErrNotFound) {
		c, err = counter.Create(ctx, s.client, CounterID(screeningID), CounterShards)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.counters[screeningID] = c
	s.mu.Unlock()
	return c, nil
}

// Cancel cancels a booking of uid: its seats become free and the counter
// goes down, in one transaction. Cancelling a cancelled booking returns it
// unchanged. Errors: ErrBookingNotFound, ErrForbidden (another user's).
func (s *Service) Cancel(ctx context.Context, uid, bookingID string) (Booking, error) {
	if uid == "" || lock.ValidateKey(bookingID) != nil {
		return Booking{}, fmt.Errorf("%w: bookingId %q is not a valid id", ErrInvalidArgument, bookingID)
	}
	ref := s.client.Collection(Bookings).Doc(bookingID)
	var b Booking
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%w: %q", ErrBookingNotFound, bookingID)
		}
		if err != nil {
			return err
		}
		if err := snap.DataTo(&b); err != nil {
			return err
		}
		if b.UID != uid {
			return ErrForbidden
		}
		if b.Status == StatusCanceled {
			return nil
		}
		ctr, err := s.counter(ctx, b.ScreeningID)
		if err != nil {
			return err
		}
		refs := make([]*firestore.DocumentRef, len(b.Seats))
		for i, seat := range b.Seats {
			refs[i] = s.seatDoc(b.ScreeningID, seat)
		}
		seats, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		for i, seat := range seats {
			if seat.Exists() && seat.Data()["bookingId"] == bookingID {
				if err := tx.Delete(refs[i]); err != nil {
					return err
				}
			}
		}
		b.Status = StatusCanceled
		if err := tx.Update(ref, []firestore.Update{{Path: "status", Value: StatusCanceled}}); err != nil {
			return err
		}
		shard, ups := ctr.IncrementWrite(-int64(len(b.Seats)))
		return tx.Update(shard, ups)
	})
	if err != nil {
		return Booking{}, err
	}
	b.ID = bookingID
	return b, nil
}
