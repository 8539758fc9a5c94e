package lock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Bug is a bug planted in the lock for a negative control (hooks.go).
type Bug struct {
	name string
	flag *atomic.Bool
}

// The planted bugs.
var (
	BugTakeoverIgnoresEnd   = Bug{"a takeover that ignores the lease end", &bugTakeoverIgnoresEnd}
	BugGuardChecksNothing   = Bug{"a Guard that checks nothing", &bugGuardChecksNothing}
	BugReleaseUnconditional = Bug{"a release without its precondition", &bugReleaseUnconditional}
	BugRenewStretches       = Bug{"a renewal that stretches the lease", &bugRenewStretches}
	BugRenewAnyHolder       = Bug{"a renewal of whatever lease stands", &bugRenewAnyHolder}
	BugGrantWithoutFence    = Bug{"a grant that writes no fence", &bugGrantWithoutFence}
	BugGuardSkipsFence      = Bug{"a Guard that reads the lease without a lock and not its fence", &bugGuardSkipsFence}
)

// Plant turns the bug on until tb ends. The tests that plant bugs are
// sequential, and the package's parallel tests start only once every
// sequential test has finished, so no other test sees it.
func (b Bug) Plant(tb testing.TB) {
	b.flag.Store(true)
	tb.Cleanup(func() { b.flag.Store(false) })
}

func (b Bug) String() string { return b.name }

// LocalTimeLeft is how long l has left by its holder's own conservative
// clock (the send time of the write that granted or last renewed it, plus
// its length).
func LocalTimeLeft(l *Lease) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Until(l.validUntil)
}

// ObserveTries returns ctx with f told of each try inside an Acquire or
// AcquireAll called with it: when the try began and its error (hooks.go).
func ObserveTries(ctx context.Context, f func(began time.Time, err error)) context.Context {
	return context.WithValue(ctx, tryObserver{}, f)
}

// SealOwner is the owner of a key's document that a seal created: an
// ended lease of nobody's (locker.go, seal).
const SealOwner = sealOwner
