package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A 503 the function answers after a crowd's worth of 429s from its front
// end is still tried again: the 429s (front end, tried for joinPatience)
// do not spend the 503's ten tries, which are the function's own.
func TestA503AfterMany429sIsStillTriedAgain(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch i := n.Add(1); {
		case i <= 12:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "Rate exceeded.\n")
		case i == 13:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"code": "unavailable", "message": "shed"}}`)
		default:
			io.WriteString(w, `{"queueId": "q"}`)
		}
	}))
	defer srv.Close()
	s := &sim{base: srv.URL, http: srv.Client(), stop: make(chan struct{}), callCtx: context.Background(), recorder: newRecorder()}
	a, err := s.call("JoinQueue", &user{}, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if a.status != http.StatusOK {
		t.Fatalf("after 12 429s and one 503: answered %d (%d calls), want the 503 tried again and 200", a.status, n.Load())
	}
}
