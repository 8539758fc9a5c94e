package main

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// front stands between the crowd and the functions as each deployed
// function's own front end does (issue #41): for each function at most max
// connections, and the calls beyond them wait for one. A crowd of joins
// then waits for JoinQueue's connections, while the shoppers' calls reach
// ConfirmHold on connections of its own, and the one emulator never has
// more than max of any function's calls in its queue.
type front struct {
	max int
	mu  sync.Mutex
	fns map[string]*http.Transport // by function
}

func newFront(max int) *front { return &front{max: max, fns: map[string]*http.Transport{}} }

// RoundTrip sends r on its function's connections.
func (f *front) RoundTrip(r *http.Request) (*http.Response, error) {
	fn, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	f.mu.Lock()
	t := f.fns[fn]
	if t == nil {
		t = &http.Transport{MaxConnsPerHost: f.max, MaxIdleConnsPerHost: f.max, IdleConnTimeout: time.Minute}
		f.fns[fn] = t
	}
	f.mu.Unlock()
	return t.RoundTrip(r)
}

// close closes the idle connections of every function.
func (f *front) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.fns {
		t.CloseIdleConnections()
	}
}
