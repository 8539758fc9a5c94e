package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
)

// Holds: seats kept for a checkout (CONTRACT §3). A hold is a lease on its
// seats with a user as holder and a checkout as its work: its seats show as
// held to everybody until heldUntil, by Firestore's clock, then they are
// free, whether or not the hold's documents were cleaned up yet
// (sweepExpired marks ended holds expired and clears their seats later).
const (
	Holds              = "holds"
	DefaultHold        = 420 * time.Second
	MinHold            = 5 * time.Second
	MaxHold            = 900 * time.Second
	MaxHoldSinceCreate = 1800 * time.Second // ExtendHold never goes past this

	StatusReleased = "released"
	StatusExpired  = "expired"
	// StatusPaying: the hold's user is paying for it (CONTRACT §10); it
	// holds its seats until heldUntil like a held hold, and is confirmed
	// by its payment only.
	StatusPaying = "paying"

	// confirmMargin: a confirm needs at least this much of its hold left
	// (by Firestore's clock, conservatively) so that it commits before the
	// hold ends; with less, it answers hold_expired.
	confirmMargin = time.Second
)

// Hold errors; the HTTP layer maps them.
var (
	ErrHoldNotFound = errors.New("booking: hold not found")
	// ErrHoldExpired: the hold has ended (lapsed, released or expired); its
	// seats may be somebody else's by now.
	ErrHoldExpired = errors.New("booking: hold expired")
	// ErrHoldConfirmed: the hold was confirmed into a booking already.
	ErrHoldConfirmed = errors.New("booking: hold confirmed")
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
	CreatedAt   time.Time `firestore:"createdAt,serverTimestamp" json:"-"`
	BookingID   string    `firestore:"bookingId,omitempty" json:"bookingId,omitempty"`
	// Payment is the Checkout Session paying for the hold (status paying,
	// and after).
	Payment *HoldPayment `firestore:"payment,omitempty" json:"payment,omitempty"`
	// ExtendedBy names the latest extensions (up to recentExtensions), by
	// the attempt ID each wrote in its commit: a retry of ExtendHold whose
	// answer was lost finds its own commit here (ExtendHold).
	ExtendedBy []string `firestore:"extendedBy,omitempty" json:"-"`
}

// recentExtensions is how many extensions a hold remembers. A retry comes
// within a call's deadline; it would take more extensions of one hold than
// this, landing in that time, for a retry to miss its own.
const recentExtensions = 16

// HoldPayment is a paying hold's Checkout Session (CONTRACT §10).
type HoldPayment struct {
	SessionID string `firestore:"sessionId" json:"sessionId"`
	Amount    int64  `firestore:"amount" json:"amount"`
	Currency  string `firestore:"currency" json:"currency"`
}

func checkHoldLength(d time.Duration) error {
	if d < MinHold || d > MaxHold || d%time.Second != 0 {
		return fmt.Errorf("%w: holdSeconds must be a whole number from %d to %d", ErrInvalidArgument, int(MinHold/time.Second), int(MaxHold/time.Second))
	}
	return nil
}

// Hold holds all requested seats or none for d (0: DefaultHold), until
// server time now + d. It returns the hold and whether this call created
// it (false: a retry of the same user and requestId). Errors and costs as
// Book's; a hold on free seats is one commit, its end placed by the bounds
// this Service keeps of Firestore's clock (within a round trip of the
// server's time of the request + d). Nothing is written on any error.
func (s *Service) Hold(ctx context.Context, executionID string, r Request, d time.Duration) (_ Hold, _ bool, err error) {
	ctx, done := s.metrics.start(ctx, metricOpHold)
	defer done(&err)
	if d == 0 {
		d = DefaultHold
	}
	if err := checkHoldLength(d); err != nil {
		return Hold{}, false, err
	}
	if err := r.validate(); err != nil {
		return Hold{}, false, err
	}
	h, created, err := s.hold(ctx, executionID, r, d, nil)
	if err != nil {
		return Hold{}, false, err
	}
	if !sameRequest(h.UID, h.ScreeningID, h.Seats, r) {
		return Hold{}, false, fmt.Errorf("%w: requestId %q was already used for other seats", ErrInvalidArgument, r.RequestID)
	}
	return h, created, nil
}

