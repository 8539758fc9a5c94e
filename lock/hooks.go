package lock

import (
	"context"
	"sync/atomic"
	"time"
)

// Planted bugs, for negative controls: a checker proves it catches what it
// claims to by watching the lock broken on purpose go red. Each is read at
// one point of the real code path and is off unless this package's own
// tests turn it on (export_test.go), so no user of the package can reach
// them.
var (
	// bugTakeoverIgnoresEnd: a grant treats live leases of other owners
	// as ended, and takes them over.
	bugTakeoverIgnoresEnd atomic.Bool
	// bugGuardChecksNothing: Guard and GuardWith accept any lease document.
	bugGuardChecksNothing atomic.Bool
	// bugReleaseUnconditional: a release deletes the lease document
	// without its update-time precondition.
	bugReleaseUnconditional atomic.Bool
	// bugRenewStretches: a renewal writes the lease twice as long as it
	// was granted.
	bugRenewStretches atomic.Bool
	// bugRenewAnyHolder: a renewal is conditioned only on the document
	// existing, so it renews whatever lease stands there.
	bugRenewAnyHolder atomic.Bool
	// bugGrantWithoutFence: a grant writes no fence.
	bugGrantWithoutFence atomic.Bool
	// bugGuardSkipsFence: Guard reads only the lease, without a lock, and
	// not its fence: nothing holds a takeover off until the guarded commit.
	bugGuardSkipsFence atomic.Bool
)

// ignoresEnd: the planted bug takes d, another owner's live lease, for ended.
func ignoresEnd(d leaseDoc, owner string) bool {
	return bugTakeoverIgnoresEnd.Load() && d.Owner != owner
}

// tryObserver is a context key: its value, a func(began time.Time, err
// error), is told the outcome of each try inside an Acquire or AcquireAll
// called with that context. A try settled after an answer came too late
// (ErrUnanswered) may have granted and removed a lease that others saw, so
// a recorded history needs each try, not only the call's last answer. Only
// this package's own tests set it (export_test.go).
type tryObserver struct{}

func observeTry(ctx context.Context, began time.Time, err error) {
	if f, ok := ctx.Value(tryObserver{}).(func(time.Time, error)); ok {
		f(began, err)
	}
}
