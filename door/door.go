package door

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/ticket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collections and field values of CONTRACT §13.
const (
	CheckIns = ticket.CheckIns // checkins/{ticketId}: one state per ticket, the door's lock
	Scans    = "scans"         // screenings/{id}/scans/{nonce}: every scan, create only

	StateIn  = "in"
	StateOut = "out"

	DirectionIn  = "in"
	DirectionOut = "out"
)

// The results a scan is recorded with (scans/{nonce}.result, and
// firelock.checkins' firelock.result).
const (
	ResultAdmitted       = "admitted"
	ResultExited         = "exited"
	ResultAlreadyIn      = "already_in"
	ResultNotIn          = "not_in"
	ResultCancelled      = "cancelled"
	ResultReissued       = "reissued"
	ResultWrongScreening = "wrong_screening"
	ResultDoorClosed     = "door_closed"
	ResultInvalid        = "invalid"
	// ResultConflict: an offline admission (uploaded with offline true)
	// that found the ticket already in when it reached the server.
	ResultConflict  = "conflict"
	ResultNoReentry = "no_reentry"
)

// Results lists every result a scan is recorded with.
var Results = []string{ResultAdmitted, ResultExited, ResultAlreadyIn, ResultNotIn, ResultCancelled, ResultReissued,
	ResultWrongScreening, ResultDoorClosed, ResultInvalid, ResultConflict, ResultNoReentry}

// Limits of a scan.
const (
	MinNonce = 16  // characters
	MaxNonce = 128 // bytes
	// MaxClockSkew is how far in the future a scanner's scannedAt may lie
	// (by this server's clock) before the scan is refused as malformed.
	MaxClockSkew = time.Minute
)

// Errors to branch on; Code maps each to its CONTRACT §13 code. A
// refused scan that was recorded is a *Refusal wrapping one of them.
var (
	// ErrInvalidArgument: the request is malformed, or names a gate that is
	// not one of the door's (400 invalid_argument). Nothing is written.
	ErrInvalidArgument = fmt.Errorf("%w (door)", booking.ErrInvalidArgument)
	// ErrNonceReused: the nonce was used by another scan (another code,
	// gate, direction or scanner): 409 nonce_reused. Nothing is written.
	ErrNonceReused     = errors.New("door: nonce reused")
	ErrAlreadyIn       = errors.New("door: already in")
	ErrNotIn           = errors.New("door: not in")
	ErrTicketCancelled = errors.New("door: ticket cancelled")
	ErrTicketReissued  = errors.New("door: ticket reissued")
	ErrWrongScreening  = errors.New("door: a ticket of another screening")
	ErrDoorClosed      = errors.New("door: the door is closed")
	ErrNoReentry       = errors.New("door: no reentry")
	ErrInvalidTicket   = errors.New("door: not a ticket")
)

// Refusal is a scan that was recorded with a result other than admitted or
// exited. It wraps the error of its result (errors.Is(err, ErrAlreadyIn)).
type Refusal struct {
	Result   string // as recorded: already_in, conflict, not_in, ...
	Err      error
	TicketID string // "" for a code that is not a ticket
	Seat     string
	// Gate and At are the entry's, for already_in (and conflict): where
	// and when (Firestore's time) the ticket went in.
	Gate string
	At   time.Time
	// ScreeningID is the ticket's, for wrong_screening.
	ScreeningID string
	Detail      string
}

func (r *Refusal) Error() string {
	msg := r.Err.Error()
	if r.Detail != "" {
		msg += ": " + r.Detail
	}
	return msg
}

func (r *Refusal) Unwrap() error { return r.Err }

// Code is the CONTRACT §13 code of a CheckIn error: "ok" for nil,
// booking.Code's for the rest (invalid_argument, screening_not_found,
// unavailable, internal).
func Code(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrAlreadyIn):
		return "already_in"
	case errors.Is(err, ErrNotIn):
		return "not_in"
	case errors.Is(err, ErrTicketCancelled):
		return "ticket_cancelled"
	case errors.Is(err, ErrTicketReissued):
		return "ticket_reissued"
	case errors.Is(err, ErrWrongScreening):
		return "wrong_screening"
	case errors.Is(err, ErrDoorClosed):
		return "door_closed"
	case errors.Is(err, ErrNoReentry):
		return "no_reentry"
	case errors.Is(err, ErrNonceReused):
		return "nonce_reused"
	case errors.Is(err, ErrInvalidTicket):
		return "invalid_ticket"
	}
	return booking.Code(err)
}