// hold takes r's seats (r valid, d checked) for a hold of length d: the
// one claim path of Hold and HoldBest (decided: HoldBest's own read, nil
// for Hold). It returns the hold and whether this call made it; a hold the
// requestId made already comes back as stored, whatever seats it has.
func (s *Service) hold(ctx context.Context, executionID string, r Request, d time.Duration, decided *decision) (Hold, bool, error) {
	id := holdID(r.UID, r.RequestID)
	seats := sortedSeats(r.Seats)
	h := Hold{ID: id, UID: r.UID, ScreeningID: r.ScreeningID, Seats: seats, Status: StatusHeld, RequestID: r.RequestID}
	c := &claim{
		r: r, kind: ClaimHold, id: id, seats: seats, execID: executionID,
		ref:   s.client.Collection(Holds).Doc(id),
		until: func(now time.Time) time.Time { return now.Add(d) },
		seat: func(now time.Time) map[string]any {
			return map[string]any{"status": StatusHeld, "holdId": id, "heldUntil": now.Add(d)}
		},
		doc: func(now time.Time) any {
			h.HeldUntil = now.Add(d)
			return h
		},
		decided: decided,
	}
	created := false
	prev, err := s.take(ctx, c)
	if err != nil {
		return Hold{}, false, err
	}
	if c.landedLate(prev) {
		return Hold{}, false, s.undoLate(ctx, c)
	}
	if prev == nil {
		if placed := h.HeldUntil.Add(-d); c.committed.Sub(placed) <= confirmMargin {
			return h, true, nil
		}
		// The commit landed late (the network held it back): the hold's end
		// was placed at the decision and would be short by the delay.
		if prev, err = s.placeLateHold(ctx, h, c.committed, d, c.pass); err != nil {
			return Hold{}, false, err
		}
		created = true
	}
	if err := prev.DataTo(&h); err != nil {
		return Hold{}, false, err
	}
	h.ID = id
	return h, created, nil
}

// placeLateHold moves the end of hold h, committed at committed, to
// committed + d, on the hold and its seats, each conditioned on still being
// exactly as that commit left them: then nobody has taken a seat since, even
// if the short end passed. Under a gate, the pass's record of the hold
// (pass: written by that commit) moves in the same commit, on the pass as
// read now: the gate counts a hold against the seat cap until the end it
// recorded, so a record left at the short end would let the user hold more
// seats between the two ends (issue #29.1). It returns the hold as stored
// afterwards (as somebody else's change left it, if there was one).
func (s *Service) placeLateHold(ctx context.Context, h Hold, committed time.Time, d time.Duration, pass *firestore.DocumentRef) (*firestore.DocumentSnapshot, error) {
	end := committed.Add(d)
	until := firestore.Update{Path: "heldUntil", Value: end}
	pre := firestore.LastUpdateTime(committed)
	ref := s.client.Collection(Holds).Doc(h.ID)
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := s.client.Batch()
	for _, seat := range h.Seats {
		b.Update(s.seatDoc(h.ScreeningID, seat), []firestore.Update{until}, pre)
	}
	b.Update(ref, []firestore.Update{until}, pre)
	if pass != nil && s.gate != nil {
		snap, err := pass.Get(ctx)
		if err != nil {
			return nil, err
		}
		ups, err := s.gate.Settle(snap, Change{Kind: HoldPlaced, HoldID: h.ID, Seats: len(h.Seats), Until: end}, snap.ReadTime)
		if err != nil {
			return nil, err
		}
		if len(ups) > 0 {
			b.Update(pass, ups, firestore.LastUpdateTime(snap.UpdateTime))
		}
	}
	if _, err := b.Commit(ctx); err != nil && !isConflict(err) && !isAmbiguous(err) {
		return nil, err
	}
	return ref.Get(ctx)
}

