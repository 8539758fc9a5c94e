package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/sale"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The waiting room as the app waits in it (CONTRACT §14, issue #51): no
// listener while far back; SaleState polled with the last ETag, every
// refreshSeconds within about a minute of admission and less often
// further back (at least every 30 s); the place read once (a get) at
// first, after the draw, and when admittedThrough reaches it; near the
// front (at most admitPerMinute ahead) and once admitted, the place
// listened to. web/src/app/salestate.ts is the app's; this is its port.

// Poll pacing of web/src/app/salestate.ts.
const (
	maxPollEvery = 30 * time.Second // MAX_POLL_MS
	nearWait     = time.Minute      // NEAR_MS
)

// publicState is a SaleState answer, as far as a waiting person uses it.
type publicState struct {
	State           string      `json:"state"`
	Waiting         int64       `json:"waiting"`
	AdmittedThrough string      `json:"admittedThrough"`
	Marks           []sale.Mark `json:"marks"`
	RefreshSeconds  int         `json:"refreshSeconds"`
	SeatsLeft       int64       `json:"seatsLeft"` // an admitted person's: the seat map pauses at 0 (users.go)
}

// placeView is what a waiting person knows of its place.
type placeView struct {
	status, order string
	passUntil     time.Time
}

func placeOf(snap *firestore.DocumentSnapshot) placeView {
	var v placeView
	if snap == nil || !snap.Exists() {
		return v
	}
	v.status, _ = snap.Data()["status"].(string)
	v.order, _ = snap.Data()["order"].(string)
	v.passUntil, _ = snap.Data()["passUntil"].(time.Time)
	return v
}

// listenerGauge counts the users' listeners open, by kind, and keeps the
// peak and when it was.
type listenerGauge struct {
	mu     sync.Mutex
	open   map[string]int
	total  int
	peak   int
	peakAt time.Time
	peakBy map[string]int
}

func newListenerGauge() *listenerGauge {
	return &listenerGauge{open: map[string]int{}, peakBy: map[string]int{}}
}

// opened counts a listener of kind open until the returned func is called.
func (g *listenerGauge) opened(kind string) func() {
	g.mu.Lock()
	g.open[kind]++
	g.total++
	if g.total > g.peak {
		g.peak, g.peakAt = g.total, time.Now()
		clear(g.peakBy)
		for k, n := range g.open {
			g.peakBy[k] = n
		}
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.open[kind]--
			g.total--
			g.mu.Unlock()
		})
	}
}

// stateCalls counts the users' SaleState polls by answer; edge: those the
// CDN stand-in answered without calling the function.
type stateCalls struct {
	calls, ok, notModified, other, edge atomic.Int64
}

// edgeCache stands in for Firebase Hosting's CDN in front of SaleState
// (-cdn; firebase.json's rewrite): it keeps the function's last 200 for
// its s-maxage and answers polls from it, a 304 to a matching
// If-None-Match; one request at a time goes through to the function on a
// miss, the others waiting for its answer (request collapsing).
type edgeCache struct {
	mu      sync.Mutex
	body    []byte
	etag    string
	expires time.Time
}

var sMaxAge = regexp.MustCompile(`s-maxage=(\d+)`)

// poll answers as the CDN would: from the cache while fresh, else by
// asking the function (fetch) once.
func (c *edgeCache) poll(etag string, fetch func() (*http.Response, error)) (status int, body []byte, tag string, hit bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etag == "" || !time.Now().Before(c.expires) {
		resp, err := fetch()
		if err != nil {
			return 0, nil, "", false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, "", false, err
		}
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, b, "", false, nil
		}
		c.body, c.etag = b, resp.Header.Get("ETag")
		age := 0
		if m := sMaxAge.FindStringSubmatch(resp.Header.Get("Cache-Control")); m != nil {
			age, _ = strconv.Atoi(m[1])
		}
		c.expires = time.Now().Add(time.Duration(age) * time.Second)
		hit = false
	} else {
		hit = true
	}
	if etag != "" && etag == c.etag {
		return http.StatusNotModified, nil, c.etag, hit, nil
	}
	return http.StatusOK, c.body, c.etag, hit, nil
}

