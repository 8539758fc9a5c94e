package sale

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Refresh bounds of CONTRACT §14: refreshSeconds is RefreshMoving while
// admissions move and around the opening, and at most RefreshIdle while
// nothing moves; s-maxage is never over RefreshIdle.
const (
	RefreshMoving = 1 * time.Second
	RefreshIdle   = 15 * time.Second
	// RefreshHeld: sold out, or paused with no pass live: nothing moves
	// until an operator resumes or a hold lapses, which then shows within
	// about this.
	RefreshHeld = 5 * time.Second
	// aroundOpening: within this of opensAt, the answer refreshes every
	// RefreshMoving.
	aroundOpening = time.Minute
	// missingTTL is how long an instance keeps a 404 or 409: a burst for
	// screenings that do not exist costs one read per screening per
	// missingTTL, not one each.
	missingTTL = 1 * time.Second
	// maxCached bounds the entries one instance keeps (screenings asked
	// for); past it, expired entries are swept before a new one goes in.
	maxCached = 10000
)

// PublicState is the answer of GET /SaleState (CONTRACT §14): the §7
// fields of sales/{id} and refreshSeconds.
type PublicState struct {
	State           string    `json:"state"`
	OpensAt         time.Time `json:"opensAt"`
	Waiting         int64     `json:"waiting"`
	Admitted        int64     `json:"admitted"`
	Active          int64     `json:"active"`
	SeatsLeft       int64     `json:"seatsLeft"`
	AdmittedThrough string    `json:"admittedThrough"`
	Marks           []Mark    `json:"marks"`
	UpdatedAt       time.Time `json:"updatedAt"`
	RefreshSeconds  int       `json:"refreshSeconds"`
}

// StateAnswer is one cached answer of a screening: Body (JSON) and its
// strong ETag, or Err (ErrScreeningNotFound, ErrNoSale).
type StateAnswer struct {
	Body    []byte
	ETag    string        // strong: "sha256 of Body", quoted
	Refresh time.Duration // refreshSeconds; how long the answer may be kept
	Err     error
	expires time.Time
}

// StateCache answers the public state of sales, reading sales/{id} at most
// once per Refresh (RefreshMoving while admissions move) per screening,
// whatever the traffic; concurrent misses share one read. One per function
// instance. Safe for concurrent use.
type StateCache struct {
	client *firestore.Client
	now    func() time.Time
	group  singleflight.Group
	mu     sync.Mutex
	cached map[string]*StateAnswer
}

// NewStateCache returns a cache reading through client.
func NewStateCache(client *firestore.Client) *StateCache {
	return &StateCache{client: client, now: time.Now, cached: map[string]*StateAnswer{}}
}

// Get answers the public state of screening id (a valid document id: the
// caller checks it). The error is a read's that failed (not cached);
// a screening that does not exist, or has no sale, is an answer whose Err
// is ErrScreeningNotFound or ErrNoSale, kept for about a second.
func (c *StateCache) Get(ctx context.Context, id string) (*StateAnswer, error) {
	c.mu.Lock()
	a, ok := c.cached[id]
	c.mu.Unlock()
	if ok && c.now().Before(a.expires) {
		return a, nil
	}
	v, err, _ := c.group.Do(id, func() (any, error) {
		// A read that just landed while this caller waited for the lock.
		c.mu.Lock()
		a, ok := c.cached[id]
		c.mu.Unlock()
		if ok && c.now().Before(a.expires) {
			return a, nil
		}
		// The read must not die with the first caller's request.
		a, err := c.read(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if len(c.cached) >= maxCached {
			now := c.now()
			for k, e := range c.cached {
				if !now.Before(e.expires) {
					delete(c.cached, k)
				}
			}
		}
		if len(c.cached) < maxCached {
			c.cached[id] = a
		}
		c.mu.Unlock()
		return a, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*StateAnswer), nil
}

// ErrScreeningNotFound: no screening has the id asked for.
var ErrScreeningNotFound = fmt.Errorf("sale: screening not found")

func (c *StateCache) read(ctx context.Context, id string) (*StateAnswer, error) {
	snap, err := c.client.Collection(Sales).Doc(id).Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	now := c.now()
	var p PublicState
	if snap.Exists() {
		var pub Public
		if err := snap.DataTo(&pub); err != nil {
			return nil, fmt.Errorf("sale: sales/%s: %w", id, err)
		}
		p = PublicState{State: pub.State, OpensAt: pub.OpensAt, Waiting: pub.Waiting, Admitted: pub.Admitted, Active: pub.Active,
			SeatsLeft: pub.SeatsLeft, AdmittedThrough: pub.AdmittedThrough, Marks: pub.Marks, UpdatedAt: pub.UpdatedAt}
	} else {
		// Not published yet: the screening says whether there is a sale.
		scr, err := c.client.Collection(booking.Screenings).Doc(id).Get(ctx)
		if status.Code(err) == codes.NotFound {
			return &StateAnswer{Err: ErrScreeningNotFound, Refresh: missingTTL, expires: now.Add(missingTTL)}, nil
		}
		if err != nil {
			return nil, err
		}
		cur, ok := scr.Data()["sale"].(map[string]any)
		if !ok {
			return &StateAnswer{Err: ErrNoSale, Refresh: missingTTL, expires: now.Add(missingTTL)}, nil
		}
		opensAt, _ := cur["opensAt"].(time.Time)
		p = PublicState{State: StateScheduled, OpensAt: opensAt}
	}
	if p.Marks == nil {
		p.Marks = []Mark{}
	}
	refresh := RefreshFor(p.State, p.Active, p.OpensAt, now)
	p.RefreshSeconds = int(refresh / time.Second)
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	return &StateAnswer{Body: body, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`, Refresh: refresh, expires: now.Add(refresh)}, nil
}

// RefreshFor is refreshSeconds of CONTRACT §14 for a sale in state with
// active passes live, opening at opensAt, at now: RefreshMoving while the
// sale is open, paused with passes live, and within a minute of the
// opening; RefreshHeld while sold out or paused with none; otherwise
// RefreshIdle, or less so that the answer is not kept into the minute
// before the opening.
func RefreshFor(state string, active int64, opensAt time.Time, now time.Time) time.Duration {
	if state == StateOpen { // admissions, passes and seats move
		return RefreshMoving
	}
	if state == StatePaused && active > 0 {
		// An operator's pause with passes live: their holds, releases and
		// lapses go on (CONTRACT §7a), and an admitted page whose map waits
		// while nothing is free learns of a seat coming free from this
		// answer (issue #51): at RefreshHeld it drew the seat taken for up
		// to 5 s more (and the CDN's s-maxage on top, deployed).
		return RefreshMoving
	}
	untilOpening := opensAt.Sub(now) - aroundOpening
	if untilOpening < RefreshMoving && now.Sub(opensAt) < aroundOpening {
		return RefreshMoving // around the opening
	}
	switch {
	case state == StateScheduled && untilOpening < RefreshIdle:
		return max(RefreshMoving, untilOpening.Truncate(time.Second))
	case state == StatePaused || state == StateSoldOut:
		return RefreshHeld
	}
	return RefreshIdle
}
