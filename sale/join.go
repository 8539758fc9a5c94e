package sale

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/lock"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Orders sort in admission order (CONTRACT §7: an opaque string):
//
//	"0" + draw       an early joiner, ranked at opensAt by a random draw
//	"0~" + draw      an early joiner whose join committed after the ranking
//	                 passed its draw: last of the early joiners
//	"1" + time + id  a later joiner: join time (µs, fixed width), then a
//	                 tiebreak from the queueId
const (
	earlyPrefix     = "0"
	stragglerPrefix = "0~"
	latePrefix      = "1"
)

func earlyOrder(draw string) string { return earlyPrefix + draw }

func lateOrder(joinedAt time.Time, queueID string) string {
	return fmt.Sprintf("%s%017d%s", latePrefix, joinedAt.UnixMicro(), queueID[:12])
}

// lateBound sorts after the order of every later joiner who joined at or
// before t, and before everyone who joined after.
func lateBound(t time.Time) string { return fmt.Sprintf("%s%017d~", latePrefix, t.UnixMicro()) }

// newDraw is an early joiner's rank: 128 random bits from crypto/rand, in
// hex. It depends on nothing the client sends, nor on time or uid.
func newDraw() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// JoinOption adds what the caller knows of the joiner to a Join.
type JoinOption func(*joiner)

type joiner struct {
	email    string
	verified bool
	appCheck string
}

// JoinerAppCheck records on the place what App Check made of the call
// (valid, missing, invalid; "" when it was off).
func JoinerAppCheck(result string) JoinOption {
	return func(j *joiner) { j.appCheck = result }
}

// JoinerVerified says whether the joiner's ID token carries
// email_verified: true. A sale with requireVerifiedEmail refuses the
// others (ErrEmailNotVerified).
func JoinerVerified(verified bool) JoinOption {
	return func(j *joiner) { j.verified = verified }
}

// JoinerEmail records the joiner's email (from their verified ID token) on
// the place, in lowercase, so that operators can find the person by it.
func JoinerEmail(email string) JoinOption {
	return func(j *joiner) { j.email = strings.ToLower(strings.TrimSpace(email)) }
}

// Join gives uid a place in the queue of the screening's sale, or returns
// the place uid has (created false): one place per user and sale, and
// joining again changes nothing.
//
// The screening's read decides, with the sale's public document as this
// instance read it within the last second (publicOf: it is published at
// most once a second, so a burst of joins reads it once a second, not once
// each); the screening's read time is joinedAt. The place is not read
// first: it is created on the precondition that it does not exist, and a
// join that finds it there (or is refused) reads it then and answers with
// it. So a first join costs one read, not three (issue #51). A join before
// opensAt is early: its
// random draw goes to the server-only queueDraws/{queueId}, in the same
// commit as the place, and the place has no order until the admitter ranks
// it at opensAt. A later join's order is its join time. The place is
// created on the precondition that it does not exist, so two joins of one
// user at the same moment make one place.
//
// A join must commit within the join window of its read (for an early
// join, within the window after opensAt): the admitter counts on that to
// never rank or admit past a join still in flight. A join that could not
// is tried once more, then fails with ErrJoinTimedOut.
//
// Errors: booking.ErrInvalidArgument, booking.ErrScreeningNotFound,
// ErrNoSale, ErrMisconfigured, booking.ErrScreeningStarted, ErrClosed, ErrSoldOut,
// ErrJoinTimedOut, or a Firestore error.
func (s *Service) Join(ctx context.Context, uid, screeningID string, opts ...JoinOption) (Place, bool, error) {
	if uid == "" {
		return Place{}, false, fmt.Errorf("%w: no user", booking.ErrInvalidArgument)
	}
	if screeningID == "" || len(screeningID) > 200 || lock.ValidateKey(screeningID) != nil {
		return Place{}, false, fmt.Errorf("%w: screeningId %q is not a valid id", booking.ErrInvalidArgument, screeningID)
	}
	var who joiner
	for _, opt := range opts {
		opt(&who)
	}
	var err error
	for range 2 {
		var p Place
		var created bool
		p, created, err = s.join(ctx, uid, screeningID, who)
		if !errors.Is(err, ErrJoinTimedOut) {
			return p, created, err
		}
	}
	return Place{}, false, err
}

