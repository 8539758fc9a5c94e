// Package booking books cinema seats (CONTRACT §3): two users can never get
// the same seat, and different seats of one screening book in parallel.
//
// Each seat document is that seat's lock. A booking or a hold takes it
// with a write that names the taking execution (lockedBy) and carries a
// precondition: a create where the seat is free, or an update on the exact
// version read where a hold on it has lapsed. A hold is a lease on the seat
// that ends at heldUntil by Firestore's clock; a booking holds it until it
// is cancelled. All seats of a request, its booking or hold document, a
// booking's tickets (CONTRACT §13, WithTickets) and the tickets-sold
// counter shard go in one commit, so a request takes all its seats or none,
// and of two requests for one seat exactly one commits.
//
// On free seats of an ungated screening that is not about to start, that
// commit is the whole booking: one RPC. Everything else (a seat taken or
// held, a lapsed hold, a screening close to its start, a gated screening, a
// cold instance) reads first, one batched read, and decides by its read
// time; the losers of a race learn why from that read. The package knows
// nothing of HTTP.
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
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collections (CONTRACT §3) and limits.
const (
	Screenings      = "screenings"
	SeatsCollection = "seats" // screenings/{id}/seats: the public per-seat map
	Bookings        = "bookings"
	MaxSeats        = 10       // per booking
	MaxRequestID    = 128      // bytes
	CounterShards   = 40       // a new screening's tickets-sold shards: about 40 bookings/s sustained (docs/bench.md)
	StatusBooked    = "booked" // a seat document's status
	StatusHeld      = "held"   // a seat's or a hold's status
	StatusOK        = "confirmed"
	StatusCanceled  = "cancelled"
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
	// ErrSeatBusy: the seats kept changing under the request (other
	// requests taking and freeing them); trying again shortly may succeed.
	// The error is a *SeatsError.
	ErrSeatBusy = errors.New("booking: seat busy")
	// ErrScreeningStarted: the screening has begun (by Firestore's clock);
	// it takes no booking or hold.
	ErrScreeningStarted = errors.New("booking: screening started")
	// ErrPaymentRequired: the screening is priced (CONTRACT §10): seats
	// are booked by paying for a hold (402 payment_required), never by
	// BookSeats or ConfirmHold.
	ErrPaymentRequired = errors.New("booking: payment required")
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
	// Payment is what paid for a booking of a priced screening.
	Payment *BookingPayment `firestore:"payment,omitempty" json:"payment,omitempty"`
	// RefundID is the refund of a paid booking that was cancelled.
	RefundID string `firestore:"refundId,omitempty" json:"refundId,omitempty"`
	// Tickets are the booking's tickets (CONTRACT §13), by seat: their ids
	// in tickets/{ticketId}, created in the commit that confirmed it.
	Tickets map[string]string `firestore:"tickets,omitempty" json:"tickets,omitempty"`
}

// BookingPayment is the payment of a booking (CONTRACT §10).
type BookingPayment struct {
	SessionID       string `firestore:"sessionId" json:"sessionId"`
	PaymentIntentID string `firestore:"paymentIntentId" json:"paymentIntentId"`
	Amount          int64  `firestore:"amount" json:"amount"`
	Currency        string `firestore:"currency" json:"currency"`
}

// Request asks for seats of one screening for one user.
type Request struct {
	UID         string
	ScreeningID string
	Seats       []string
	RequestID   string // the client's idempotency key
}

// Service books and cancels. Safe for concurrent use. Close it to stop the
// snapshot listeners it keeps on screenings.
type Service struct {
	client     *firestore.Client
	gate       Gate
	till       Till
	tickets    Tickets
	clock      serverClock
	screenings screenings
	taken      takenSeats
	flights    flights
	mu         sync.Mutex
	counters   map[string]cachedCounter
	hooks      hooks
	metrics    *bookingMetrics
	picks      picks      // best-available claims in flight (besthold.go)
	held       heldChecks // reads of held seats shared by best-available requests
}

// hooks are test-only: tests in this package set them to stall a request
// or to plant a bug a checker must catch. Users cannot reach them.
type hooks struct {
	// beforeCommit runs before each commit that takes seats; fast tells
	// whether it is the one-commit path.
	beforeCommit func(fast bool)
	// batchRead sees (and may replace) the snapshots of takeRead's batched
	// read: the claim's own document first, then the screening, the pass
	// (under a gate) and the seats.
	batchRead func(snaps []*firestore.DocumentSnapshot)
	// awaiting runs when a request begins to wait for another attempt on
	// its seats (flights).
	awaiting func()
	// noSeatPrecondition plants a bug: seats are written without their
	// preconditions (a blind overwrite of whoever has them).
	noSeatPrecondition bool
	// noHoldEndCheck plants a bug: ConfirmHold does not check the hold's end.
	noHoldEndCheck bool
	// extendByValue plants a bug: a retried ExtendHold takes its commit for
	// landed only if the hold still ends where that commit put it (so one
	// overtaken by another extension extends again).
	extendByValue bool
	// bestChoice, if set, chooses HoldBest's block in place of Best (a
	// planted bug: a choice without the orphan rule).
	bestChoice func(Hall) Block
}