// resultErr is the error of a refused result.
var resultErr = map[string]error{
	ResultAlreadyIn: ErrAlreadyIn, ResultConflict: ErrAlreadyIn, ResultNotIn: ErrNotIn, ResultCancelled: ErrTicketCancelled,
	ResultReissued: ErrTicketReissued, ResultWrongScreening: ErrWrongScreening, ResultDoorClosed: ErrDoorClosed,
	ResultInvalid: ErrInvalidTicket, ResultNoReentry: ErrNoReentry,
}

// CheckIn is a check-in document (CONTRACT §13): a ticket's state at the
// door. The first entry creates it (in, seq 1); with reentry, each exit and
// entry after moves seq on by one and flips the state.
type CheckIn struct {
	ScreeningID string    `firestore:"screeningId"`
	Version     int       `firestore:"version"` // the ticket's
	State       string    `firestore:"state"`
	Seq         int       `firestore:"seq"`
	Gate        string    `firestore:"gate"`
	At          time.Time `firestore:"at"`        // Firestore's time of the scan
	ScannedAt   time.Time `firestore:"scannedAt"` // the device's
	By          string    `firestore:"by"`
	Nonce       string    `firestore:"nonce"`
	Offline     bool      `firestore:"offline"`
}

// ScanRecord is a scan document, screenings/{id}/scans/{nonce}.
type ScanRecord struct {
	TicketID  string    `firestore:"ticketId,omitempty"`
	Gate      string    `firestore:"gate"`
	By        string    `firestore:"by"`
	Direction string    `firestore:"direction"`
	Result    string    `firestore:"result"`
	At        time.Time `firestore:"at"`
	ScannedAt time.Time `firestore:"scannedAt"`
	Offline   bool      `firestore:"offline"`
	// EntryGate and EntryAt (already_in and conflict only) are where and
	// when the ticket had gone in, as answered: a retry of the scan
	// answers them again, whatever the ticket did since.
	EntryGate string     `firestore:"entryGate,omitempty"`
	EntryAt   *time.Time `firestore:"entryAt,omitempty"`
	// CodeHash is the code scanned, hashed (CodeHash): the nonce sent
	// again with another code is nonce_reused, even another code of the
	// same ticket. CheckIn records it; a scanner app's own scans may not.
	CodeHash string `firestore:"codeHash,omitempty"`
}

// CodeHash is a scan record's codeHash: base64url (no padding) of the
// SHA-256 of the code as scanned.
func CodeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Request is one scan, as a scanner sends it.
type Request struct {
	Scanner     string // the scanner's uid: the scan's by
	ScreeningID string // the scanner's screening: the scan is logged under it
	Gate        string // the scanner's gate: one of the door's
	Code        string // what the ticket's QR code says
	Nonce       string // the scanner's, unique per scan: a retry sends it again
	Direction   string // in (or empty) or out
	// ScannedAt is the device's time of the scan (zero: the server's).
	ScannedAt time.Time
	// Offline: the scan was decided at the gate while offline and is
	// uploaded now; an entry that finds the ticket in is recorded conflict.
	Offline bool
}

// Scan is an admitted or exited scan: the ticket, and where and when
// (Firestore's time) it went in or out.
type Scan struct {
	Result      string    `json:"result"`
	TicketID    string    `json:"ticketId"`
	ScreeningID string    `json:"screeningId"`
	SeatID      string    `json:"seatId"`
	Gate        string    `json:"gate"`
	At          time.Time `json:"at"`
}

// Service checks tickets in. Safe for concurrent use.
type Service struct {
	client  *firestore.Client
	keys    *ticket.Keys
	metrics *doorMetrics
	hooks   hooks
}

// hooks are test-only: they plant bugs a checker must catch.
type hooks struct {
	// blindEntry plants a bug: an entry is decided without the check-in
	// (every in scan admits, overwriting it).
	blindEntry bool
	// beforeCommit runs before a transaction's writes are added.
	beforeCommit func()
}

// Option configures a Service.
type Option func(*Service)

// New returns a Service that verifies codes with keys (the public keys do:
// a door needs no private key).
func New(client *firestore.Client, keys *ticket.Keys, opts ...Option) *Service {
	s := &Service{client: client, keys: keys}
	for _, o := range opts {
		o(s)
	}
	if s.metrics == nil {
		s.metrics = newDoorMetrics(nil)
	}
	return s
}

