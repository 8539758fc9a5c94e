package booking

import (
	"sync"
	"time"
)

// serverClock bounds Firestore's clock from the server times its answers
// carry (a commit's update time, a read's read time). Each answer was
// stamped at some instant between the request's send and the answer's
// arrival, so the server's time now lies within
//
//	[stamp + (now − arrival), stamp + (now − send)]
//
// on this machine's monotonic clock, widened for drift. The bounds decide
// nothing about anyone's lease or hold: they only say whether a one-commit
// booking is safely far from a screening's start (else the request reads
// first and the read time decides), and they place a one-commit hold's end
// (heldUntil), which is then the stored server time everybody judges by.
type serverClock struct {
	mu     sync.Mutex
	stamp  time.Time // server time of the best sample
	sent   time.Time // local send time of its request (monotonic reading kept)
	arrive time.Time // local arrival of its answer
}

const (
	// clockMaxAge: a sample older than this is not trusted (a paused
	// instance's monotonic clock may have stood still); the next request
	// reads first and brings a fresh one.
	clockMaxAge = 30 * time.Second
	// clockDrift is the most two clocks drift apart, per second elapsed.
	clockDrift = 200e-6
)

// observe records that the server stamped stamp while a request sent at
// sent was answered at arrive. It keeps whichever sample bounds the clock
// more tightly now, but never one past half its trusted age: a tight old
// sample would otherwise refuse every fresh one until it ages out, and the
// instance would lose its bounds then.
func (c *serverClock) observe(stamp, sent, arrive time.Time) {
	if stamp.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp.IsZero() || arrive.Sub(c.arrive) > clockMaxAge/2 || width(sent, arrive, arrive) <= width(c.sent, c.arrive, arrive) {
		c.stamp, c.sent, c.arrive = stamp, sent, arrive
	}
}

// width is how wide a sample taken over [sent, arrive] bounds the clock at now.
func width(sent, arrive, now time.Time) time.Duration {
	return arrive.Sub(sent) + 2*time.Duration(float64(now.Sub(arrive))*clockDrift)
}

// bounds returns the interval Firestore's clock lies in now, or ok false
// without a fresh sample.
func (c *serverClock) bounds() (lo, hi time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	age := now.Sub(c.arrive)
	if c.stamp.IsZero() || age > clockMaxAge {
		return time.Time{}, time.Time{}, false
	}
	drift := time.Duration(float64(age) * clockDrift)
	return c.stamp.Add(now.Sub(c.arrive) - drift), c.stamp.Add(now.Sub(c.sent) + drift), true
}

// forget drops the sample (an answer contradicted it).
func (c *serverClock) forget() {
	c.mu.Lock()
	c.stamp = time.Time{}
	c.mu.Unlock()
}