// readHold reads uid's hold holdID outside any transaction.
func (s *Service) readHold(ctx context.Context, uid, holdID string) (Hold, *firestore.DocumentSnapshot, error) {
	if uid == "" {
		return Hold{}, nil, fmt.Errorf("%w: no user", ErrInvalidArgument)
	}
	if err := checkDocID("holdId", holdID); err != nil {
		return Hold{}, nil, err
	}
	sent := time.Now()
	snap, err := s.client.Collection(Holds).Doc(holdID).Get(ctx)
	if notFound(err) {
		return Hold{}, nil, fmt.Errorf("%w: %q", ErrHoldNotFound, holdID)
	}
	if err != nil {
		return Hold{}, nil, err
	}
	s.clock.observe(snap.ReadTime, sent, time.Now())
	h, err := decodeHold(snap, uid)
	return h, snap, err
}

func decodeHold(snap *firestore.DocumentSnapshot, uid string) (Hold, error) {
	var h Hold
	if err := snap.DataTo(&h); err != nil {
		return Hold{}, err
	}
	h.ID = snap.Ref.ID
	if uid != "" && h.UID != uid {
		return Hold{}, fmt.Errorf("%w: the hold belongs to another user", ErrForbidden)
	}
	return h, nil
}

// anyHolder, as onHold's uid, stands for whoever holds the hold (no uid
// contains a NUL).
const anyHolder = "\x00any"

// onHold runs fn in a transaction on uid's hold holdID, its seat
// documents, its screening, the user's pass under a gate and the payment
// record of a hold that has a payment (two reads: the hold names the
// rest), judged at Firestore's time now (the hold snapshot's read time).
// uid anyHolder reads the hold whoever holds it: its payment, which Stripe
// reports without a user's token.
func (s *Service) onHold(ctx context.Context, uid, holdID string, fn func(tx *firestore.Transaction, h *Hold, r heldDocs, now time.Time) error) (Hold, error) {
	if uid == "" {
		return Hold{}, fmt.Errorf("%w: no user", ErrInvalidArgument)
	}
	if uid == anyHolder {
		uid = ""
	}
	if err := checkDocID("holdId", holdID); err != nil {
		return Hold{}, err
	}
	href := s.client.Collection(Holds).Doc(holdID)
	var h Hold
	err := s.runTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(href)
		if notFound(err) {
			return fmt.Errorf("%w: %q", ErrHoldNotFound, holdID)
		}
		if err != nil {
			return err
		}
		if h, err = decodeHold(snap, uid); err != nil {
			return err
		}
		refs := make([]*firestore.DocumentRef, len(h.Seats))
		for i, seat := range h.Seats {
			refs[i] = s.seatDoc(h.ScreeningID, seat)
		}
		refs = append(refs, s.client.Collection(Screenings).Doc(h.ScreeningID))
		pass := s.passRef(h.ScreeningID, h.UID)
		refs = append(refs, pass...)
		payment := s.paymentRef(&h)
		refs = append(refs, payment...)
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		n := len(h.Seats)
		docs := heldDocs{hold: snap, seats: snaps[:n], screening: snaps[n], pass: snaps[n+1 : n+1+len(pass)]}
		if len(payment) > 0 {
			docs.payment = snaps[len(snaps)-1]
		}
		return fn(tx, &h, docs, snap.ReadTime)
	})
	return h, err
}

// heldDocs are what onHold read besides the hold.
type heldDocs struct {
	hold      *firestore.DocumentSnapshot
	seats     []*firestore.DocumentSnapshot
	screening *firestore.DocumentSnapshot
	pass      []*firestore.DocumentSnapshot // zero or one
	payment   *firestore.DocumentSnapshot   // the payment record (nil: no till, or no payment)
}

// holding: the hold's status holds seats (until heldUntil): held, or paying.
func (h *Hold) holding() bool { return h.Status == StatusHeld || h.Status == StatusPaying }

// live: the hold still holds its seats at server time now.
func (h *Hold) live(now time.Time) bool { return h.holding() && now.Before(h.HeldUntil) }

