package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Holds: seats kept for a checkout (CONTRACT §3). A hold is a lease with a
// user as holder and a checkout as its work: its seats show as held to
// everybody until heldUntil, by Firestore's clock, then they are free,
// whether or not the hold's documents were cleaned up yet (sweepExpired
// marks ended holds expired and clears their seats later).
const (
	Holds              = "holds"
	DefaultHold        = 420 * time.Second
	MinHold            = 5 * time.Second
	MaxHold            = 900 * time.Second
	MaxHoldSinceCreate = 1800 * time.Second // ExtendHold never goes past this

	StatusReleased = "released"
	StatusExpired  = "expired"
)

// Hold errors; the HTTP layer maps them.
var (
	ErrHoldNotFound = errors.New("booking: hold not found")
	// ErrHoldExpired: the hold has ended (lapsed, released or expired); its
	// seats may be somebody else's by now.
	ErrHoldExpired = errors.New("booking: hold expired")
)

// Hold is a hold document (CONTRACT §3).
type Hold struct {
	ID          string    `firestore:"-" json:"holdId"`
	UID         string    `firestore:"uid" json:"-"`
	ScreeningID string    `firestore:"screeningId" json:"screeningId"`
	Seats       []string  `firestore:"seats" json:"seats"`
	Status      string    `firestore:"status" json:"status"`
	HeldUntil   time.Time `firestore:"heldUntil" json:"heldUntil"`
	RequestID   string    `firestore:"requestId" json:"-"`
	CreatedAt   time.Time `firestore:"createdAt" json:"-"`
	BookingID   string    `firestore:"bookingId,omitempty" json:"bookingId,omitempty"`
}

func checkHoldLength(d time.Duration) error {
	if d < MinHold || d > MaxHold || d%time.Second != 0 {
		return fmt.Errorf("%w: holdSeconds must be a whole number from %d to %d", ErrInvalidArgument, int(MinHold/time.Second), int(MaxHold/time.Second))
	}
	return nil
}

// Hold holds all requested seats or none for d (0: DefaultHold), until
// server time now + d. It returns the hold and whether this call created
// it (false: a retry of the same user and requestId, also while the first
// attempt is in flight). Errors as Book's; nothing is written on any error.
func (s *Service) Hold(ctx context.Context, executionID string, r Request, d time.Duration) (Hold, bool, error) {
	if d == 0 {
		d = DefaultHold
	}
	if err := checkHoldLength(d); err != nil {
		return Hold{}, false, err
	}
	id := bookingID(r.UID, "hold\x00"+r.RequestID)
	href := s.client.Collection(Holds).Doc(id)
	seats := sortedSeats(r.Seats)
	h := Hold{ID: id, UID: r.UID, ScreeningID: r.ScreeningID, Seats: seats, Status: StatusHeld, RequestID: r.RequestID}
	prev, err := s.claim(ctx, r, href, func(w writes, prevSeats []*firestore.DocumentSnapshot, now time.Time) error {
		h.HeldUntil, h.CreatedAt = now.Add(d), now
		for i, seat := range seats {
			if err := w.seat(s.seatDoc(r.ScreeningID, seat), prevSeats[i], map[string]any{
				"status": StatusHeld, "holdId": id, "heldUntil": h.HeldUntil,
			}); err != nil {
				return err
			}
		}
		return w.create(href, h)
	})
	if err != nil {
		return Hold{}, false, err
	}
	if prev == nil {
		return h, true, nil
	}
	if err := prev.DataTo(&h); err != nil {
		return Hold{}, false, err
	}
	h.ID = id
	if !sameRequest(h.UID, h.ScreeningID, h.Seats, r) {
		return Hold{}, false, fmt.Errorf("%w: requestId %q was already used for other seats", ErrInvalidArgument, r.RequestID)
	}
	return h, false, nil
}

// onHold runs fn in a transaction on uid's hold holdID and its seat
// documents (two reads: the hold names its seats), judged at Firestore's
// time now (the hold snapshot's read time).
func (s *Service) onHold(ctx context.Context, uid, holdID string, fn func(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, now time.Time) error) (Hold, error) {
	if uid == "" || lock.ValidateKey(holdID) != nil {
		return Hold{}, fmt.Errorf("%w: holdId %q is not a valid id", ErrInvalidArgument, holdID)
	}
	href := s.client.Collection(Holds).Doc(holdID)
	var h Hold
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(href)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%w: %q", ErrHoldNotFound, holdID)
		}
		if err != nil {
			return err
		}
		h = Hold{}
		if err := snap.DataTo(&h); err != nil {
			return err
		}
		h.ID = holdID
		if h.UID != uid {
			return fmt.Errorf("%w: the hold belongs to another user", ErrForbidden)
		}
		refs := make([]*firestore.DocumentRef, len(h.Seats))
		for i, seat := range h.Seats {
			refs[i] = s.seatDoc(h.ScreeningID, seat)
		}
		seats, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		return fn(tx, &h, seats, snap.ReadTime)
	})
	return h, err
}

// live: the hold still holds its seats at server time now.
func (h *Hold) live(now time.Time) bool { return h.Status == StatusHeld && now.Before(h.HeldUntil) }

// ours: the seat document still shows this hold.
func ours(seat *firestore.DocumentSnapshot, holdID string) bool {
	return seat.Exists() && seat.Data()["holdId"] == holdID && seat.Data()["status"] == StatusHeld
}

