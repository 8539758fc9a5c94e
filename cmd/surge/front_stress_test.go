package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Many callers at once, each leaving in its own way (the answer read and
// closed, closed unread, its context cancelled while it waits for a slot,
// while the function is working, or after the headers came): every slot
// comes back, none is taken twice.
func TestFrontGivesEverySlotBack(t *testing.T) {
	const maxConns = 4
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // the body comes after a while, or never for a caller that leaves
		case <-time.After(time.Duration(rand.N(20)) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, strings.Repeat("x", rand.N(100_000)))
	}))
	defer srv.Close()
	f := newFront(maxConns, 30*time.Millisecond)
	defer f.close()
	c := &http.Client{Transport: f}
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fn := []string{"/A", "/B"}[i%2]
			mode := i % 5
			if mode == 2 { // cancelled at a random moment: waiting, in flight, or reading
				time.AfterFunc(time.Duration(rand.N(40))*time.Millisecond, cancel)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+fn, strings.NewReader(`{}`))
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			switch mode {
			case 0, 2:
				io.Copy(io.Discard, resp.Body)
			case 3: // headers came; the caller leaves before the body
				cancel()
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for fn, g := range f.fns {
		if n := len(g.slots); n != 0 {
			t.Errorf("%s: %d of %d slots still taken after every caller left", fn, n, maxConns)
		}
	}
	if f.refused.Load() == 0 {
		t.Errorf("no call was refused: the test never filled the slots")
	}
}