// ours: the seat document still shows this hold.
func ours(seat *firestore.DocumentSnapshot, holdID string) bool {
	return seat.Exists() && seat.Data()["holdId"] == holdID && seat.Data()["status"] == StatusHeld
}

// ExtendHold moves a live hold's end to server time now + d (d as for
// Hold), never past MaxHoldSinceCreate after its creation
// (ErrInvalidArgument). A hold that has ended, or has less than a second
// left (as for ConfirmHold), gives ErrHoldExpired. Under a gate,
// an extension needs what a new hold needs: a live pass (ErrNotAdmitted
// once it has ended; the hold keeps its end and may still be confirmed).
//
// One call extends at most once. Its commit records a fresh attempt ID on
// the hold (extendedBy, the latest few); should the commit land while its
// answer is lost, the call's retry finds its ID there and answers what
// that commit wrote, however the hold changed since (another extension,
// a confirmation), instead of extending again from a later now. A new
// call (a client sending the request again) is a new extension.
func (s *Service) ExtendHold(ctx context.Context, uid, holdID string, d time.Duration) (_ Hold, err error) {
	ctx, done := s.metrics.start(ctx, metricOpExtend)
	defer done(&err)
	if err := checkHoldLength(d); err != nil {
		return Hold{}, err
	}
	attempt, err := lock.NewExecutionID()
	if err != nil {
		return Hold{}, err
	}
	var wrote *Hold // the hold as this call's commit left it
	return s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
		landed := wrote != nil && slices.Contains(h.ExtendedBy, attempt)
		if s.hooks.extendByValue { // planted: the heldUntil it wrote is still there
			landed = wrote != nil && h.HeldUntil.Equal(wrote.HeldUntil)
		}
		if landed {
			// That attempt committed, its answer lost: this call is done,
			// and extending again from a later now would extend twice.
			*h = *wrote
			return nil
		}
		wrote = nil
		if !h.live(now.Add(confirmMargin)) {
			// Ended, or about to: an extension decided in a hold's last
			// moments could commit after its end and bring it back,
			// after others saw its seats free.
			return ErrHoldExpired
		}
		until := now.Add(d).Truncate(time.Microsecond) // as Firestore stores it
		if limit := h.CreatedAt.Add(MaxHoldSinceCreate); until.After(limit) {
			return fmt.Errorf("%w: a hold lasts at most %d seconds from its creation; it can be extended to %s at most",
				ErrInvalidArgument, int(MaxHoldSinceCreate/time.Second), limit.UTC().Format(time.RFC3339))
		}
		for _, seat := range docs.seats {
			if !ours(seat, h.ID) {
				return ErrHoldExpired
			}
			if err := tx.Update(seat.Ref, []firestore.Update{{Path: "heldUntil", Value: until}}); err != nil {
				return err
			}
		}
		if err := s.settle(tx, docs.pass, Change{Kind: HoldExtended, HoldID: h.ID, Seats: len(h.Seats), Until: until}, now); err != nil {
			return err
		}
		h.HeldUntil = until
		h.ExtendedBy = append(h.ExtendedBy[max(0, len(h.ExtendedBy)-recentExtensions+1):], attempt)
		wrote = new(Hold)
		*wrote = *h
		return tx.Update(docs.hold.Ref, []firestore.Update{{Path: "heldUntil", Value: until}, {Path: "extendedBy", Value: h.ExtendedBy}})
	})
}

