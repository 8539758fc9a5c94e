package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// front stands between the crowd and the functions as each deployed
// function's own front end does (issue #41): for each function at most max
// calls on at most max connections; a call beyond them waits for one, but
// no longer than wait, and is then answered 429 with Retry-After without
// reaching the function, as Cloud Run answers a request that found no
// instance free within its pending queue's wait. A crowd of joins then
// waits for JoinQueue's slots, while the shoppers' calls reach ConfirmHold
// on slots of its own, and the one emulator never has more than max of any
// function's calls in its queue. A user's call is never held past the
// wait: it hears 429 and tries again, as the app does.
type front struct {
	max     int
	wait    time.Duration // 0: wait as long as the call's context allows
	mu      sync.Mutex
	fns     map[string]*frontFn // by function
	refused atomic.Int64        // calls answered 429
}

type frontFn struct {
	slots chan struct{}
	t     *http.Transport
}

func newFront(max int, wait time.Duration) *front {
	return &front{max: max, wait: wait, fns: map[string]*frontFn{}}
}

// tooManyRetryAfter is the Retry-After of front's 429, in seconds.
const tooManyRetryAfter = 1

// RoundTrip sends r on its function's connections once a slot is free, or
// answers 429 after the wait.
func (f *front) RoundTrip(r *http.Request) (*http.Response, error) {
	fn, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	f.mu.Lock()
	g := f.fns[fn]
	if g == nil {
		g = &frontFn{
			slots: make(chan struct{}, f.max),
			t:     &http.Transport{MaxConnsPerHost: f.max, MaxIdleConnsPerHost: f.max, IdleConnTimeout: time.Minute},
		}
		f.fns[fn] = g
	}
	f.mu.Unlock()

	var timeout <-chan time.Time
	if f.wait > 0 {
		t := time.NewTimer(f.wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case g.slots <- struct{}{}:
	case <-timeout:
		f.refused.Add(1)
		if r.Body != nil {
			r.Body.Close()
		}
		return tooMany(r), nil
	case <-r.Context().Done():
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, r.Context().Err()
	}
	resp, err := g.t.RoundTrip(r)
	if err != nil {
		<-g.slots
		return nil, err
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, free: func() { <-g.slots }}
	return resp, nil
}

// tooMany is a front end's own 429: plain text, not the functions' JSON
// error shape, as a deployed function's front end answers.
func tooMany(r *http.Request) *http.Response {
	const msg = "Rate exceeded: no instance was free within the request's wait.\n"
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Retry-After", strconv.Itoa(tooManyRetryAfter))
	return &http.Response{
		Status: "429 Too Many Requests", StatusCode: http.StatusTooManyRequests,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(msg)), ContentLength: int64(len(msg)),
		Request: r,
	}
}

// slotBody gives the call's slot back when its answer has been read and
// closed (the connection is the slot's until then).
type slotBody struct {
	io.ReadCloser
	once sync.Once
	free func()
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.free)
	return err
}

// close closes the idle connections of every function.
func (f *front) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.fns {
		g.t.CloseIdleConnections()
	}
}