// ExtendHold moves a live hold's end to server time now + d (d as for
// Hold), never past MaxHoldSinceCreate after its creation
// (ErrInvalidArgument). An ended hold gives ErrHoldExpired.
func (s *Service) ExtendHold(ctx context.Context, uid, holdID string, d time.Duration) (Hold, error) {
	if err := checkHoldLength(d); err != nil {
		return Hold{}, err
	}
	return s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, now time.Time) error {
		if !h.live(now) {
			return ErrHoldExpired
		}
		until := now.Add(d)
		if limit := h.CreatedAt.Add(MaxHoldSinceCreate); until.After(limit) {
			return fmt.Errorf("%w: a hold lasts at most %d seconds from its creation; it can be extended to %s at most",
				ErrInvalidArgument, int(MaxHoldSinceCreate/time.Second), limit.UTC().Format(time.RFC3339))
		}
		for _, seat := range seats {
			if !ours(seat, h.ID) {
				return ErrHoldExpired
			}
			if err := tx.Update(seat.Ref, []firestore.Update{{Path: "heldUntil", Value: until}}); err != nil {
				return err
			}
		}
		h.HeldUntil = until
		return tx.Update(s.client.Collection(Holds).Doc(h.ID), []firestore.Update{{Path: "heldUntil", Value: until}})
	})
}

// ConfirmHold turns uid's live hold into a confirmed booking, atomically:
// the seats become booked, the booking is written, the hold turns
// confirmed and the tickets-sold counter goes up. Confirming again returns
// the same booking (created false). An ended hold gives ErrHoldExpired and
// books nothing.
func (s *Service) ConfirmHold(ctx context.Context, uid, holdID string) (Booking, bool, error) {
	var b Booking
	created := false
	_, err := s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, now time.Time) error {
		created = false
		bid := bookingID(uid, "confirm\x00"+h.ID)
		b = Booking{ID: bid, UID: uid, ScreeningID: h.ScreeningID, Seats: h.Seats, Status: StatusOK, RequestID: h.RequestID, HoldID: h.ID}
		if h.Status == StatusOK && h.BookingID == bid {
			return nil // confirmed before: the same booking
		}
		if !h.live(now) {
			return ErrHoldExpired
		}
		for _, seat := range seats {
			if !ours(seat, h.ID) {
				return ErrHoldExpired
			}
		}
		ctr, err := s.counter(ctx, h.ScreeningID)
		if err != nil {
			return err
		}
		for _, seat := range seats {
			if err := tx.Set(seat.Ref, map[string]any{"status": StatusBooked, "bookingId": bid, "bookedAt": firestore.ServerTimestamp}); err != nil {
				return err
			}
		}
		if err := tx.Create(s.client.Collection(Bookings).Doc(bid), b); err != nil {
			return err
		}
		if err := tx.Update(s.client.Collection(Holds).Doc(h.ID), []firestore.Update{
			{Path: "status", Value: StatusOK}, {Path: "bookingId", Value: bid},
		}); err != nil {
			return err
		}
		shard, ups := ctr.IncrementWrite(int64(len(h.Seats)))
		created = true
		return tx.Update(shard, ups)
	})
	if err != nil {
		return Booking{}, false, err
	}
	return b, created, nil
}

// ReleaseHold ends uid's hold at once: it turns released and its seats are
// free. Releasing a hold that has ended already returns it unchanged.
func (s *Service) ReleaseHold(ctx context.Context, uid, holdID string) (Hold, error) {
	return s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, _ time.Time) error {
		if h.Status != StatusHeld {
			return nil
		}
		return s.endHold(tx, h, seats, StatusReleased)
	})
}

// endHold turns h's status to end (released or expired) and clears the
// seat documents that still show it.
func (s *Service) endHold(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, end string) error {
	for _, seat := range seats {
		if ours(seat, h.ID) {
			if err := tx.Delete(seat.Ref, firestore.LastUpdateTime(seat.UpdateTime)); err != nil {
				return err
			}
		}
	}
	h.Status = end
	return tx.Update(s.client.Collection(Holds).Doc(h.ID), []firestore.Update{{Path: "status", Value: end}})
}

// ExpireHolds marks every hold that ended (by Firestore's clock) expired
// and clears its seat documents; it returns how many. The scheduled job
// sweepExpired runs it. Seats are free the moment a hold ends whether or
// not this has run: it only tidies the map and the holds' status.
func (s *Service) ExpireHolds(ctx context.Context) (int, error) {
	// Held holds are the live checkouts and the few not yet tidied: one
	// equality query (no composite index), narrowed by the local clock;
	// each hold is then judged in its own transaction by Firestore's.
	snaps, err := s.client.Collection(Holds).Where("status", "==", StatusHeld).Documents(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("booking: list held holds: %w", err)
	}
	n := 0
	var errs []error
	for _, snap := range snaps {
		if until, ok := snap.Data()["heldUntil"].(time.Time); ok && time.Now().Before(until) {
			continue
		}
		uid, _ := snap.Data()["uid"].(string)
		expired := false
		_, err := s.onHold(ctx, uid, snap.Ref.ID, func(tx *firestore.Transaction, h *Hold, seats []*firestore.DocumentSnapshot, now time.Time) error {
			expired = false
			if h.Status != StatusHeld || h.live(now) {
				return nil
			}
			expired = true
			return s.endHold(tx, h, seats, StatusExpired)
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if expired {
			n++
		}
	}
	return n, errors.Join(errs...)
}