// ConfirmHold turns uid's live hold into a confirmed booking, atomically:
// the seats become booked, the booking and its tickets (WithTickets) are
// written, the hold turns confirmed and the tickets-sold counter goes up. It returns the booking
// and whether this call made it. Confirming a confirmed hold again returns
// its booking as stored (cancelled, if it was cancelled since). A hold
// that has ended, or has less than a second left, gives ErrHoldExpired; a
// screening that has started gives ErrScreeningStarted. Either books
// nothing: when the call's one commit went unheard and may still land, the
// transaction that refuses ends the hold (expired), which fails that
// commit for good, or finds it landed and answers its booking.
//
// Costs: one read of the hold, then one commit conditioned on the hold and
// its seats being exactly as the hold's last write left them. A gated
// screening, one this instance does not keep current, or a lost
// precondition goes through a transaction that reads the hold, its seats,
// the screening and the pass.
func (s *Service) ConfirmHold(ctx context.Context, uid, holdID string) (_ Booking, _ bool, err error) {
	ctx, done := s.metrics.start(ctx, metricOpConfirm)
	defer done(&err)
	h, snap, err := s.readHold(ctx, uid, holdID)
	if err != nil {
		return Booking{}, false, err
	}
	switch {
	case h.Status == StatusOK:
		b, err := s.confirmed(ctx, h)
		return b, false, err
	case h.Status == StatusPaying:
		return Booking{}, false, ErrPaymentRequired // its payment confirms it
	case h.Status != StatusHeld:
		return Booking{}, false, ErrHoldExpired
	}
	b, made, unheard, err := s.confirmFast(ctx, h, snap)
	if made || err != nil {
		return b, made, err
	}
	created := false
	var ended error // the refusal this call ended the hold with
	for settle := 0; ; settle++ {
		wait := false
		_, err = s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
			created, ended, wait = false, nil, false
			if h.Status == StatusOK { // confirmed meanwhile (our own lost answer, or a retry)
				return nil
			}
			sc, err := DecodeScreening(docs.screening)
			if err != nil {
				return err
			}
			if h.Status == StatusPaying || sc.Priced {
				return ErrPaymentRequired
			}
			seatsOurs := !slices.ContainsFunc(docs.seats, func(seat *firestore.DocumentSnapshot) bool { return !ours(seat, h.ID) })
			if err := s.confirmable(h, sc, now); err != nil {
				if !unheard || h.Status != StatusHeld || !seatsOurs {
					return err
				}
				// Our one commit went unheard and may still land: nothing
				// it is conditioned on (the hold, its seats, as read) has
				// changed, and it would confirm the hold after this call
				// answered err. Both of confirmable's refusals are for
				// good once the hold has ended or the screening has
				// started, so end the hold in this commit (expired, its
				// seats cleared), which fails that one for good. A hold in
				// its last second of a screening not started waits for its
				// end first (at most the margin).
				if !errors.Is(err, ErrScreeningStarted) && h.live(now) {
					wait = true
					return err
				}
				ended = err
				return s.endHold(tx, h, docs, StatusExpired, EndedByTime, now)
			}
			if !seatsOurs {
				return ErrHoldExpired
			}
			b = confirmation(h)
			if err := s.confirmIn(ctx, tx, h, docs, &b, now, ""); err != nil {
				return err
			}
			created = true
			return nil
		})
		if !wait || settle >= 3 {
			break
		}
		sleep(ctx, s.untilPassed(h.HeldUntil))
		if ctx.Err() != nil {
			return Booking{}, false, ctx.Err()
		}
	}
	if err != nil {
		return Booking{}, false, err
	}
	if ended != nil {
		return Booking{}, false, ended
	}
	if !created {
		h, _, err := s.readHold(ctx, uid, holdID)
		if err != nil {
			return Booking{}, false, err
		}
		b, err := s.confirmed(ctx, h)
		return b, false, err
	}
	return b, true, nil
}

// confirmable: a held hold can be confirmed at server time now.
func (s *Service) confirmable(h *Hold, sc Screening, now time.Time) error {
	if sc.started(now) {
		return ErrScreeningStarted
	}
	if !s.hooks.noHoldEndCheck && !h.live(now.Add(confirmMargin)) {
		return ErrHoldExpired
	}
	return nil
}

// confirmation is the booking that confirming h makes.
func confirmation(h *Hold) Booking {
	return Booking{ID: confirmationID(h.UID, h.ID), UID: h.UID, ScreeningID: h.ScreeningID, Seats: h.Seats, Status: StatusOK, RequestID: h.RequestID, HoldID: h.ID}
}