func (r *Request) validate(now time.Time) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Scanner == "":
		return bad("no scanner")
	case r.ScreeningID == "" || len(r.ScreeningID) > 200 || lock.ValidateKey(r.ScreeningID) != nil:
		return bad("screeningId %q is not a screening id", r.ScreeningID)
	case !gatePattern.MatchString(r.Gate):
		return bad("gate %q is not a gate name (1 to 32 letters, digits, _ or -)", r.Gate)
	case r.Code == "":
		return bad("code is required")
	case len(r.Code) > 4*ticket.MaxCodeLength:
		return bad("code is longer than %d bytes", 4*ticket.MaxCodeLength)
	case utf8.RuneCountInString(r.Nonce) < MinNonce || len(r.Nonce) > MaxNonce || lock.ValidateKey(r.Nonce) != nil || strings.ContainsFunc(r.Nonce, unicode.IsControl):
		return bad("nonce must be %d to %d characters, unique per scan, and a valid document id", MinNonce, MaxNonce)
	case r.Direction != "" && r.Direction != DirectionIn && r.Direction != DirectionOut:
		return bad("direction %q: want in or out", r.Direction)
	case !r.ScannedAt.IsZero() && r.ScannedAt.After(now.Add(MaxClockSkew)):
		return bad("scannedAt %s is in the future (the server's clock says %s)", r.ScannedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case r.ScannedAt.Before(time.Time{}):
		// Firestore keeps no time before year 1: the commit would fail.
		return bad("scannedAt %s is before year 1", r.ScannedAt.UTC().Format(time.RFC3339))
	case r.Offline && r.ScannedAt.IsZero():
		return bad("an offline scan needs its scannedAt")
	}
	return nil
}

// CheckIn checks a ticket in (or out) at a gate: the door's state machine
// of CONTRACT §13, in one transaction on the ticket's check-in. A retry
// with the same nonce answers the same and writes nothing more.
//
// It verifies the code's signature first (no read), then reads the
// screening (its door), the ticket and its check-in in one batched read,
// and decides by Firestore's time of that read:
//
//   - 400 before anything is written: a malformed request, or a gate that
//     is not one of the door's (ErrInvalidArgument), a screening that does
//     not exist (booking.ErrScreeningNotFound);
//   - recorded refusals (a *Refusal): no door, or not open yet
//     (door_closed), a code that is not a ticket (invalid), a ticket of
//     another screening (wrong_screening), cancelled, reissued (a code of
//     an older version), already in (with where and when; conflict for an
//     offline entry), not in (an exit), no reentry;
//   - admitted: a first entry creates the check-in (in, seq 1); with the
//     door's reentry, an exit turns it out and the next entry in, seq + 1.
//
// Every decided scan creates screenings/{id}/scans/{nonce} in the same
// commit. A nonce used before by another scan (another ticket, gate,
// direction or scanner) is ErrNonceReused, and writes nothing.
//
// Costs: one transaction: one batched read of 3 documents (the screening
// only, for a code that is not a ticket of this screening) and one commit
// of 2 writes (check-in and scan; the scan only, for a refusal). A retry
// or a lost race reads again.
func (s *Service) CheckIn(ctx context.Context, r Request) (_ Scan, err error) {
	if err := r.validate(time.Now()); err != nil {
		return Scan{}, err
	}
	if r.Direction == "" {
		r.Direction = DirectionIn
	}
	p, verr := s.keys.Verify(r.Code)
	var d *decision
	err = runTransaction(ctx, s.client, func(ctx context.Context, tx *firestore.Transaction) error {
		refs := []*firestore.DocumentRef{s.client.Collection(booking.Screenings).Doc(r.ScreeningID)}
		if verr == nil && p.ScreeningID == r.ScreeningID {
			refs = append(refs, s.client.Collection(ticket.Collection).Doc(p.TicketID), s.client.Collection(CheckIns).Doc(p.TicketID))
		}
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		d = s.decide(r, p, verr, snaps)
		if d.err != nil || d.same {
			return d.err
		}
		if h := s.hooks.beforeCommit; h != nil {
			h()
		}
		if d.next != nil {
			ref := refs[2]
			if d.create {
				err = tx.Create(ref, *d.next)
			} else {
				err = tx.Set(ref, *d.next)
			}
			if err != nil {
				return err
			}
		}
		return tx.Create(s.scanRef(r.ScreeningID, r.Nonce), d.record)
	})
	if status.Code(err) == codes.AlreadyExists {
		// The nonce's scan is recorded: this is a retry (its first answer
		// lost), or another scan reusing the nonce. The record says which.
		return s.recorded(ctx, r, p, verr)
	}
	if err != nil {
		return Scan{}, err
	}
	if !d.same {
		s.metrics.count(ctx, d.record.Result)
	}
	return d.answer()
}

