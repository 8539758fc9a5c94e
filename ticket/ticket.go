package ticket

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/lock"
	gonanoid "github.com/matoous/go-nanoid/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collections (CONTRACT §13) and statuses.
const (
	Collection = "tickets"  // tickets/{ticketId}
	CheckIns   = "checkins" // checkins/{ticketId}: the door's state of a ticket (package door)

	StatusValid     = "valid"
	StatusCancelled = "cancelled"

	// IDLength is a ticket id's length: nanoid's default alphabet
	// (A-Z a-z 0-9 _ -), 126 random bits.
	IDLength = 21
)

// Errors to branch on; the HTTP layer maps them (with booking's:
// booking.ErrInvalidArgument, ErrForbidden, ErrScreeningStarted and
// ErrTicketUsed).
var (
	ErrTicketNotFound = errors.New("ticket: ticket not found")
	// ErrUserNotFound: no account has the email a ticket is transferred to.
	ErrUserNotFound = errors.New("ticket: no user has that email")
	// ErrCancelled: the ticket's booking was cancelled or refunded.
	ErrCancelled = errors.New("ticket: the ticket is cancelled")
)

// Ticket is a ticket document (CONTRACT §13). Its JSON is what
// TransferTicket answers: never the code, which only its user reads.
type Ticket struct {
	ID          string    `firestore:"-" json:"ticketId"`
	UID         string    `firestore:"uid" json:"-"`
	ScreeningID string    `firestore:"screeningId" json:"screeningId"`
	SeatID      string    `firestore:"seatId" json:"seatId"`
	BookingID   string    `firestore:"bookingId" json:"-"`
	Status      string    `firestore:"status" json:"-"`
	Version     int       `firestore:"version" json:"version"`
	Code        string    `firestore:"code" json:"-"`
	IssuedAt    time.Time `firestore:"issuedAt,serverTimestamp" json:"-"`
}

// Service issues, cancels, reads and transfers tickets. It is booking's
// Tickets seam: booking.New(client, booking.WithTickets(tickets)).
type Service struct {
	client *firestore.Client
	keys   *Keys
}

// New returns a Service that signs codes with keys (which must sign).
func New(client *firestore.Client, keys *Keys) *Service {
	return &Service{client: client, keys: keys}
}

// Keys are the keys the Service signs with.
func (s *Service) Keys() *Keys { return s.keys }

// Ref is the document of ticket id.
func (s *Service) Ref(id string) *firestore.DocumentRef {
	return s.client.Collection(Collection).Doc(id)
}

// CheckIn is the document of ticket id's check-in at the door.
func (s *Service) CheckIn(id string) *firestore.DocumentRef {
	return s.client.Collection(CheckIns).Doc(id)
}

// NewID returns a fresh ticket id: a nanoid that does not begin with '-'
// (one in 64 did), which a command line takes for a flag (`firelock
// tickets show -sNq…` failed; the fresh-clone run of 11-30 02:20).
func NewID() (string, error) {
	for {
		id, err := gonanoid.New(IDLength)
		if err != nil || !strings.HasPrefix(id, "-") {
			return id, err
		}
	}
}

// Issue makes a ticket per seat of booking b, version 1, each with its
// code (booking's Tickets seam: booking creates them in the commit that
// confirms b). It writes nothing.
func (s *Service) Issue(b booking.Booking) ([]booking.IssuedTicket, error) {
	out := make([]booking.IssuedTicket, 0, len(b.Seats))
	for _, seat := range b.Seats {
		id, err := NewID()
		if err != nil {
			return nil, err
		}
		code, err := s.keys.Sign(Payload{TicketID: id, ScreeningID: b.ScreeningID, Seat: seat, Version: 1})
		if err != nil {
			return nil, err
		}
		out = append(out, booking.IssuedTicket{ID: id, Seat: seat, Doc: Ticket{
			UID: b.UID, ScreeningID: b.ScreeningID, SeatID: seat, BookingID: b.ID,
			Status: StatusValid, Version: 1, Code: code,
		}})
	}
	return out, nil
}

// Cancel decides the cancellation of a ticket whose booking, uid's, is
// being cancelled (booking's Tickets seam): booking.ErrTicketUsed once it
// has a check-in (it is in, or went in and out) or it was transferred to
// another user (it is no longer uid's to cancel, nor to be refunded), else
// the update to cancelled (none for one cancelled already).
func (s *Service) Cancel(uid string, ticket, checkIn *firestore.DocumentSnapshot) ([]firestore.Update, error) {
	if checkIn.Exists() {
		state, _ := checkIn.Data()["state"].(string)
		return nil, fmt.Errorf("%w: ticket %s (seat %v) is %s at the door", booking.ErrTicketUsed, ticket.Ref.ID, ticket.Data()["seatId"], state)
	}
	if holder, _ := ticket.Data()["uid"].(string); holder != uid {
		return nil, fmt.Errorf("%w: ticket %s (seat %v) was transferred to another account", booking.ErrTicketUsed, ticket.Ref.ID, ticket.Data()["seatId"])
	}
	if ticket.Data()["status"] == StatusCancelled {
		return nil, nil
	}
	return []firestore.Update{{Path: "status", Value: StatusCancelled}}, nil
}

// decode reads a ticket document.
func decode(snap *firestore.DocumentSnapshot) (Ticket, error) {
	var t Ticket
	if err := snap.DataTo(&t); err != nil {
		return Ticket{}, fmt.Errorf("ticket: %s is malformed: %w", snap.Ref.ID, err)
	}
	t.ID = snap.Ref.ID
	return t, nil
}

