package sale

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

// Collections. queue and sales are CONTRACT §7's; the others are
// server-only (the rules match neither).
const (
	// Queue holds one place per user and sale: queue/{QueueID}.
	Queue = "queue"
	// Sales holds the public state of each sale: sales/{screeningId}.
	Sales = "sales"
	// Draws holds an early joiner's random draw until the admitter ranks
	// it at opensAt: queueDraws/{QueueID} {screeningId, draw}. Server-only,
	// so nobody learns a rank before the opening.
	Draws = "queueDraws"
	// States holds each sale's private admission state: saleStates/{screeningId}.
	States = "saleStates"
	// Rankings holds the ranking of each sale's early joiners:
	// saleRankings/{screeningId}.
	Rankings = "saleRankings"
	// Locks holds the admitter leases, one per sale: locks/admit-{screeningId}.
	Locks = "locks"
)

// AdmitJob is the scheduled job that admits (CONTRACT §7, §4).
const AdmitJob = "admitQueue"

// Place statuses (CONTRACT §7).
const (
	StatusWaiting  = "waiting"
	StatusAdmitted = "admitted"
	StatusDone     = "done"
	StatusExpired  = "expired"
)

// Sale states (CONTRACT §7, §7a), in sales/{screeningId}.state.
const (
	StateScheduled = "scheduled"
	StateOpen      = "open"
	// StatePaused: nobody new is admitted; places are kept, joins go on and
	// live passes keep working. An operator paused the sale (§8), or its
	// configuration was made invalid while it ran (§7a).
	StatePaused  = "paused"
	StateSoldOut = "soldout"
	StateClosed  = "closed"
)

// FieldControl is the screening field that carries the operators' state of
// its sale (CONTRACT §8): screenings/{id}.saleControl {paused, closed,
// closedAt?, updatedAt}, written only by Operate, beside the sale's
// configuration (screenings/{id}.sale), so that the Gate, JoinQueue and the
// admitter see it in the read they make anyway.
const FieldControl = "saleControl"

// Control is the operators' state of a sale.
type Control struct {
	Paused bool `firestore:"paused" json:"paused"`
	// Closed: selling stopped for good (close is final).
	Closed bool `firestore:"closed" json:"closed"`
}

// controlOf reads the screening's control state; a missing or malformed
// one is a running sale.
func controlOf(screening *firestore.DocumentSnapshot) Control {
	var c Control
	m, _ := screening.Data()[FieldControl].(map[string]any)
	c.Paused, _ = m["paused"].(bool)
	c.Closed, _ = m["closed"].(bool)
	return c
}

// Defaults and bounds of a sale's configuration.
const (
	DefaultPass            = 600 * time.Second
	DefaultMaxSeatsPerUser = 6
	MinPass                = 30 * time.Second
	MaxPass                = 3600 * time.Second
	// MaxAdmitPerMinute keeps admissions (about 170 a second) well under
	// what the indexes of admittedAt and passUntil, which grow with time,
	// take (about 500 writes a second), and the bookings they bring within
	// what the tickets-sold counter's shards take (docs/waiting-room.md).
	MaxAdmitPerMinute = 10000
	// MaxActive bounds live passes; it is far beyond any hall.
	MaxActive = 100000
	// Shards is how many ranges the waiting line is indexed in: the first
	// hex digit of the queueId (docs/waiting-room.md).
	Shards = 16
	// MaxMarks is the most points sales/{id}.marks carries.
	MaxMarks = 100
)

// Errors to branch on; the HTTP layer maps them (CONTRACT §7).
var (
	// ErrNoSale: the screening has no sale (409 no_sale).
	ErrNoSale = errors.New("sale: the screening has no sale")
	// ErrMisconfigured: the screening's sale is not a valid configuration;
	// nobody joins and nobody is admitted until an admin fixes it. It
	// answers like ErrNoSale (409 no_sale), with the problem in the message.
	ErrMisconfigured = errors.New("sale: the screening's sale is misconfigured")
	// ErrSoldOut: no seat is free and no hold is live (409 sold_out).
	ErrSoldOut = errors.New("sale: sold out")
	// ErrJoinTimedOut: a join could not commit within its window (see
	// Join); nothing was joined and the caller may try again (503).
	ErrJoinTimedOut = errors.New("sale: the join did not commit in time; try again")
	// ErrEmailNotVerified: the sale requires a verified email, and the
	// joiner's ID token does not say email_verified (403
	// email_not_verified, CONTRACT §12).
	ErrEmailNotVerified = errors.New("sale: this sale needs a verified email address")
	// ErrClosed: an operator closed the sale; it takes no joins, holds or
	// bookings, and no more operations but revoke (409 sale_closed).
	ErrClosed = errors.New("sale: the sale is closed")
	// ErrInvalidSale: a configure would break the sale; the message names
	// the field, the value and its JSON type (400 invalid_sale).
	ErrInvalidSale = errors.New("sale: invalid sale")
	// ErrStarted: the sale has opened, and opensAt can no longer change
	// (409 sale_started).
	ErrStarted = errors.New("sale: the sale has opened")
)

