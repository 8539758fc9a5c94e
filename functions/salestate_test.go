package functions_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/sale"
)

// stateEnv is a functions server whose SaleState reads through a client
// that counts its RPCs, on the project of e.fs (screening s1, no sale).
func stateEnv(t *testing.T) (*env, *rpcstats.Stats) {
	t.Helper()
	project := firelocktest.ProjectID(t)
	e := newEnvWithScreening(t, firelocktest.NewClientFor(t, project))
	stats := &rpcstats.Stats{}
	fs, err := rpcstats.NewClient(context.Background(), project, stats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	e.api.States = sale.NewStateCache(fs)
	return e, stats
}

type stateAnswer struct {
	status int
	header http.Header
	body   string
}

func getState(t *testing.T, e *env, method, query string, header map[string]string) stateAnswer {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+"/SaleState"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return stateAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return stateAnswer{resp.StatusCode, resp.Header, string(b)}
}

func (a stateAnswer) code() string {
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(a.body), &v)
	return v.Error.Code
}

// GET /SaleState answers the §7 fields of sales/{id} and refreshSeconds,
// cacheable by browsers and the CDN, with a strong ETag: 304 to
// If-None-Match, and HEAD answers the headers alone (CONTRACT §14).
func TestSaleStateAnswersThePublicState(t *testing.T) {
	t.Parallel()
	e, stats := stateEnv(t)
	ctx := context.Background()
	opens := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	updated := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := e.fs.Doc("sales/s1").Set(ctx, sale.Public{State: sale.StateOpen, OpensAt: opens, Waiting: 120, Admitted: 30,
		Active: 7, SeatsLeft: 150, AdmittedThrough: "0000030", Marks: []sale.Mark{{Order: "0000031", Ahead: 0}, {Order: "0000080", Ahead: 49}},
		UpdatedAt: updated}); err != nil {
		t.Fatal(err)
	}
	a := getState(t, e, http.MethodGet, "?screening=s1", nil)
	if a.status != http.StatusOK || a.header.Get("Cache-Control") != "public, max-age=1, s-maxage=1" ||
		!strings.HasPrefix(a.header.Get("ETag"), `"`) || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET: %d %v %s", a.status, a.header, a.body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(a.body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"state": "open", "opensAt": opens.Format(time.RFC3339Nano), "waiting": 120.0, "admitted": 30.0, "active": 7.0,
		"seatsLeft": 150.0, "admittedThrough": "0000030", "updatedAt": updated.Format(time.RFC3339Nano), "refreshSeconds": 1.0,
		"marks": []any{map[string]any{"order": "0000031", "ahead": 0.0}, map[string]any{"order": "0000080", "ahead": 49.0}}}
	if len(got) != len(want) {
		t.Fatalf("fields %v, want those of %v", got, want)
	}
	for k, v := range want {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(v) {
			t.Errorf("%s = %s, want %s", k, g, mustJSON(v))
		}
	}
	etag := a.header.Get("ETag")
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		if b := getState(t, e, http.MethodGet, "?screening=s1", map[string]string{"If-None-Match": inm}); b.status != http.StatusNotModified || b.body != "" || b.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d %v %q", inm, b.status, b.header, b.body)
		}
	}
	if b := getState(t, e, http.MethodGet, "?screening=s1", map[string]string{"If-None-Match": `"other"`}); b.status != http.StatusOK || b.body != a.body {
		t.Errorf("another ETag: %d %q", b.status, b.body)
	}
	if b := getState(t, e, http.MethodHead, "?screening=s1", nil); b.status != http.StatusOK || b.body != "" || b.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %v %q", b.status, b.header, b.body)
	}
	if n := stats.Snapshot().Reads; n > 2 { // the answers above came within a second or two
		t.Errorf("%d reads for answers within about a second", n)
	}
	// A sold out sale moves little: kept 5 s; a closed one 15 s, the most
	// the CDN keeps it.
	time.Sleep(1100 * time.Millisecond)
	if _, err := e.fs.Doc("sales/s1").Set(ctx, sale.Public{State: sale.StateSoldOut, OpensAt: opens, Admitted: 200, UpdatedAt: updated}); err != nil {
		t.Fatal(err)
	}
	if b := getState(t, e, http.MethodGet, "?screening=s1", nil); b.status != http.StatusOK || b.header.Get("Cache-Control") != "public, max-age=5, s-maxage=5" ||
		b.header.Get("ETag") == etag || !strings.Contains(b.body, `"marks":[]`) || !strings.Contains(b.body, `"refreshSeconds":5`) {
		t.Errorf("sold out: %d %v %s", b.status, b.header, b.body)
	}
	time.Sleep(5100 * time.Millisecond)
	if _, err := e.fs.Doc("sales/s1").Set(ctx, sale.Public{State: sale.StateClosed, OpensAt: opens, Admitted: 200, UpdatedAt: updated}); err != nil {
		t.Fatal(err)
	}
	if b := getState(t, e, http.MethodGet, "?screening=s1", nil); b.status != http.StatusOK || b.header.Get("Cache-Control") != "public, max-age=15, s-maxage=15" ||
		!strings.Contains(b.body, `"state":"closed"`) {
		t.Errorf("closed: %d %v %s", b.status, b.header, b.body)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Until the sale's first publication, a screening with a sale answers
// scheduled with its opensAt and zero counts; one without a sale 409
// no_sale, one that does not exist 404 screening_not_found.
func TestSaleStateBeforeThePublication(t *testing.T) {
	t.Parallel()
	e, _ := stateEnv(t)
	if a := getState(t, e, http.MethodGet, "?screening=s1", nil); a.status != http.StatusConflict || a.code() != "no_sale" {
		t.Fatalf("no sale: %d %s", a.status, a.body)
	}
	if a := getState(t, e, http.MethodGet, "?screening=nope", nil); a.status != http.StatusNotFound || a.code() != "screening_not_found" ||
		a.header.Get("Cache-Control") != "public, max-age=1, s-maxage=1" {
		t.Fatalf("no screening: %d %v %s", a.status, a.header, a.body)
	}
	opens := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	if _, err := e.fs.Doc("screenings/s2").Set(context.Background(), map[string]any{"title": "M", "startsAt": time.Now().Add(24 * time.Hour),
		"rows": []string{"A"}, "seatsPerRow": 10, "sale": map[string]any{"opensAt": opens, "admitPerMinute": 60, "maxActive": 10}}); err != nil {
		t.Fatal(err)
	}
	a := getState(t, e, http.MethodGet, "?screening=s2", nil)
	want := `{"state":"scheduled","opensAt":"` + opens.Format(time.RFC3339Nano) + `","waiting":0,"admitted":0,"active":0,"seatsLeft":0,"admittedThrough":"","marks":[],"updatedAt":"0001-01-01T00:00:00Z","refreshSeconds":15}`
	if a.status != http.StatusOK || a.body != want || a.header.Get("Cache-Control") != "public, max-age=15, s-maxage=15" {
		t.Fatalf("scheduled: %d %v\n%s\nwant %s", a.status, a.header, a.body, want)
	}
}

// Bad input gets the contract's error and reads nothing.
func TestSaleStateBadInputReadsNothing(t *testing.T) {
	t.Parallel()
	e, stats := stateEnv(t)
	for _, c := range []struct {
		method, query string
		status        int
		code          string
	}{
		{http.MethodGet, "", http.StatusBadRequest, "invalid_argument"},
		{http.MethodGet, "?screening=", http.StatusBadRequest, "invalid_argument"},
		{http.MethodGet, "?screening=" + strings.Repeat("x", 1501), http.StatusBadRequest, "invalid_argument"},
		{http.MethodGet, "?screening=" + url.QueryEscape("a/b"), http.StatusBadRequest, "invalid_argument"},
		{http.MethodGet, "?screening=__x__", http.StatusBadRequest, "invalid_argument"},
		{http.MethodGet, "?screening=" + url.QueryEscape("a\x01"), http.StatusBadRequest, "invalid_argument"},
		{http.MethodPost, "?screening=s1", http.StatusMethodNotAllowed, "method_not_allowed"},
		{http.MethodPut, "?screening=s1", http.StatusMethodNotAllowed, "method_not_allowed"},
		{http.MethodDelete, "?screening=s1", http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		if a := getState(t, e, c.method, c.query, nil); a.status != c.status || a.code() != c.code {
			t.Errorf("%s %.40s: %d %s, want %d %s", c.method, c.query, a.status, a.body, c.status, c.code)
		}
	}
	if n := stats.Snapshot(); n.Calls() != 0 || n.Reads != 0 {
		t.Errorf("bad input cost %v", n)
	}
}

// burst sends n GETs of query from 50 goroutines at once and returns how
// long it took and the statuses.
func burst(t *testing.T, e *env, n int, query string) (time.Duration, map[int]int) {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				a := getState(t, e, http.MethodGet, query, nil)
				mu.Lock()
				statuses[a.status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), statuses
}

// One instance reads sales/{id} at most once a second whatever its
// traffic: 50 requests at once share one read, and waves of them for
// seconds read about once a second; a burst of 1,000 requests for a
// screening that does not exist reads about twice a second (sales/{id},
// then the screening), not once each.
func TestSaleStateReadsOnceASecond(t *testing.T) {
	t.Parallel()
	e, stats := stateEnv(t)
	if _, err := e.fs.Doc("sales/s1").Set(context.Background(), sale.Public{State: sale.StateOpen, Waiting: 10, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, st := burst(t, e, 50, "?screening=s1"); st[http.StatusOK] != 50 {
		t.Fatalf("50 at once: %v", st)
	}
	if c := stats.Snapshot(); c.Reads != 1 || c.RPCs["BatchGetDocuments"] != 1 {
		t.Fatalf("50 concurrent requests cost %v, want one read", c)
	}
	before := stats.Snapshot()
	start := time.Now()
	n := 0
	for time.Since(start) < 3*time.Second {
		_, st := burst(t, e, 50, "?screening=s1")
		n += st[http.StatusOK]
	}
	elapsed := time.Since(start)
	reads := stats.Snapshot().Sub(before).Reads
	if limit := int(elapsed/time.Second) + 2; reads > limit || n < 100 {
		t.Errorf("%d requests in %v read sales/s1 %d times, want at most %d", n, elapsed, reads, limit)
	}
	t.Logf("%d requests in %v: %d reads", n, elapsed, reads)

	before = stats.Snapshot()
	took, st := burst(t, e, 1000, "?screening=nope")
	reads = stats.Snapshot().Sub(before).Reads
	if st[http.StatusNotFound] != 1000 {
		t.Fatalf("1,000 for a screening that does not exist: %v", st)
	}
	if limit := 2 * (int(took/time.Second) + 2); reads > limit {
		t.Errorf("1,000 requests for a screening that does not exist in %v: %d reads, want at most %d", took, reads, limit)
	}
	t.Logf("1,000 404s in %v: %d reads", took, reads)
}