// DecodeTicket reads a ticket document as a Ticket: for the door and the
// command line, which read tickets themselves.
func DecodeTicket(snap *firestore.DocumentSnapshot) (Ticket, error) { return decode(snap) }

func checkTicketID(id string) error {
	if len(id) > 200 || lock.ValidateKey(id) != nil {
		return fmt.Errorf("%w: ticketId %q is not a ticket id", booking.ErrInvalidArgument, id)
	}
	return nil
}

// Get reads ticket id as stored (one read). Errors: ErrTicketNotFound,
// booking.ErrInvalidArgument.
func (s *Service) Get(ctx context.Context, id string) (Ticket, error) {
	if err := checkTicketID(id); err != nil {
		return Ticket{}, err
	}
	snap, err := s.Ref(id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Ticket{}, fmt.Errorf("%w: %q", ErrTicketNotFound, id)
	}
	if err != nil {
		return Ticket{}, err
	}
	return decode(snap)
}

// Users finds the account a ticket is transferred to; functions adapts
// Firebase Auth's GetUserByEmail to it.
type Users interface {
	// UIDByEmail returns the uid of the account with email, or an error
	// wrapping ErrUserNotFound.
	UIDByEmail(ctx context.Context, email string) (string, error)
}

// Transfer moves ticket ticketID of user uid to the account with email
// toEmail (CONTRACT §13): in one transaction, which reads the ticket, its
// check-in and its screening, the ticket gets the new user, version + 1, a
// new code of that version and a new issuedAt. The old code answers
// ticket_reissued at the door from then on; a scan that commits first makes
// the transfer ticket_used. It returns the ticket as transferred.
//
// Another user's ticket is refused (booking.ErrForbidden) before the email
// is looked up. Errors: booking.ErrInvalidArgument (a malformed id or
// email, or the caller's own email), ErrTicketNotFound, booking.ErrForbidden,
// ErrUserNotFound, ErrCancelled, booking.ErrTicketUsed (it has a check-in),
// booking.ErrScreeningStarted. Costs: one read, the lookup, then a
// transaction of one batched read of three documents and one write.
func (s *Service) Transfer(ctx context.Context, uid, ticketID, toEmail string, users Users) (Ticket, error) {
	if uid == "" {
		return Ticket{}, fmt.Errorf("%w: no user", booking.ErrInvalidArgument)
	}
	if err := checkTicketID(ticketID); err != nil {
		return Ticket{}, err
	}
	if a, err := mail.ParseAddress(toEmail); err != nil || a.Address != toEmail || len(toEmail) > 320 {
		return Ticket{}, fmt.Errorf("%w: toEmail %q is not an email address", booking.ErrInvalidArgument, toEmail)
	}
	t, err := s.Get(ctx, ticketID)
	if err != nil {
		return Ticket{}, err
	}
	if t.UID != uid {
		return Ticket{}, fmt.Errorf("%w: the ticket belongs to another user", booking.ErrForbidden)
	}
	to, err := users.UIDByEmail(ctx, strings.TrimSpace(toEmail))
	if err != nil {
		return Ticket{}, err
	}
	if to == uid {
		return Ticket{}, fmt.Errorf("%w: the ticket is yours already", booking.ErrInvalidArgument)
	}
	var wrote int // the version an earlier attempt of this call wrote
	attempt := func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{s.Ref(ticketID), s.CheckIn(ticketID), s.client.Collection(booking.Screenings).Doc(t.ScreeningID)})
		if err != nil {
			return err
		}
		if !snaps[0].Exists() {
			return fmt.Errorf("%w: %q", ErrTicketNotFound, ticketID)
		}
		if t, err = decode(snaps[0]); err != nil {
			return err
		}
		if wrote != 0 && t.Version == wrote && t.UID == to {
			return nil // that attempt committed, its answer lost
		}
		if t.UID != uid {
			return fmt.Errorf("%w: the ticket belongs to another user", booking.ErrForbidden)
		}
		if t.Status == StatusCancelled {
			return fmt.Errorf("%w: %s", ErrCancelled, ticketID)
		}
		if snaps[1].Exists() {
			return fmt.Errorf("%w: the ticket has been scanned at the door", booking.ErrTicketUsed)
		}
		sc, err := booking.DecodeScreening(snaps[2])
		if err != nil {
			return err
		}
		if !sc.StartsAt.IsZero() && !snaps[0].ReadTime.Before(sc.StartsAt) {
			return booking.ErrScreeningStarted
		}
		code, err := s.keys.Sign(Payload{TicketID: t.ID, ScreeningID: t.ScreeningID, Seat: t.SeatID, Version: t.Version + 1})
		if err != nil {
			return err
		}
		t.UID, t.Version, t.Code = to, t.Version+1, code
		wrote = t.Version
		return tx.Update(snaps[0].Ref, []firestore.Update{
			{Path: "uid", Value: to}, {Path: "version", Value: t.Version}, {Path: "code", Value: code},
			{Path: "issuedAt", Value: firestore.ServerTimestamp},
		})
	}
	if err := runTransaction(ctx, s.client, attempt); err != nil {
		return Ticket{}, err
	}
	return t, nil
}

// runTransaction runs fn in a transaction, and once more on a fresh read
// when its commit failed in a way that may hide a landed commit (the
// client library sends a commit whose answer was lost again, and Firestore
// refuses the copy although the first landed): fn finds its own change done
// when it reads again (as booking's runTransaction does).
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

// mayHaveLanded: a commit that failed so may have landed unheard.
func mayHaveLanded(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unknown, codes.Internal, codes.Canceled, codes.InvalidArgument:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
