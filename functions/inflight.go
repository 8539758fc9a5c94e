package functions

import (
	"net/http"
	"sync/atomic"
)

// DefaultMaxInFlight is the local functions server's cap on requests in
// flight (cmd/firelock-local -max-in-flight, cmd/surge -max-in-flight).
// Each request in flight holds a connection, a goroutine and its Firestore
// calls; a few hundred keep two cores busy without running out of open
// files under the default limit of 1,024.
const DefaultMaxInFlight = 512

// InFlight caps how many requests the HTTP functions of one process serve
// at once, as Cloud Functions' --concurrency caps an instance. Past the cap
// a request is shed: it is answered at once 503 unavailable with
// Retry-After (CONTRACT §3), before its body is read or anything is
// written, so the caller may retry it as it is. A nil *InFlight has no cap.
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
	l.shed.Add(1)
	if a.CORS.apply(w, r) {
		return
	}
	a.writeError(w, r, "", errOverloaded)
}

// Wrap is h served under l's cap, shedding with a's error writer.
func (l *InFlight) Wrap(a *API, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { l.Serve(a, h, w, r) }
}

// errOverloaded: the request was shed at the cap.
var errOverloaded = errorf(http.StatusServiceUnavailable, "unavailable", "the server is at capacity; try again")

// registered caps the functions this package registers with the
// Functions Framework (the local run serves them all in one process).
var registered atomic.Pointer[InFlight]

// LimitInFlight caps the requests in flight of the functions registered
// with the Functions Framework in this process (all of them, together):
// cmd/firelock-local sets it. A deployed function leaves it unset, since
// Cloud Functions caps requests per instance (--concurrency) in front of
// it. RunScheduledJob's push deliveries and the metrics are not capped.
// max <= 0: no cap.
func LimitInFlight(max int) { registered.Store(NewInFlight(max)) }

// limited serves a registered function under the cap of LimitInFlight.
func limited(fn func(*API) http.HandlerFunc) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		a := defaultAPI()
		registered.Load().Serve(a, fn(a), w, r)
	}
}