// Config is a screening's sale: screenings/{id}.sale, written by admins.
type Config struct {
	OpensAt         time.Time
	AdmitPerMinute  int
	MaxActive       int
	PassSeconds     int // default 600
	MaxSeatsPerUser int // default 6
	// RequireVerifiedEmail: only users whose ID token says email_verified
	// may join (CONTRACT §12; default false).
	RequireVerifiedEmail bool
}

// Pass is how long a pass lasts.
func (c Config) Pass() time.Duration { return time.Duration(c.PassSeconds) * time.Second }

// QueueID is the id of uid's place in the sale of screeningID: the
// lowercase hex SHA-256 of screeningID + "/" + uid. The rules compute the
// same (hashing.sha256(...).toHexString().lower()), so they find a user's
// pass without a query; and hashed ids spread a burst of joins over the
// whole key space of queue/.
func QueueID(screeningID, uid string) string {
	h := sha256.Sum256([]byte(screeningID + "/" + uid))
	return hex.EncodeToString(h[:])
}

// shardOf is the waiting-line shard of a place: its queueId's first hex
// digit, 0..15.
func shardOf(queueID string) int {
	c := queueID[0]
	if c >= 'a' {
		return int(c-'a') + 10
	}
	return int(c - '0')
}

// options are the knobs of a Service and its Admitter. Tests shorten the
// windows; production keeps the contract's.
type options struct {
	rateWindow time.Duration // admitPerMinute counts admissions in any window this long
	minPass    time.Duration
	joinWindow time.Duration
	passMargin time.Duration
	lease      time.Duration
	handover   time.Duration
	tick       time.Duration
	idleTick   time.Duration
	minute     time.Duration // a saleStats minute (tests shorten it)
	log        *slog.Logger
	meter      meterOption // WithMeterProvider
	takings    Takings     // WithTakings
	budget     writeBudget // WithWriteBudget
}

// Option configures a Service.
type Option func(*options)

// WithRateWindow sets the window in which at most admitPerMinute people
// are admitted (default a minute, as the name says). Tests shorten it.
func WithRateWindow(d time.Duration) Option { return func(o *options) { o.rateWindow = d } }

// WithMinPass lowers the shortest passSeconds a sale may set (default
// MinPass, 30 s). Tests use passes of a second or two.
func WithMinPass(d time.Duration) Option { return func(o *options) { o.minPass = d } }

// WithJoinWindow sets how long a join may take from its deciding read to
// its commit (default 1 s). The admitter ranks early joiners only once
// every early join has had that long to commit, and admits a later joiner
// only once everyone who joined before them has: so nobody who joined
// earlier can turn up behind someone already admitted.
func WithJoinWindow(d time.Duration) Option { return func(o *options) { o.joinWindow = d } }

// WithPassMargin sets how much of a pass must be left for a new hold or
// booking (default 1 s): the deciding read and the commit are apart.
func WithPassMargin(d time.Duration) Option { return func(o *options) { o.passMargin = d } }

// DefaultAdmitterLease is the length of an admitter's lease on a sale.
// Renewed every third, each renewal may take 19 s to be answered: under a
// crowd the database answers late (the ten-times surge of issue #41 saw
// the emulator's commits take 3-14 s, and a 10-s lease, whose renewals
// had 5.7 s, was lost twice even with the crowd's calls bounded). A lost
// lease stalls admissions at the sale's busiest moment; a longer one
// stalls them only after a crash, rare, and then for up to this long (up
// to a third more when the holder is cut off from its answers but its
// last renewal landed unheard: 35 s measured, 12 s with a 10-s lease).
const DefaultAdmitterLease = 30 * time.Second

// WithAdmitterLease sets the length of an admitter's lease on a sale
// (default DefaultAdmitterLease): an admitter that crashed stalls its
// sale this long.
func WithAdmitterLease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// WithHandover sets how long a run of admitQueue keeps its sales past its
// end, the next tick (default 15 s): the next run starts at that tick but
// arrives later (Pub/Sub's push, a cold start, the job's own lease), and
// takes each sale over the moment this run lets go of it.
func WithHandover(d time.Duration) Option { return func(o *options) { o.handover = d } }

// WithTick sets how often a running admitter looks at a sale with people
// waiting or passes live (default 1 s, within the contract's 2 s), and at
// an idle one (idle, default 5 s).
func WithTick(busy, idle time.Duration) Option {
	return func(o *options) { o.tick, o.idleTick = busy, idle }
}