func (s *Service) scanRef(screeningID, nonce string) *firestore.DocumentRef {
	return s.client.Collection(booking.Screenings).Doc(screeningID).Collection(Scans).Doc(nonce)
}

// decision is what a scan does: the check-in to write (nil: none), the
// scan to record and the answer; or an error that writes nothing; or same:
// the scan was applied before (a retry), answer as then, write nothing.
type decision struct {
	next   *CheckIn
	create bool
	record ScanRecord
	scan   Scan
	refuse *Refusal
	err    error
	same   bool
}

func (d *decision) answer() (Scan, error) {
	if d.refuse != nil {
		return Scan{}, d.refuse
	}
	return d.scan, nil
}

// decide is the state machine (firestore.rules holds scanners' own writes
// to the same; docs/door.md). snaps are the screening and, for a code that
// verified, the ticket and its check-in, read at the same time.
func (s *Service) decide(r Request, p ticket.Payload, verr error, snaps []*firestore.DocumentSnapshot) *decision {
	now := snaps[0].ReadTime
	scannedAt := r.ScannedAt
	if scannedAt.IsZero() {
		scannedAt = now
	}
	d := &decision{record: ScanRecord{Gate: r.Gate, By: r.Scanner, Direction: r.Direction, At: now, ScannedAt: scannedAt, Offline: r.Offline, CodeHash: CodeHash(r.Code)}}
	if verr == nil {
		d.record.TicketID = p.TicketID // a code that verified names its ticket
	}
	refuse := func(result, detail string) *decision {
		d.record.Result = result
		d.refuse = &Refusal{Result: result, Err: resultErr[result], TicketID: d.record.TicketID, Seat: p.Seat, Detail: detail}
		return d
	}
	if !snaps[0].Exists() {
		d.err = fmt.Errorf("%w: %q", booking.ErrScreeningNotFound, r.ScreeningID)
		return d
	}
	door, hasDoor, derr := ConfigOf(snaps[0])
	switch {
	case derr != nil:
		return refuse(ResultDoorClosed, "the screening's door is misconfigured: "+derr.Error())
	case !hasDoor:
		return refuse(ResultDoorClosed, "the screening has no door")
	case !door.HasGate(r.Gate):
		d.err = fmt.Errorf("%w: gate %q is not one of the door's %v", ErrInvalidArgument, r.Gate, door.Gates)
		return d
	case !door.Open(now):
		return refuse(ResultDoorClosed, "it opens at "+door.OpensAt.UTC().Format(time.RFC3339))
	case verr != nil:
		p = ticket.Payload{}
		return refuse(ResultInvalid, strings.TrimPrefix(verr.Error(), "ticket: "))
	}
	if p.ScreeningID != r.ScreeningID {
		d = refuse(ResultWrongScreening, "the ticket is for screening "+p.ScreeningID)
		d.refuse.ScreeningID = p.ScreeningID
		return d
	}
	tsnap, csnap := snaps[1], snaps[2]
	if !tsnap.Exists() {
		return refuse(ResultInvalid, "no such ticket")
	}
	t, err := ticket.DecodeTicket(tsnap)
	if err != nil {
		d.err = err
		return d
	}
	switch {
	case t.ScreeningID != p.ScreeningID || t.SeatID != p.Seat || p.Version > t.Version:
		return refuse(ResultInvalid, "the code does not match the ticket")
	case t.Status == ticket.StatusCancelled:
		return refuse(ResultCancelled, "its booking was cancelled")
	case p.Version < t.Version:
		return refuse(ResultReissued, fmt.Sprintf("the code is of version %d, the ticket's is %d (it was transferred)", p.Version, t.Version))
	}
	var cur *CheckIn
	if csnap.Exists() {
		cur = &CheckIn{}
		if err := csnap.DataTo(cur); err != nil {
			d.err = fmt.Errorf("door: check-in %s is malformed: %w", csnap.Ref.ID, err)
			return d
		}
		if cur.Nonce == r.Nonce { // this scan's own check-in: a retry
			want := StateIn
			if r.Direction == DirectionOut {
				want = StateOut
			}
			if cur.Gate != r.Gate || cur.By != r.Scanner || cur.State != want {
				d.err = fmt.Errorf("%w: nonce %q was used at gate %s by another scan", ErrNonceReused, r.Nonce, cur.Gate)
				return d
			}
			d.same = true
			d.scan = Scan{Result: map[string]string{StateIn: ResultAdmitted, StateOut: ResultExited}[cur.State],
				TicketID: t.ID, ScreeningID: t.ScreeningID, SeatID: t.SeatID, Gate: cur.Gate, At: cur.At}
			return d
		}
	}
	if s.hooks.blindEntry && r.Direction == DirectionIn {
		cur = nil // a planted bug: the entry does not look at the check-in
	}
	next := &CheckIn{ScreeningID: t.ScreeningID, Version: t.Version, Gate: r.Gate, At: now, ScannedAt: scannedAt, By: r.Scanner, Nonce: r.Nonce, Offline: r.Offline}
	switch {
	case r.Direction == DirectionIn && cur == nil:
		next.State, next.Seq = StateIn, 1
		d.create = !s.hooks.blindEntry
	case r.Direction == DirectionIn && cur.State == StateIn:
		result := ResultAlreadyIn
		if r.Offline {
			result = ResultConflict
		}
		d = refuse(result, fmt.Sprintf("it went in at gate %s at %s", cur.Gate, cur.At.UTC().Format(time.RFC3339)))
		d.refuse.Gate, d.refuse.At = cur.Gate, cur.At
		d.record.EntryGate, d.record.EntryAt = cur.Gate, &cur.At
		return d
	case r.Direction == DirectionOut && (cur == nil || cur.State != StateIn):
		return refuse(ResultNotIn, "it is not in")
	case !door.Reentry:
		if r.Direction == DirectionOut {
			return refuse(ResultNoReentry, "this door lets a ticket in once: no exits are scanned")
		}
		return refuse(ResultNoReentry, "this door lets a ticket in once")
	default: // with reentry: out -> in, in -> out
		next.State, next.Seq = StateIn, cur.Seq+1
		if r.Direction == DirectionOut {
			next.State = StateOut
		}
	}
	d.next = next
	d.record.Result = ResultAdmitted
	if next.State == StateOut {
		d.record.Result = ResultExited
	}
	d.scan = Scan{Result: d.record.Result, TicketID: t.ID, ScreeningID: t.ScreeningID, SeatID: t.SeatID, Gate: r.Gate, At: now}
	return d
}