// Option configures a Service.
type Option func(*Service)

// WithGate puts holds and bookings of gated screenings under g (the
// on-sale waiting room, CONTRACT §7).
func WithGate(g Gate) Option { return func(s *Service) { s.gate = g } }

// New returns a Service on client.
func New(client *firestore.Client, opts ...Option) *Service {
	s := &Service{client: client, counters: map[string]cachedCounter{}}
	s.screenings.client = client
	for _, o := range opts {
		o(s)
	}
	if s.metrics == nil {
		s.metrics = newBookingMetrics(nil)
	}
	return s
}

// Close stops the Service's screening listeners. A closed Service still
// works: every request then reads its screening first.
func (s *Service) Close() { s.screenings.close() }

// CounterID is the id of a screening's tickets-sold counter.
func CounterID(screeningID string) string { return "tickets-" + screeningID }

var seatPattern = regexp.MustCompile(`^([A-Z]{1,2})([1-9][0-9]{0,2})$`)

// checkID refuses what cannot name a document or a request: empty, not
// UTF-8, control characters, too long, or not a valid document ID.
func checkID(name, id string, maxBytes int) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is required", ErrInvalidArgument, name)
	case len(id) > maxBytes:
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidArgument, name, maxBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidArgument, name)
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("%w: %s contains control characters", ErrInvalidArgument, name)
	}
	return nil
}

// checkDocID is checkID for ids that name documents.
func checkDocID(name, id string) error {
	if err := checkID(name, id, 200); err != nil {
		return err
	}
	if lock.ValidateKey(id) != nil {
		return fmt.Errorf("%w: %s %q is not a valid id", ErrInvalidArgument, name, id)
	}
	return nil
}