// WithWriteBudget sets how many writes the admitter's own documents of a
// sale (saleStates/{id}, saleRankings/{id}) take in any window, counted by
// their commit times (default 10 in any 10 s: CONTRACT §7's write a
// second). Tests with short ticks shorten the window with them.
func WithWriteBudget(n int, window time.Duration) Option {
	return func(o *options) { o.budget = writeBudget{n: max(n, 1), window: window} }
}

// WithLogger sets where misconfigured sales and admitter trouble are
// logged (default JSON lines on stderr).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Takings counts the money a priced sale took in a stretch of time
// (CONTRACT §10): package payment's Ledger is one. The admitter adds its
// figures to each saleStats minute.
type Takings interface {
	// Takings returns the amounts paid and refunded for the screening's
	// holds from from (inclusive) to to (exclusive), in the currency's
	// smallest unit, and how many late payments were booked.
	Takings(ctx context.Context, screeningID string, from, to time.Time) (revenue, refunds, late int64, err error)
}

// WithTakings adds each minute's revenue, refunds and late payments, as t
// counts them, to the sale's minute figures.
func WithTakings(t Takings) Option { return func(o *options) { o.takings = t } }

// Service joins users to queues and is the booking Gate of sales
// (booking.Gate). Safe for concurrent use.
type Service struct {
	client *firestore.Client
	o      options
	mu     sync.Mutex
	logged map[string]logged // misconfigurations logged, by screening
	// publics: the sales' public documents as joins last read them.
	publics publics
}

type logged struct {
	problem string
	at      time.Time
}

// shouldLog says whether to log a sale's misconfiguration: once a minute
// per screening and instance, or when the problem changes, so a crowd of
// joins does not flood the log.
func (s *Service) shouldLog(screeningID string, problem error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.logged[screeningID]; ok && l.problem == problem.Error() && time.Since(l.at) < time.Minute {
		return false
	}
	if len(s.logged) > 1000 {
		clear(s.logged)
	}
	s.logged[screeningID] = logged{problem.Error(), time.Now()}
	return true
}

var _ booking.Gate = (*Service)(nil)

// New returns a Service on client.
func New(client *firestore.Client, opts ...Option) *Service {
	o := options{
		rateWindow: time.Minute, minPass: MinPass, joinWindow: time.Second, passMargin: time.Second,
		lease: DefaultAdmitterLease, handover: 15 * time.Second, tick: time.Second, idleTick: 5 * time.Second, minute: time.Minute,
		budget: defaultWriteBudget,
		log:    slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}
	for _, opt := range opts {
		opt(&o)
	}
	return &Service{client: client, o: o, logged: map[string]logged{}}
}

func (s *Service) place(queueID string) *firestore.DocumentRef {
	return s.client.Collection(Queue).Doc(queueID)
}

// config reads and checks a screening's sale. Errors: ErrNoSale (no sale
// field), ErrMisconfigured (naming the field, the value and its type).
func (s *Service) config(screening *firestore.DocumentSnapshot) (Config, error) {
	raw, ok := screening.Data()["sale"]
	if !ok || raw == nil {
		return Config{}, fmt.Errorf("%w: screening %q", ErrNoSale, screening.Ref.ID)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return Config{}, fmt.Errorf("%w: screening %q: sale must be a map, not %s", ErrMisconfigured, screening.Ref.ID, describe(raw))
	}
	c, err := s.checkSale(m, screening.Data()["startsAt"], false)
	if err != nil {
		return Config{}, fmt.Errorf("%w: screening %q: %v", ErrMisconfigured, screening.Ref.ID, err)
	}
	return c, nil
}

// saleFields are the fields of a sale (CONTRACT §7), in the order they
// are checked and shown.
var saleFields = []string{"opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser", "requireVerifiedEmail"}

// FieldError is a sale field's problem: its name, the value given and why
// it is refused.
type FieldError struct {
	Field   string // e.g. "maxActive"; "sale" for the whole
	Value   any
	Problem string // e.g. "must be a whole number from 1 to 100000"
}

func (e *FieldError) Error() string {
	if e.Field == "sale" {
		return e.Problem
	}
	return fmt.Sprintf("sale.%s %s, not %s", e.Field, e.Problem, describe(e.Value))
}

