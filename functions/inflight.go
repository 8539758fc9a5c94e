package functions

import (
	"net/http"
	"sync/atomic"
)

// DefaultMaxInFlight is the local functions server's cap on each
// function's requests in flight (cmd/firelock-local -max-in-flight,
// cmd/surge -max-in-flight). Each request in flight holds a connection, a
// goroutine and its Firestore calls, and the one Firestore emulator answers
// every caller later the more work is queued in it: in the ten-times surge
// (issue #41) unbounded joins delayed the admitter's lease renewals past
// its lease. 64 joins at once keep the emulator's commits within about 3 s
// there, on two cores.
const DefaultMaxInFlight = 64

// InFlight caps how many requests an HTTP function serves at once in one
// process, as Cloud Functions' --concurrency and --max-instances cap a
// deployed function. Past the cap a request is shed: it is answered at
// once 503 unavailable with Retry-After (CONTRACT §3), before its body is
// read or anything is written, so the caller may retry it as it is. A nil
// *InFlight has no cap.
type InFlight struct {
	slots chan struct{}
	shed  atomic.Int64
}

// NewInFlight caps requests in flight at max; max <= 0 means no cap (nil).
func NewInFlight(max int) *InFlight {
	if max <= 0 {
		return nil
	}
	return &InFlight{slots: make(chan struct{}, max)}
}

// Shed is how many requests were shed so far.
func (l *InFlight) Shed() int64 {
	if l == nil {
		return 0
	}
	return l.shed.Load()
}

// Serve serves h for r while a slot is free, and otherwise answers with
// a's error writer. A CORS preflight is answered whatever the load: it
// costs nothing, and without it a browser could not read the 503.
func (l *InFlight) Serve(a *API, h http.HandlerFunc, w http.ResponseWriter, r *http.Request) {
	if l == nil {
		h(w, r)
		return
	}
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
		h(w, r)
		return
	default:
	}
	if a.CORS.apply(w, r) {
		return
	}
	l.shed.Add(1)
	a.writeError(w, r, "", errOverloaded)
}

// Wrap is h served under l's cap, shedding with a's error writer.
func (l *InFlight) Wrap(a *API, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { l.Serve(a, h, w, r) }
}

// errOverloaded: the request was shed at the cap.
var errOverloaded = errorf(http.StatusServiceUnavailable, "unavailable", "the server is at capacity; try again")

// registered caps each function this package registers with the
// Functions Framework (the local run serves them all in one process), by
// name; nil: no cap.
var registered atomic.Pointer[map[string]*InFlight]

// LimitInFlight caps the requests in flight of each function registered
// with the Functions Framework in this process at max, every function on
// its own, as each deployed function has its own instances: a crowd of
// joins past JoinQueue's cap is shed while ConfirmHold still has room.
// cmd/firelock-local sets it. A deployed function leaves it unset, since
// Cloud Functions caps requests per instance (--concurrency) in front of
// it. RunScheduledJob's push deliveries and the metrics are not capped.
// max <= 0: no cap.
func LimitInFlight(max int) {
	caps := map[string]*InFlight{}
	for _, name := range HTTPFunctions {
		caps[name] = NewInFlight(max)
	}
	registered.Store(&caps)
}

// limited serves the registered function name under its cap of
// LimitInFlight.
func limited(name string, fn func(*API) http.HandlerFunc) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		a := defaultAPI()
		var l *InFlight
		if caps := registered.Load(); caps != nil {
			l = (*caps)[name]
		}
		l.Serve(a, fn(a), w, r)
	}
}
