package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The front end lets max calls of a function through at once; a call that
// finds no slot within the wait hears 429 with Retry-After and never
// reaches the function; a slot is free again once its answer is closed;
// another function's calls have slots of their own.
func TestFrontAnswers429PastItsWait(t *testing.T) {
	release := make(chan struct{})
	var reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.URL.Path == "/Slow" {
			<-release
		}
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	f := newFront(1, 200*time.Millisecond)
	defer f.close()
	c := &http.Client{Transport: f}

	first := make(chan *http.Response)
	go func() {
		resp, err := c.Post(srv.URL+"/Slow", "application/json", nil)
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	for reached.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := c.Post(srv.URL+"/Slow", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second call while the one slot is taken: %d Retry-After %q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if reached.Load() != 1 {
		t.Fatalf("the refused call reached the function (%d calls reached it)", reached.Load())
	}
	if f.refused.Load() != 1 {
		t.Errorf("refused %d, want 1", f.refused.Load())
	}
	// Another function is not behind Slow's slot.
	if resp, err := c.Post(srv.URL+"/Other", "application/json", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another function while Slow's slot is taken: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	close(release)
	r1 := <-first
	if r1 == nil {
		t.FailNow()
	}
	// The slot is the first call's until its answer is closed.
	if resp, _ := c.Post(srv.URL+"/Slow", "application/json", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a call while the first answer is still open: %d, want 429", resp.StatusCode)
	}
	r1.Body.Close()
	resp, err = c.Post(srv.URL+"/Slow", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a call after the first answer was closed: %v %v, want 200", resp, err)
	}
	resp.Body.Close()
}
