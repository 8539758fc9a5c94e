package lock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors; branch on them with errors.Is.
var (
	// ErrHeld: another acquisition holds a live lease on the key: another
	// owner's, or this owner's without Reentrant. The error is usually a
	// *HeldError naming the holders and when their leases end;
	// under heavy churn (every try lost to a grant landing between our read
	// and our write) it wraps ErrHeld without naming anyone.
	ErrHeld = errors.New("lock: held")
	// ErrNotHeld: the caller's lease is gone (released, taken over after it
	// ended, force-released or swept, or not renewed in time) or has too
	// little time left for a guarded write. Whatever ran under the lease
	// gets it (WithLock, Guard; Explain for the context of KeepAlive).
	ErrNotHeld = errors.New("lock: lease not held")
	// ErrInvalidKey: a key cannot name a lock document; nothing was written.
	ErrInvalidKey = errors.New("lock: invalid key")
	// ErrClientMismatch: the Locker's commits would reach another Firestore
	// than its *firestore.Client (another emulator, project or endpoint).
	// Make it with WithClientOptions and the options the client was made with.
	ErrClientMismatch = errors.New("lock: commit client and *firestore.Client reach different databases")
	// ErrUnanswered: an RPC of the lock got no answer within its bound
	// (about a lease: 1 s to 1 min), though the caller's context was live:
	// a half-open connection, a lost stream, an overloaded server. A grant
	// is settled by reading back before this is returned (nothing of it is
	// left), as is a grant answered too late to work under; Acquire tries
	// again. A grant that landed while its caller's context ended, and was
	// removed again, says it too, beside the context's error: others may
	// have seen the keys held meanwhile. So does a try whose every commit
	// was read back and found not to have landed (a connection down
	// throughout; each was sealed out): nothing of it is left. So does a
	// grant whose read-back, seal or removal failed, whatever ended it: it
	// may stand, and then ends with its lease (the error says so). A
	// renewal or release may have landed: its lease is as the error says,
	// or ends by itself within its length.
	ErrUnanswered = errors.New("lock: no answer in time")
)

// Holder is a live lease of another acquisition, as Firestore saw it.
type Holder struct {
	Key   string
	Owner string
	// Until is the server time at which the lease ends unless renewed
	// (renewedAt + leaseSeconds).
	Until time.Time
	// Remaining is Until minus the read time of the snapshot: how long the
	// lease had to run, measured on Firestore's clock alone.
	Remaining time.Duration
}

// HeldError reports the keys that live leases of other acquisitions hold
// (of another owner, or of the asking Locker's own owner without
// Reentrant). errors.Is(err, ErrHeld) holds.
type HeldError struct {
	Holders []Holder // at least one, in key order
	owner   string   // the asking Locker's owner
}

// Error names each holder and when its lease ends; a key held by the
// asking Locker's own owner says so and names Reentrant, which joins it.
func (e *HeldError) Error() string {
	parts := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		parts[i] = fmt.Sprintf("%q by %s until %s", h.Key, h.Owner, h.Until.UTC().Format(time.RFC3339Nano))
		if e.owner != "" && h.Owner == e.owner {
			parts[i] += " (this Locker's own owner: another acquisition of it holds the key; lock.Reentrant() joins it)"
		}
	}
	return "lock: held: " + strings.Join(parts, ", ")
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Keys lists the held keys, in key order.
func (e *HeldError) Keys() []string {
	keys := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		keys[i] = h.Key
	}
	return keys
}

// maxRemaining is the longest time any holder still has.
func (e *HeldError) maxRemaining() time.Duration {
	var d time.Duration
	for _, h := range e.Holders {
		d = max(d, h.Remaining)
	}
	return d
}
