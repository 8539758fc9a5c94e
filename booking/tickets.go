package booking

import (
	"errors"
	"maps"
	"slices"

	"cloud.google.com/go/firestore"
)

// Tickets issues a ticket per seat of every confirmed booking (CONTRACT
// §13); package ticket is one. Booking calls it inside its own commits: the
// tickets of a booking are created in the commit that confirms it (Book,
// either of its paths; ConfirmHold, either of its paths; a payment's
// confirmation, late or not), cancelled in the transaction that cancels
// it, which reads each ticket's check-in and is refused once one is used,
// and deleted with a booking whose commit landed after the screening
// started (late.go). The booking document lists them (Booking.Tickets).
type Tickets interface {
	// Issue returns new tickets for booking b, one per seat, to create in
	// the commit that confirms it. Their ids are random, so each call
	// returns others; only the commit that lands makes them.
	Issue(b Booking) ([]IssuedTicket, error)
	// Ref is the document of ticket id (tickets/{id}), and CheckIn the
	// document of its check-in at the door (checkins/{id}).
	Ref(id string) *firestore.DocumentRef
	CheckIn(id string) *firestore.DocumentRef
	// Cancel returns the updates that cancel a ticket of uid's booking, as
	// read in the transaction that cancels the booking, given its check-in
	// as read there (which may not exist), or an error wrapping
	// ErrTicketUsed for a ticket that has been checked in or transferred
	// to another user (no longer uid's to cancel). The door's check-in reads the
	// ticket in its own transaction, so of a cancel and a scan of one ticket
	// exactly one wins.
	Cancel(uid string, ticket, checkIn *firestore.DocumentSnapshot) ([]firestore.Update, error)
}

// IssuedTicket is a ticket to create: its id, its seat and its document.
type IssuedTicket struct {
	ID   string
	Seat string
	Doc  any
}

// ErrTicketUsed: a ticket of the booking has been checked in at the door,
// so the booking can no longer be cancelled (409 ticket_used).
var ErrTicketUsed = errors.New("booking: a ticket of the booking has been used")

// WithTickets issues tickets through t for every booking confirmed (and
// cancels them with their booking). Without it, bookings carry no tickets.
func WithTickets(t Tickets) Option { return func(s *Service) { s.tickets = t } }

// issue makes b's tickets (none without a Tickets) and lists them on b.
func (s *Service) issue(b *Booking) ([]IssuedTicket, error) {
	b.Tickets = nil
	if s.tickets == nil {
		return nil, nil
	}
	ts, err := s.tickets.Issue(*b)
	if err != nil {
		return nil, err
	}
	b.Tickets = make(map[string]string, len(ts))
	for _, t := range ts {
		b.Tickets[t.Seat] = t.ID
	}
	return ts, nil
}

// createTickets adds the creates of ts to a batch.
func (s *Service) createTickets(b *firestore.WriteBatch, ts []IssuedTicket) {
	for _, t := range ts {
		b.Create(s.tickets.Ref(t.ID), t.Doc)
	}
}

// createTicketsIn adds the creates of ts to a transaction.
func (s *Service) createTicketsIn(tx *firestore.Transaction, ts []IssuedTicket) error {
	for _, t := range ts {
		if err := tx.Create(s.tickets.Ref(t.ID), t.Doc); err != nil {
			return err
		}
	}
	return nil
}

// ticketIDs are the tickets a booking lists, in seat order (none without
// a Tickets: an instance that issues none leaves them alone).
func (s *Service) ticketIDs(b Booking) []string {
	if s.tickets == nil {
		return nil
	}
	var ids []string
	for _, seat := range slices.Sorted(maps.Keys(b.Tickets)) {
		ids = append(ids, b.Tickets[seat])
	}
	return ids
}