// confirmFast confirms h (read as snap) in one commit when this instance
// keeps its screening current and it is ungated. The hold's seats were
// written in the same commit as the hold's last write (a hold and its
// extensions write both), so they share its update time: the commit is
// conditioned on the hold and each seat still having it, which nothing but
// this hold's own writes can keep. done is false when the request needs
// the transaction; unheard, when the commit was sent and failed otherwise
// than on its preconditions: it may have landed, or land yet (a request
// the network delivers after its caller gave up).
func (s *Service) confirmFast(ctx context.Context, h Hold, snap *firestore.DocumentSnapshot) (_ Booking, done, unheard bool, _ error) {
	s.screenings.entry(h.ScreeningID) // a hold was made on it: it exists, so keep it current
	got, ok := s.screenings.current(h.ScreeningID)
	if !ok || got.err != nil || (s.gate != nil && s.gate.Gated(got.snap)) {
		return Booking{}, false, false, nil
	}
	now := snap.ReadTime
	if got.sc.Priced {
		return Booking{}, false, false, ErrPaymentRequired
	}
	if err := s.confirmable(&h, got.sc, now); err != nil {
		return Booking{}, false, false, err
	}
	// Send nothing that could land after the hold ends: the deadline is
	// half the margin before the hold's end by the latest the server's
	// clock can read now.
	_, hi, ok := s.clock.bounds()
	if !ok {
		return Booking{}, false, false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, h.HeldUntil.Sub(hi)-confirmMargin/2)
	defer cancel()
	ctr, err := s.counter(ctx, h.ScreeningID)
	if err != nil {
		return Booking{}, false, false, err
	}
	b := confirmation(&h)
	issued, err := s.issue(&b)
	if err != nil {
		return Booking{}, false, false, err
	}
	pre := firestore.LastUpdateTime(snap.UpdateTime)
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	wb := s.client.Batch()
	for _, seat := range h.Seats {
		wb.Update(s.seatDoc(h.ScreeningID, seat), []firestore.Update{
			{Path: "status", Value: StatusBooked}, {Path: "bookingId", Value: b.ID}, {Path: "bookedAt", Value: firestore.ServerTimestamp},
			{Path: "holdId", Value: firestore.Delete}, {Path: "heldUntil", Value: firestore.Delete},
		}, pre)
	}
	wb.Create(s.client.Collection(Bookings).Doc(b.ID), b)
	s.createTickets(wb, issued)
	wb.Update(snap.Ref, []firestore.Update{{Path: "status", Value: StatusOK}, {Path: "bookingId", Value: b.ID}}, pre)
	shard, ups := ctr.IncrementWrite(int64(len(h.Seats)))
	wb.Update(shard, ups)
	if hk := s.hooks.beforeCommit; hk != nil {
		hk(true)
	}
	sent := time.Now()
	res, err := wb.Commit(cctx)
	if err != nil {
		return Booking{}, false, !isConflict(err), nil // lost a precondition, or unheard: the transaction decides
	}
	s.clock.observe(res[0].UpdateTime, sent, time.Now())
	return b, true, false, nil
}

// untilPassed is how long until Firestore's clock has surely passed t: by
// the clock estimate's lower bound, or the local clock and a margin.
func (s *Service) untilPassed(t time.Time) time.Duration {
	if lo, _, ok := s.clock.bounds(); ok {
		return t.Sub(lo) + 10*time.Millisecond
	}
	return time.Until(t) + confirmMargin
}

// confirmed returns the booking a confirmed hold made, as stored.
func (s *Service) confirmed(ctx context.Context, h Hold) (Booking, error) {
	snap, err := s.client.Collection(Bookings).Doc(h.BookingID).Get(ctx)
	if err != nil {
		return Booking{}, fmt.Errorf("booking: the booking %q of confirmed hold %q: %w", h.BookingID, h.ID, err)
	}
	var b Booking
	if err := snap.DataTo(&b); err != nil {
		return Booking{}, err
	}
	b.ID = snap.Ref.ID
	return b, nil
}

