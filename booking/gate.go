package booking

import (
	"errors"
	"time"

	"cloud.google.com/go/firestore"
)

// A Gate admits holds and bookings of a screening: the on-sale waiting room
// (package sale, CONTRACT §7) is one. Booking consults it inside the commit
// that takes or frees seats. The user's pass document is read in the same
// batched read as the seats, and the gate's updates to it are committed with
// the seats on the update time that read saw. A pass that changed in between
// (it ended, or another hold of the same user used up the cap) fails the
// commit, and the request is decided again on a fresh read. Nothing is
// checked by a read that the commit does not condition on.
type Gate interface {
	// Gated reports whether the screening (its document, as read) is under
	// the gate. Holds and bookings of an ungated screening never consult it.
	Gated(screening *firestore.DocumentSnapshot) bool
	// Pass is the document that carries uid's admission to the screening.
	Pass(screeningID, uid string) *firestore.DocumentRef
	// Admit decides a new hold or booking c at Firestore time now (the read
	// time of the snapshots), from the screening and the user's pass (which
	// may not exist). It returns the updates of the pass document, committed
	// with the seats, or an error wrapping ErrSaleNotOpen, ErrSaleClosed,
	// ErrNotAdmitted or ErrSeatLimit.
	Admit(screening, pass *firestore.DocumentSnapshot, c Claim, now time.Time) ([]firestore.Update, error)
	// Settle returns the updates of the pass document for a change to a
	// claim the gate admitted before (nil: nothing to record), at Firestore
	// time now, or an error that refuses the change (an extension after the
	// pass ended: ErrNotAdmitted). The pass may not exist (the hold or
	// booking was made before the screening had a gate); Settle then
	// returns nil.
	Settle(pass *firestore.DocumentSnapshot, c Change, now time.Time) ([]firestore.Update, error)
	// SeatMap is the document that shows a gated screening's seats in one
	// string, for best-available holds (CONTRACT §7a, §11): its field
	// "seats" has a character per seat in layout order, '.' for a free one.
	SeatMap(screeningID string) *firestore.DocumentRef
	// SeatCap is the most seats one user may hold and book under the
	// screening's gate (0: no cap of the gate's own, or none it can read).
	SeatCap(screening *firestore.DocumentSnapshot) int
	// PaidBooking judges whether a completed payment may book hold c at
	// Firestore time now (CONTRACT §10a), from the screening and the
	// user's pass (which may not exist) as the payment's transaction read
	// them: nil, or an error wrapping ErrNotAdmitted (an operator revoked
	// the pass), and for a late payment (late: the hold has ended, and its
	// seats are all free) also ErrSaleClosed (an operator closed the sale)
	// or ErrSeatLimit (the user would go past the seat cap, counting their
	// live holds and bookings). A live paying hold is not refused for a
	// close (its holds may be confirmed while they live) or the cap (it
	// was counted when it was made).
	PaidBooking(screening, pass *firestore.DocumentSnapshot, c Claim, late bool, now time.Time) error
}

// ClaimKind says what a Claim takes seats for.
type ClaimKind string

// Claim kinds.
const (
	ClaimHold    ClaimKind = "hold"
	ClaimBooking ClaimKind = "booking"
)

// Claim is a new hold or booking that a Gate decides.
type Claim struct {
	Kind        ClaimKind
	ID          string // the hold's or the booking's ID
	UID         string
	ScreeningID string
	Seats       []string
	Until       time.Time // a hold's heldUntil; zero for a booking
}

// ChangeKind says how an admitted claim changed.
type ChangeKind string

// Change kinds.
const (
	// HoldExtended: ExtendHold moved the hold's end (Until). Under a sale it
	// needs a live pass, as a new hold does: a gate refuses it with
	// ErrNotAdmitted once the pass has ended.
	HoldExtended ChangeKind = "extended"
	// HoldPlaced: a hold whose commit landed late had its end placed again
	// at the commit's time plus its length (Until); never refused.
	HoldPlaced ChangeKind = "placed"
	// HoldPaying: the hold turned paying (CONTRACT §10), its end moved to
	// Until for the checkout; never refused: a hold made under a pass may
	// be paid after the pass ends, while it lives.
	HoldPaying       ChangeKind = "paying"
	HoldConfirmed    ChangeKind = "confirmed" // BookingID is the booking made from it
	HoldReleased     ChangeKind = "released"
	BookingCancelled ChangeKind = "cancelled"
)

// Change is a change to a hold or booking that a Gate admitted before.
type Change struct {
	Kind      ChangeKind
	HoldID    string // the hold (HoldExtended, HoldConfirmed, HoldReleased)
	BookingID string // the booking (HoldConfirmed, BookingCancelled)
	Seats     int
	Until     time.Time
	// Paid (HoldConfirmed): the hold was paid for. The gate refuses an
	// unpaid confirmation of a revoked user's hold; a payment of one is
	// refunded before it gets here (PaidBooking).
	Paid bool
}

// Gate errors; the HTTP layer maps them (CONTRACT §7).
var (
	// ErrSaleNotOpen: the screening's sale has not opened yet (409 sale_not_open).
	ErrSaleNotOpen = errors.New("booking: the sale has not opened")
	// ErrNotAdmitted: the caller has no live pass for the screening (403 not_admitted).
	ErrNotAdmitted = errors.New("booking: not admitted")
	// ErrSeatLimit: the request would take the caller past the screening's
	// seat cap (409 seat_limit).
	ErrSeatLimit = errors.New("booking: seat limit")
	// ErrSaleClosed: an operator closed the screening's sale: it takes no
	// new holds or bookings (409 sale_closed); live holds may still be
	// confirmed while they live.
	ErrSaleClosed = errors.New("booking: the sale is closed")
)