// checkSale checks a sale's fields m as stored (opensAt a timestamp,
// numbers integers or whole doubles) or, fromJSON, as configure sends them
// (opensAt an RFC 3339 string, numbers JSON numbers), against the
// screening's startsAt. A wrong field is a *FieldError naming the field,
// the value and its type.
func (s *Service) checkSale(m map[string]any, startsAt any, fromJSON bool) (Config, error) {
	for k := range m {
		if !slices.Contains(saleFields, k) {
			return Config{}, &FieldError{Field: "sale", Problem: fmt.Sprintf("sale has an unknown field %q (the fields are %s)", k, strings.Join(saleFields, ", "))}
		}
	}
	var c Config
	var ok bool
	switch v := m["opensAt"].(type) {
	case time.Time:
		c.OpensAt, ok = v, !fromJSON
	case string:
		if fromJSON {
			var err error
			c.OpensAt, err = time.Parse(time.RFC3339Nano, v)
			ok = err == nil
		}
	}
	if !ok {
		want := "must be a timestamp"
		if fromJSON {
			want = "must be an RFC 3339 time, e.g. \"2026-12-01T18:00:00Z\""
		}
		return Config{}, &FieldError{Field: "opensAt", Value: m["opensAt"], Problem: want}
	}
	start, ok := startsAt.(time.Time)
	if !ok {
		return Config{}, &FieldError{Field: "sale", Problem: "a screening on sale needs a startsAt timestamp"}
	}
	if !c.OpensAt.Before(start) { // it would never open: everyone joined would wait for nothing
		return Config{}, &FieldError{Field: "opensAt", Value: c.OpensAt, Problem: fmt.Sprintf("must be before the screening's startsAt (%s)", start.UTC().Format(time.RFC3339))}
	}
	ints := []struct {
		name     string
		dst      *int
		def      int
		min, max int
	}{
		{"admitPerMinute", &c.AdmitPerMinute, 0, 1, MaxAdmitPerMinute},
		{"maxActive", &c.MaxActive, 0, 1, MaxActive},
		{"passSeconds", &c.PassSeconds, int(DefaultPass / time.Second), int(s.o.minPass / time.Second), int(MaxPass / time.Second)},
		{"maxSeatsPerUser", &c.MaxSeatsPerUser, DefaultMaxSeatsPerUser, 1, booking.MaxSeats},
	}
	for _, f := range ints {
		v, present := m[f.name]
		if (!present || (fromJSON && v == nil)) && f.def != 0 {
			*f.dst = f.def
			continue
		}
		n, ok := wholeNumber(v)
		if !ok || n < f.min || n > f.max {
			return Config{}, &FieldError{Field: f.name, Value: v, Problem: fmt.Sprintf("must be a whole number from %d to %d", f.min, f.max)}
		}
		*f.dst = n
	}
	switch v := m["requireVerifiedEmail"].(type) {
	case nil: // absent, or null: the default
	case bool:
		c.RequireVerifiedEmail = v
	default:
		return Config{}, &FieldError{Field: "requireVerifiedEmail", Value: v, Problem: "must be true or false"}
	}
	return c, nil
}

// describe names a value and its type as JSON (and Firestore) know it, for
// messages: the string "50", the number 0.5, null, an object.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case int64, int:
		return fmt.Sprintf("the number %d", x)
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number: // one no float64 holds (DecodeSale)
		return "the number " + string(x)
	case time.Time:
		return "the timestamp " + x.UTC().Format(time.RFC3339Nano)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%v (a %T)", v, v)
}

// wholeNumber accepts an integer, or a double without a fraction (what the
// console writes for 100).
func wholeNumber(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return wholeNumber(int64(x))
	case int64:
		if x > math.MaxInt32 || x < math.MinInt32 {
			return 0, false
		}
		return int(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}

// Place is a user's place in a sale's queue (CONTRACT §7), as stored.
type Place struct {
	ID          string    `firestore:"-"`
	UID         string    `firestore:"uid"`
	ScreeningID string    `firestore:"screeningId"`
	Status      string    `firestore:"status"`
	JoinedAt    time.Time `firestore:"joinedAt"`
	// Order sorts in admission order; empty until ranked (an early joiner,
	// until opensAt).
	Order      string     `firestore:"order,omitempty"`
	AdmittedAt *time.Time `firestore:"admittedAt,omitempty"`
	PassUntil  *time.Time `firestore:"passUntil,omitempty"`
	// Shard is the place's range of the waiting line's index.
	Shard int `firestore:"shard"`
	// Email is the joiner's email, from their ID token, in lowercase (""
	// when the token had none): operators find a person by it, and the
	// log names whom a revoke ended.
	Email string `firestore:"email,omitempty"`
	// AppCheck is what App Check made of the JoinQueue call that made the
	// place (CONTRACT §12): valid, missing or invalid; "" when App Check
	// was off. Under enforce only valid joins make places; under monitor
	// operators see how many places scripts took.
	AppCheck string `firestore:"appCheck,omitempty"`
}

func placeOf(snap *firestore.DocumentSnapshot) (Place, error) {
	var p Place
	if err := snap.DataTo(&p); err != nil {
		return Place{}, fmt.Errorf("sale: place %s is malformed: %w", snap.Ref.ID, err)
	}
	p.ID = snap.Ref.ID
	return p, nil
}