func (s *Service) join(ctx context.Context, uid, screeningID string, who joiner) (Place, bool, error) {
	id := QueueID(screeningID, uid)
	ref := s.place(id)
	start := time.Now() // the local clock only bounds how long the commit may take
	snaps, err := s.client.GetAll(ctx, []*firestore.DocumentRef{s.client.Collection(booking.Screenings).Doc(screeningID)})
	if err != nil {
		return Place{}, false, err
	}
	screening := snaps[0]
	now := screening.ReadTime
	if !screening.Exists() {
		return Place{}, false, fmt.Errorf("%w: %q", booking.ErrScreeningNotFound, screeningID)
	}
	public, err := s.publicOf(ctx, screeningID)
	if err != nil {
		return Place{}, false, err
	}
	cfg, err := s.joinable(screening, public, now, who)
	if err != nil {
		// A user who has a place keeps it, whatever the sale's state now:
		// a join again answers with it.
		got, gerr := ref.Get(ctx)
		switch {
		case gerr == nil:
			p, err := placeOf(got)
			return p, false, err
		case status.Code(gerr) != codes.NotFound:
			return Place{}, false, gerr
		}
		if errors.Is(err, ErrMisconfigured) && s.shouldLog(screeningID, err) {
			s.o.log.Error("sale: refusing joins to a misconfigured sale", "screeningId", screeningID, "error", err.Error())
		}
		return Place{}, false, err
	}

	p := Place{ID: id, UID: uid, ScreeningID: screeningID, Status: StatusWaiting, JoinedAt: now, Shard: shardOf(id), Email: who.email, AppCheck: who.appCheck}
	//lint:ignore SA1019 WriteBatch is the only atomic multi-document write that costs one RPC.
	b := s.client.Batch()
	commitBy := now.Add(s.o.joinWindow) // Firestore time
	if now.Before(cfg.OpensAt) {
		draw, err := newDraw()
		if err != nil {
			return Place{}, false, err
		}
		b.Create(s.client.Collection(Draws).Doc(id), map[string]any{"screeningId": screeningID, "draw": draw})
		commitBy = cfg.OpensAt.Add(s.o.joinWindow)
	} else {
		p.Order = lateOrder(now, id)
	}
	b.Create(ref, p)
	// Firestore's time has moved at most as far as the local clock since
	// before the read: a commit that ends by this local deadline ends by
	// commitBy on Firestore's clock. A tenth of the window is left for the
	// answer's way back.
	cctx, cancel := context.WithDeadline(ctx, start.Add(commitBy.Sub(now)-s.o.joinWindow/10))
	defer cancel()
	_, err = b.Commit(cctx)
	switch {
	case err == nil:
		return p, true, nil
	case status.Code(err) == codes.AlreadyExists: // the user has a place (joined before, or at the same moment)
		got, err := ref.Get(ctx)
		if err != nil {
			return Place{}, false, err
		}
		p, err := placeOf(got)
		return p, false, err
	case ctx.Err() == nil && cctx.Err() != nil:
		// It may have landed unheard: the place says so.
		if got, gerr := ref.Get(ctx); gerr == nil {
			if q, err := placeOf(got); err == nil {
				return q, q.JoinedAt.Equal(now), nil
			}
		}
		return Place{}, false, fmt.Errorf("%w: %v", ErrJoinTimedOut, err)
	}
	return Place{}, false, err
}

// joinable decides a new join on the screening as read at now and the
// sale's public document: the sale's configuration, or why nobody may join
// it now.
func (s *Service) joinable(screening, public *firestore.DocumentSnapshot, now time.Time, who joiner) (Config, error) {
	cfg, err := s.config(screening)
	// A sale of a screening that started is over, whatever its configuration.
	if startsAt, ok := screening.Data()["startsAt"].(time.Time); ok && !now.Before(startsAt) && !errors.Is(err, ErrNoSale) {
		return Config{}, booking.ErrScreeningStarted
	}
	if err != nil {
		return Config{}, err
	}
	if controlOf(screening).Closed {
		return Config{}, fmt.Errorf("%w: an operator closed it", ErrClosed)
	}
	if cfg.RequireVerifiedEmail && !who.verified {
		return Config{}, ErrEmailNotVerified
	}
	switch public.Data()["state"] {
	case StateSoldOut:
		return Config{}, ErrSoldOut
	case StateClosed:
		return Config{}, booking.ErrScreeningStarted
	}
	return cfg, nil
}

// publicTTL is how long an instance's joins use one read of a sale's public
// document: the admitter writes it at most once a publishEvery, so a join
// decides on a state at most about a second older than a read would give
// it (sold_out, closed), as the sale's own publication lags the seats.
const publicTTL = publishEvery

// maxPublics bounds the sales whose public document an instance keeps.
const maxPublics = 1000

// publics keeps the sales' public documents for joins: each read at most
// once a publicTTL per instance, concurrent misses sharing one read.
type publics struct {
	group singleflight.Group
	mu    sync.Mutex
	m     map[string]publicRead
}

type publicRead struct {
	snap *firestore.DocumentSnapshot
	at   time.Time // local clock
}

// publicOf returns sales/{id} as this instance read it within publicTTL
// (a missing one too: its snapshot does not exist).
func (s *Service) publicOf(ctx context.Context, id string) (*firestore.DocumentSnapshot, error) {
	c := &s.publics
	fresh := func() (*firestore.DocumentSnapshot, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		r, ok := c.m[id]
		return r.snap, ok && time.Since(r.at) < publicTTL
	}
	if snap, ok := fresh(); ok {
		return snap, nil
	}
	v, err, _ := c.group.Do(id, func() (any, error) {
		if snap, ok := fresh(); ok {
			return snap, nil
		}
		at := time.Now()
		// The read must not die with the first caller's request.
		snaps, err := s.client.GetAll(context.WithoutCancel(ctx), []*firestore.DocumentRef{s.client.Collection(Sales).Doc(id)})
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m == nil || len(c.m) >= maxPublics {
			c.m = map[string]publicRead{}
		}
		c.m[id] = publicRead{snap: snaps[0], at: at}
		return snaps[0], nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*firestore.DocumentSnapshot), nil
}
