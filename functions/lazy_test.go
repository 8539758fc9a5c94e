package functions

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
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

// A scheduled job that reaches an instance whose clients could not be
// built is not acknowledged: Pub/Sub delivers it again, to this instance's
// next attempt or another.
func TestScheduledJobOnAFailedColdStartIsNotAcknowledged(t *testing.T) {
	l := &lazyAPI{build: func() (*API, error) { return nil, errors.New("metadata server unreachable") }}
	ev := event.New()
	ev.SetID("1")
	ev.SetSource("//pubsub.googleapis.com/projects/demo-firelock/topics/scheduled-jobs")
	ev.SetType("google.cloud.pubsub.topic.v1.messagePublished")
	if err := ev.SetData(event.ApplicationJSON, map[string]any{"message": map[string]any{"data": []byte(`{"job": "rollupCounters"}`)}}); err != nil {
		t.Fatal(err)
	}
	api := l.get()
	api.Log = NewLogger(io.Discard)
	if err := api.RunScheduledJob(context.Background(), ev); err == nil {
		t.Fatal("a delivery to an instance without clients was acknowledged: the event is lost")
	}
}