// recorded answers a scan whose nonce is recorded already (one read): as
// recorded, if it is the same scan (the same code, when the record says
// which, ticket, gate, direction and scanner), else ErrNonceReused.
func (s *Service) recorded(ctx context.Context, r Request, p ticket.Payload, verr error) (Scan, error) {
	snap, err := s.scanRef(r.ScreeningID, r.Nonce).Get(ctx)
	if err != nil {
		return Scan{}, err
	}
	var rec ScanRecord
	if err := snap.DataTo(&rec); err != nil {
		return Scan{}, err
	}
	ticketID := ""
	if verr == nil {
		ticketID = p.TicketID
	}
	if (rec.CodeHash != "" && rec.CodeHash != CodeHash(r.Code)) || rec.TicketID != ticketID || rec.Gate != r.Gate || rec.Direction != r.Direction || rec.By != r.Scanner {
		return Scan{}, fmt.Errorf("%w: nonce %q was used for another scan", ErrNonceReused, r.Nonce)
	}
	switch rec.Result {
	case ResultAdmitted, ResultExited:
		seat := p.Seat
		return Scan{Result: rec.Result, TicketID: rec.TicketID, ScreeningID: r.ScreeningID, SeatID: seat, Gate: rec.Gate, At: rec.At}, nil
	}
	ref := &Refusal{Result: rec.Result, Err: resultErr[rec.Result], TicketID: rec.TicketID, Seat: p.Seat, Detail: "as answered before"}
	if ref.Err == nil {
		return Scan{}, fmt.Errorf("door: scan %s is recorded with an unknown result %q", r.Nonce, rec.Result)
	}
	switch rec.Result {
	case ResultWrongScreening:
		ref.ScreeningID = p.ScreeningID
	case ResultAlreadyIn, ResultConflict:
		ref.Gate = rec.EntryGate
		if rec.EntryAt != nil {
			ref.At = *rec.EntryAt
		}
	}
	return Scan{}, ref
}

// runTransaction runs fn in a transaction, and once more on a fresh read
// when its commit failed in a way that may hide a landed commit (as
// booking's does): a scan that landed unheard finds its check-in (its own
// nonce) or its record when it runs again.
func runTransaction(ctx context.Context, client *firestore.Client, fn func(context.Context, *firestore.Transaction) error) error {
	for again := true; ; again = false {
		decided := false
		err := client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			decided = false
			if err := fn(ctx, tx); err != nil {
				return err
			}
			decided = true
			return nil
		})
		if err == nil || !decided || !again || ctx.Err() != nil || !mayHaveLanded(err) {
			return err
		}
	}
}

func mayHaveLanded(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unknown, codes.Internal, codes.Canceled, codes.InvalidArgument:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