// validate checks a request's shape; it needs no Firestore.
func (r Request) validate() error {
	if r.UID == "" {
		return fmt.Errorf("%w: no user", ErrInvalidArgument)
	}
	if err := checkDocID("screeningId", r.ScreeningID); err != nil {
		return err
	}
	if err := checkID("requestId", r.RequestID, MaxRequestID); err != nil {
		return err
	}
	switch {
	case len(r.Seats) == 0:
		return fmt.Errorf("%w: seats is empty", ErrInvalidArgument)
	case len(r.Seats) > MaxSeats:
		return fmt.Errorf("%w: %d seats, at most %d per booking", ErrInvalidArgument, len(r.Seats), MaxSeats)
	}
	seen := map[string]bool{}
	for _, s := range r.Seats {
		if !seatPattern.MatchString(s) {
			return fmt.Errorf("%w: seat %q is not a seat id like F12", ErrInvalidArgument, s)
		}
		if seen[s] {
			return fmt.Errorf("%w: seat %s appears twice", ErrInvalidArgument, s)
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

// docID derives a document ID from its kind, the user and a key, so a
// retry finds what its first attempt made. The parts are length-prefixed:
// no requestId can produce the ID of another kind or another user's.
func docID(kind, uid, key string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s:%d:%s:%d:%s", kind, len(uid), uid, len(key), key))
	return hex.EncodeToString(h[:16])
}

func bookingID(uid, requestID string) string   { return docID("booking", uid, requestID) }
func holdID(uid, requestID string) string      { return docID("hold", uid, requestID) }
func confirmationID(uid, holdID string) string { return docID("confirm", uid, holdID) }

func (s *Service) seatDoc(screeningID, seat string) *firestore.DocumentRef {
	return s.client.Collection(Screenings).Doc(screeningID).Collection(SeatsCollection).Doc(seat)
}

// Book books all requested seats or none. It returns the booking and
// whether this call created it (false: a retry of the same user and
// requestId got the existing booking back, also when the retry raced its
// first attempt). executionID names the call in logs and in the seats it
// takes (lockedBy).
//
// Costs: on free seats of a screening this instance keeps current, one
// commit; otherwise one batched read and one commit. A loser learns why
// from the failed commit and one read.
//
// Errors: ErrInvalidArgument, ErrScreeningNotFound, ErrScreeningStarted,
// ErrSeatTaken, ErrSeatHeld and ErrSeatBusy (all three *SeatsError), the
// gate's ErrSaleNotOpen, ErrNotAdmitted and ErrSeatLimit, or a Firestore
// error. Nothing is written on any error.
func (s *Service) Book(ctx context.Context, executionID string, r Request) (_ Booking, _ bool, err error) {
	ctx, done := s.metrics.start(ctx, metricOpBook)
	defer done(&err)
	if err := r.validate(); err != nil {
		return Booking{}, false, err
	}
	id := bookingID(r.UID, r.RequestID)
	seats := sortedSeats(r.Seats)
	b := Booking{ID: id, UID: r.UID, ScreeningID: r.ScreeningID, Seats: seats, Status: StatusOK, RequestID: r.RequestID}
	issued, err := s.issue(&b)
	if err != nil {
		return Booking{}, false, err
	}
	c := &claim{
		r: r, kind: ClaimBooking, id: id, seats: seats, execID: executionID, tickets: issued,
		ref: s.client.Collection(Bookings).Doc(id),
		seat: func(time.Time) map[string]any {
			return map[string]any{"status": StatusBooked, "bookingId": id, "bookedAt": firestore.ServerTimestamp}
		},
		doc: func(time.Time) any { return b },
	}
	prev, err := s.take(ctx, c)
	if err != nil {
		return Booking{}, false, err
	}
	if c.landedLate(prev) {
		return Booking{}, false, s.undoLate(ctx, c)
	}
	if prev == nil {
		return b, true, nil
	}
	b = Booking{}
	if err := prev.DataTo(&b); err != nil {
		return Booking{}, false, err
	}
	b.ID = id
	if !sameRequest(b.UID, b.ScreeningID, b.Seats, r) {
		return Booking{}, false, fmt.Errorf("%w: requestId %q was already used for other seats", ErrInvalidArgument, r.RequestID)
	}
	return b, false, nil
}

// decide answers whether seats (their states at now: seatState) can be taken:
// ErrScreeningStarted once the screening has begun (a screening without
// startsAt has no cutoff), else ErrSeatTaken naming the booked seats, else
// ErrSeatHeld naming those under a live hold, else nil.
func (sc Screening) decide(seats []string, states []string, now time.Time) error {
	if sc.started(now) {
		return ErrScreeningStarted
	}
	var taken, held []string
	for i, st := range states {
		switch st {
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

// started: the screening has begun at server time now.
func (sc Screening) started(now time.Time) bool {
	return !sc.StartsAt.IsZero() && !now.Before(sc.StartsAt)
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

// isConflict: a precondition failed (something changed since it was read),
// or a transaction lost to a concurrent one.
func isConflict(err error) bool {
	switch status.Code(err) {
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound, codes.Aborted:
		return true
	}
	return false
}

// isAmbiguous: a commit may or may not have landed.
func isAmbiguous(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unknown, codes.Internal, codes.Canceled:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// runTransaction runs fn in a transaction, and once more on a fresh read
// when its commit failed in a way that may hide a landed commit. A commit
// whose answer was lost is sent again by the client library, and Firestore
// refuses the copy (InvalidArgument: the transaction is closed) although
// the first one landed. Every fn here (cancel, release, extend, confirm,
// expire) finds its own change done when it reads again, so running it
// again reports what Firestore holds.
func (s *Service) runTransaction(ctx context.Context, fn func(context.Context, *firestore.Transaction) error) error {
	for again := true; ; again = false {
		decided := false
		err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			decided = false
			if err := fn(ctx, tx); err != nil {
				return err
			}
			decided = true
			return nil
		})
		unsettled := decided && (isAmbiguous(err) || status.Code(err) == codes.InvalidArgument)
		if err == nil || !unsettled || !again || ctx.Err() != nil {
			return err
		}
	}
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

// counterTTL is how long a counter handle is used before its shard count
// is read again, so shards added by Grow (a sale sizes its counter) are
// used within a minute.
const counterTTL = time.Minute

type cachedCounter struct {
	c  *counter.Counter
	at time.Time
}

// counter returns the screening's tickets-sold counter, creating it on
// first use (idempotent) and caching the handle for counterTTL.
func (s *Service) counter(ctx context.Context, screeningID string) (*counter.Counter, error) {
	s.mu.Lock()
	cc, ok := s.counters[screeningID]
	s.mu.Unlock()
	if ok && time.Since(cc.at) < counterTTL {
		return cc.c, nil
	}
	c, err := counter.Open(ctx, s.client, CounterID(screeningID))
	if errors.Is(err, counter.ErrNotFound) {
		c, err = counter.Create(ctx, s.client, CounterID(screeningID), CounterShards)
		if errors.Is(err, counter.ErrExists) { // created meanwhile with another count (a sale's)
			c, err = counter.Open(ctx, s.client, CounterID(screeningID))
		}
	}
	if err != nil {
		if ok { // keep counting on the shards we know; they still exist
			return cc.c, nil
		}
		return nil, err
	}
	s.mu.Lock()
	s.counters[screeningID] = cachedCounter{c, time.Now()}
	s.mu.Unlock()
	return c, nil
}

// Cancel cancels a booking of uid: its seats become free, its tickets turn
// cancelled and the counter goes down, in one transaction, which reads
// each ticket's check-in: a booking with a ticket that has been used at the
// door is not cancelled (ErrTicketUsed). Cancelling a cancelled booking
// returns it unchanged. Errors: ErrBookingNotFound, ErrForbidden (another
// user's), ErrTicketUsed.
func (s *Service) Cancel(ctx context.Context, uid, bookingID string) (_ Booking, err error) {
	ctx, done := s.metrics.start(ctx, metricOpCancel)
	defer done(&err)
	if uid == "" {
		return Booking{}, fmt.Errorf("%w: no user", ErrInvalidArgument)
	}
	if err := checkDocID("bookingId", bookingID); err != nil {
		return Booking{}, err
	}
	ref := s.client.Collection(Bookings).Doc(bookingID)
	var b Booking
	var freed []*firestore.DocumentRef
	err = s.runTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		freed = nil
		snap, err := tx.Get(ref)
		if notFound(err) {
			return fmt.Errorf("%w: %q", ErrBookingNotFound, bookingID)
		}
		if err != nil {
			return err
		}
		b = Booking{}
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
		pass := s.passRef(b.ScreeningID, uid)
		var payment []*firestore.DocumentRef
		if b.Payment != nil && s.till != nil {
			payment = []*firestore.DocumentRef{s.till.Payment(b.HoldID)}
		}
		tickets := s.ticketIDs(b)
		var ticketRefs []*firestore.DocumentRef // each ticket, then its check-in
		for _, id := range tickets {
			ticketRefs = append(ticketRefs, s.tickets.Ref(id), s.tickets.CheckIn(id))
		}
		snaps, err := tx.GetAll(append(append(append(refs, pass...), payment...), ticketRefs...))
		if err != nil {
			return err
		}
		// The tickets first: one that has been used (in at the door, or
		// transferred to another user) refuses the cancel (ticket_used)
		// before anything else is decided, the refund of a paid booking
		// included.
		ticketSnaps := snaps[len(snaps)-len(ticketRefs):]
		snaps = snaps[:len(snaps)-len(ticketRefs)]
		for i := 0; i < len(ticketSnaps); i += 2 {
			if !ticketSnaps[i].Exists() {
				continue
			}
			ups, err := s.tickets.Cancel(b.UID, ticketSnaps[i], ticketSnaps[i+1])
			if err != nil {
				return err
			}
			if len(ups) > 0 {
				if err := tx.Update(ticketSnaps[i].Ref, ups); err != nil {
					return err
				}
			}
		}
		if len(payment) > 0 {
			// A paid booking's refund falls due in the commit that frees
			// its seats; the till makes it (Refund) once this commits.
			p := snaps[len(snaps)-1]
			snaps = snaps[:len(snaps)-1]
			ups, err := s.till.BookingCancelled(p, b, snap.ReadTime)
			if err != nil {
				return err
			}
			if len(ups) > 0 && p.Exists() {
				if err := tx.Update(p.Ref, ups); err != nil {
					return err
				}
			}
		}
		for i, seat := range snaps[:len(refs)] {
			if seat.Exists() && seat.Data()["bookingId"] == bookingID {
				if err := tx.Delete(refs[i]); err != nil {
					return err
				}
				freed = append(freed, refs[i])
			}
		}
		if err := s.settle(tx, snaps[len(refs):], Change{Kind: BookingCancelled, BookingID: bookingID, Seats: len(b.Seats)}, snap.ReadTime); err != nil {
			return err
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
	s.taken.mark(false, freed...)
	b.ID = bookingID
	return b, nil
}

// passRef is the user's pass document under the gate, as a list of zero
// (no gate) or one reference to read with the rest.
func (s *Service) passRef(screeningID, uid string) []*firestore.DocumentRef {
	if s.gate == nil {
		return nil
	}
	return []*firestore.DocumentRef{s.gate.Pass(screeningID, uid)}
}

// settle records a change of an admitted claim on the user's pass (snaps:
// what passRef read, zero or one snapshot), inside tx.
func (s *Service) settle(tx *firestore.Transaction, snaps []*firestore.DocumentSnapshot, c Change, now time.Time) error {
	if s.gate == nil || len(snaps) == 0 || !snaps[0].Exists() {
		return nil
	}
	ups, err := s.gate.Settle(snaps[0], c, now)
	if err != nil || len(ups) == 0 {
		return err
	}
	return tx.Update(snaps[0].Ref, ups)
}