// ReleaseHold ends uid's hold at once: it turns released and its seats are
// free. Releasing a hold that has ended already returns it unchanged.
func (s *Service) ReleaseHold(ctx context.Context, uid, holdID string) (Hold, error) {
	return s.release(ctx, uid, holdID, EndedByUser)
}

// RevokeHold is ReleaseHold for an operator's revoke of the user's pass
// (CONTRACT §8): a paying hold's payment record notes that the revoke
// ended it (EndedByRevoke), so a payment that completes later is refunded
// as revoked (§10a), not as released by its user.
func (s *Service) RevokeHold(ctx context.Context, uid, holdID string) (Hold, error) {
	return s.release(ctx, uid, holdID, EndedByRevoke)
}

func (s *Service) release(ctx context.Context, uid, holdID string, by EndedBy) (_ Hold, err error) {
	ctx, done := s.metrics.start(ctx, metricOpRelease)
	defer done(&err)
	return s.onHold(ctx, uid, holdID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
		if !h.holding() {
			return nil
		}
		if err := s.settle(tx, docs.pass, Change{Kind: HoldReleased, HoldID: h.ID, Seats: len(h.Seats)}, now); err != nil {
			return err
		}
		return s.endHold(tx, h, docs, StatusReleased, by, now)
	})
}

// endHold turns h's status to end (released or expired) and clears the
// seat documents that still show it; a paying hold's payment record notes
// how it ended (by), in the same commit.
func (s *Service) endHold(tx *firestore.Transaction, h *Hold, docs heldDocs, end string, by EndedBy, now time.Time) error {
	if h.Status == StatusPaying && docs.payment != nil && docs.payment.Exists() {
		ups, err := s.till.HoldEnded(docs.payment, *h, by, now)
		if err != nil {
			return err
		}
		if len(ups) > 0 {
			if err := tx.Update(docs.payment.Ref, ups); err != nil {
				return err
			}
		}
	}
	for _, seat := range docs.seats {
		if ours(seat, h.ID) {
			if err := tx.Delete(seat.Ref, firestore.LastUpdateTime(seat.UpdateTime)); err != nil {
				return err
			}
			s.taken.mark(false, seat.Ref) // a hint only: should the transaction fail, a read tells
		}
	}
	h.Status = end
	return tx.Update(docs.hold.Ref, []firestore.Update{{Path: "status", Value: end}})
}

// ExpireHolds marks every hold that ended (by Firestore's clock) expired
// and clears its seat documents; it returns how many. The scheduled job
// sweepExpired runs it. Seats are free the moment a hold ends whether or
// not this has run: it only tidies the map and the holds' status.
func (s *Service) ExpireHolds(ctx context.Context) (int, error) {
	return s.expireHolds(ctx, StatusHeld, StatusPaying)
}

// ExpirePaying is ExpireHolds for paying holds only: the few in a
// checkout, swept more often than the rest so that their Checkout
// Sessions are expired soon after they end (CONTRACT §10).
func (s *Service) ExpirePaying(ctx context.Context) (int, error) {
	return s.expireHolds(ctx, StatusPaying)
}

func (s *Service) expireHolds(ctx context.Context, statuses ...string) (int, error) {
	// Held and paying holds are the live checkouts and the few not yet
	// tidied: one query on the status (no composite index), narrowed by
	// the local clock; each hold is then judged in its own transaction by
	// Firestore's.
	snaps, err := s.client.Collection(Holds).Where("status", "in", statuses).Documents(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("booking: list %v holds: %w", statuses, err)
	}
	n := 0
	var errs []error
	for _, snap := range snaps {
		if until, ok := snap.Data()["heldUntil"].(time.Time); ok && time.Now().Before(until) {
			continue
		}
		uid, _ := snap.Data()["uid"].(string)
		expired := false
		_, err := s.onHold(ctx, uid, snap.Ref.ID, func(tx *firestore.Transaction, h *Hold, docs heldDocs, now time.Time) error {
			expired = false
			if !h.holding() || h.live(now) {
				return nil
			}
			expired = true
			return s.endHold(tx, h, docs, StatusExpired, EndedByTime, now)
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
