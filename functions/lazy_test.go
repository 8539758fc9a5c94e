package functions

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A cold start whose clients could not be built answers 503 (with CORS, so
// a browser sees it) and builds them again on the next request.
func TestFailedColdStartIsRetried(t *testing.T) {
	builds := 0
	built := &API{Log: NewLogger(&strings.Builder{})}
	l := &lazyAPI{build: func() (*API, error) {
		builds++
		if builds == 1 {
			return nil, errors.New("metadata server unreachable")
		}
		return built, nil
	}}
	t.Setenv(AllowedOriginsEnv, "https://tickets.example.com")
	first := l.get()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/BookSeats", strings.NewReader(`{}`))
	req.Header.Set("Origin", "https://tickets.example.com")
	first.BookSeats(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		rec.Header().Get("Access-Control-Allow-Origin") != "https://tickets.example.com" ||
		!strings.Contains(rec.Header().Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("failed cold start answered %d %v", rec.Code, rec.Header())
	}
	if got := l.get(); got != built || builds != 2 {
		t.Fatalf("second request: api %p (want %p), builds %d", got, built, builds)
	}
	if got := l.get(); got != built || builds != 2 {
		t.Fatalf("third request built again (builds %d)", builds)
	}
}