// pollState asks SaleState once, with etag as If-None-Match: the state
// (nil on a 304 or a failure) and the new ETag.
func (s *sim) pollState(ctx context.Context, etag string) (*publicState, string) {
	s.states.calls.Add(1)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/SaleState?screening="+url.QueryEscape(s.screening), nil)
	if err != nil {
		return nil, etag
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	var (
		code int
		body []byte
		tag  string
	)
	if s.edge != nil {
		var hit bool
		// The CDN asks the function for the whole answer, not the
		// person's If-None-Match: it answers that itself.
		fetch := req.Clone(ctx)
		fetch.Header.Del("If-None-Match")
		code, body, tag, hit, err = s.edge.poll(etag, func() (*http.Response, error) { return s.http.Do(fetch) })
		if hit {
			s.states.edge.Add(1)
		}
	} else {
		var resp *http.Response
		if resp, err = s.http.Do(req); err == nil {
			code, tag = resp.StatusCode, resp.Header.Get("ETag")
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}
	if err != nil && ctx.Err() != nil {
		s.states.calls.Add(-1) // the wait ended with the poll in flight: not an answer
		return nil, etag
	}
	if err != nil {
		s.states.other.Add(1)
		s.note("SaleState error")
		return nil, etag
	}
	s.note("SaleState " + strconv.Itoa(code))
	switch code {
	case http.StatusNotModified:
		s.states.notModified.Add(1)
		return nil, etag
	case http.StatusOK:
		var st publicState
		if err := json.Unmarshal(body, &st); err != nil {
			s.states.other.Add(1)
			return nil, etag
		}
		s.states.ok.Add(1)
		return &st, tag
	}
	s.states.other.Add(1)
	return nil, etag
}

// admitRate is how many the sale admits a minute at most (queue.ts'
// admitRatePerMinute).
func (s *sim) admitRate() float64 {
	return math.Min(float64(s.cfg.AdmitPerMinute), float64(s.cfg.MaxActive)*60/float64(s.cfg.PassSeconds))
}

// near: the place is listened to (salestate.ts' placeIsNear).
func (s *sim) near(p placeView, st *publicState) bool {
	if p.status == "" {
		return false
	}
	if p.status != sale.StatusWaiting {
		return true
	}
	if st == nil || (st.State != sale.StateOpen && st.State != sale.StatePaused) {
		return false
	}
	if st.AdmittedThrough == "" && len(st.Marks) == 0 {
		return false // where the line stands is not published yet: unknown, not the front
	}
	ahead, ok := aheadOf(p.order, st)
	return ok && ahead <= int64(s.cfg.AdmitPerMinute)
}

// nextPoll is salestate.ts' nextPollMs of waitOf.
func (s *sim) nextPoll(p placeView, st *publicState) time.Duration {
	refresh := time.Second
	if st != nil && st.RefreshSeconds > 1 {
		refresh = time.Duration(st.RefreshSeconds) * time.Second
	}
	if p.status != sale.StatusWaiting || st == nil || s.near(p, st) {
		return refresh
	}
	ahead, ok := aheadOf(p.order, st)
	if !ok {
		return refresh
	}
	wait := time.Duration(float64(ahead) / s.admitRate() * float64(time.Minute))
	if wait <= nearWait {
		return refresh
	}
	return max(refresh, min(maxPollEvery, wait/4))
}

// placeReadRate is salestate.ts' PLACE_READS_PER_SECOND: the line's reads
// of their places, at most this many a second.
const placeReadRate = 500

// placeReadDelay is salestate.ts' placeReadDelayMs: how long a place
// without its order yet (an early joiner, after the opening) waits before
// it is read. The first read falls anywhere in waiting/placeReadRate
// seconds (at least 1 s); each read that still found no order waits twice
// as long (half the window, then anywhere in the other half), at most
// maxPollEvery. random is in [0, 1).
func placeReadDelay(waiting int64, attempt int, random float64) time.Duration {
	spread := max(time.Second, time.Duration(float64(max(0, waiting))/placeReadRate*float64(time.Second)))
	if attempt <= 0 {
		return time.Duration(random * float64(min(maxPollEvery, spread)))
	}
	window := min(maxPollEvery, spread<<min(attempt, 10))
	return window/2 + time.Duration(random*float64(window/2))
}

// waitPolling is a waiting person's wait as the app waits (CONTRACT §14):
// it returns the pass's end once admitted, or the outcome.
func (s *sim) waitPolling(ctx context.Context, u *user, queueID string, place *latest[*firestore.DocumentSnapshot], listeners *sync.WaitGroup) (time.Time, string) {
	ref := u.fs.Collection(sale.Queue).Doc(queueID)
	var (
		mu    sync.Mutex
		view  placeView
		state *publicState
	)
	states := &latest[*publicState]{changed: make(chan struct{}, 1)}
	pctx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	// The poller: the app polls for as long as the page is open; the
	// person stops with the wait.
	listeners.Go(func() {
		etag := ""
		for pctx.Err() == nil {
			st, tag := s.pollState(pctx, etag)
			etag = tag
			if st != nil {
				mu.Lock()
				state = st
				mu.Unlock()
				states.set(st)
			}
			mu.Lock()
			d := s.nextPoll(view, state)
			mu.Unlock()
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-pctx.Done():
			case <-s.stop:
				t.Stop()
				return
			}
			t.Stop()
		}
	})
	get := func() {
		snap, err := ref.Get(ctx)
		u.placeGets.Add(1)
		s.placeGets.Add(1)
		if err != nil {
			if ctx.Err() == nil && status.Code(err) != codes.Canceled {
				s.fail("user %d: reading its place: %v", u.i, err)
			}
			return
		}
		u.countReads(1)
		place.set(snap)
	}
	// Once at first; but not for a join before the opening, as the app
	// (main.ts' join): the page has polled the sale scheduled, no draw has
	// given the place an order yet, and JoinQueue's answer (waiting) says
	// all a get would. It reads the place after the draw, below.
	early := time.Now().Before(s.opensAt)
	if !early {
		get()
	}
	listening := false
	var unranked <-chan time.Time // a read of the place without its order, spread (placeReadDelay)
	unrankedReads := 0
	for {
		v := placeOf(place.get())
		if v.status == "" && early {
			v.status = sale.StatusWaiting // JoinQueue's answer
		}
		mu.Lock()
		view = v
		st := state
		mu.Unlock()
		switch {
		case v.status == sale.StatusAdmitted && !v.passUntil.IsZero():
			if !listening { // admitted: the app listens to its place
				listeners.Go(func() { s.listenDoc(ctx, u, ref, place, "place") })
			}
			return v.passUntil, ""
		case v.status == sale.StatusDone, v.status == sale.StatusExpired:
			return time.Time{}, "pass " + v.status + " unseen"
		}
		if !listening && s.near(v, st) {
			listening = true
			listeners.Go(func() { s.listenDoc(ctx, u, ref, place, "place") })
		}
		select {
		case <-place.changed:
		case <-unranked:
			unranked = nil
			if !listening {
				get() // after the draw, spread over the line
			}
		case <-states.changed:
			st := states.get()
			switch {
			case listening || v.status != sale.StatusWaiting:
			case v.order == "" && st.State != sale.StateScheduled:
				if unranked == nil {
					unranked = time.After(placeReadDelay(st.Waiting, unrankedReads, rand.Float64()))
					unrankedReads++
				}
			case v.order != "" && st.AdmittedThrough != "" && v.order <= st.AdmittedThrough:
				get() // when admittedThrough reaches the place
			}
		case <-s.stop:
			return time.Time{}, "still waiting"
		}
	}
}

// orderPosition is queue.ts' position: where an order lies in its part
// of the line, for the estimate between two marks.
var (
	earlyOrder = regexp.MustCompile(`^(0~?)([0-9a-f]{0,13})`)
	laterOrder = regexp.MustCompile(`^1(\d{17})`)
)

func orderPosition(order string) (string, float64, bool) {
	if m := earlyOrder.FindStringSubmatch(order); m != nil {
		hex := m[2]
		for len(hex) < 13 {
			hex += "0"
		}
		at, _ := strconv.ParseUint(hex, 16, 64)
		return m[1], float64(at), true
	}
	if m := laterOrder.FindStringSubmatch(order); m != nil {
		at, _ := strconv.ParseFloat(m[1], 64)
		return "1", at, true
	}
	return "", 0, false
}

// aheadOf is queue.ts' aheadOf: about how many wait ahead of order, by
// the sale's marks (false: unknown, no order yet).
func aheadOf(order string, st *publicState) (int64, bool) {
	if order == "" {
		return 0, false
	}
	if st.AdmittedThrough != "" && order <= st.AdmittedThrough {
		return 0, true
	}
	marks := slices.SortedFunc(slices.Values(st.Marks), func(x, y sale.Mark) int {
		switch {
		case x.Order < y.Order:
			return -1
		case x.Order > y.Order:
			return 1
		}
		return 0
	})
	lo := sale.Mark{Order: st.AdmittedThrough}
	if lo.Order == "" {
		lo.Order = "0"
	}
	var hi *sale.Mark
	for i := range marks {
		if marks[i].Order <= order {
			lo = marks[i]
		} else {
			hi = &marks[i]
			break
		}
	}
	atMost := func(n int64) int64 { return max(0, min(n, st.Waiting)) }
	if hi == nil || lo.Order == order {
		return atMost(lo.Ahead), true
	}
	ap, a, okA := orderPosition(lo.Order)
	xp, x, okX := orderPosition(order)
	bp, b, okB := orderPosition(hi.Order)
	if !okA || !okX || !okB || ap != xp || xp != bp || b <= a {
		return atMost(lo.Ahead), true
	}
	f := min(1, max(0, (x-a)/(b-a)))
	others := max(0, hi.Ahead-lo.Ahead-1)
	return atMost(int64(math.Round(float64(lo.Ahead) + float64(others)*f))), true
}
