package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/firelock/firelock/internal/emulators"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spans is this test binary's tracer provider, set once as the global one
// (as FIRELOCK_TRACES=cloud does deployed). It samples the traces a test
// names (traced) and drops every other, so the other tests see what an
// unsampled request sees, whatever the order they run in.
var spans = sync.OnceValue(func() *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(traced)))
	return rec
})

var traced = &sampleOnly{}

// sampleOnly samples the traces whose IDs it holds.
type sampleOnly struct{ ids sync.Map }

func (s *sampleOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	r := sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	if _, ok := s.ids.Load(p.TraceID); ok {
		r.Decision = sdktrace.RecordAndSample
	}
	return r
}

func (s *sampleOnly) Description() string { return "sampleOnly" }

// A function call is a span inside the trace its request names
// (traceparent), the booking operation a span inside it, Firestore's
// commit inside that; and the lines logged meanwhile name the call's span.
func TestFunctionCallSpanJoinsTheRequestsTrace(t *testing.T) {
	rec := spans()
	e := newEnv(t)
	traceID := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	parent := fmt.Sprintf("%016x", rand.Uint64()|1)
	tid, _ := trace.TraceIDFromHex(traceID)
	traced.ids.Store(tid, true)
	r := e.call("BookSeats", token(t, "alice"), map[string]any{"screeningId": "s1", "seats": []string{"C3"}, "requestId": "traced"},
		func(req *http.Request) { req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01") })
	if r.Status != http.StatusCreated {
		t.Fatalf("BookSeats: %d %v", r.Status, r.Body)
	}

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var call, op sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != traceID {
			continue
		}
		byID[s.SpanContext().SpanID()] = s
		switch s.Name() {
		case "BookSeats":
			call = s
		case "firelock.booking.book":
			op = s
		}
	}
	if call == nil || op == nil {
		t.Fatalf("spans of trace %s: %v; want BookSeats and firelock.booking.book", traceID, names(byID))
	}
	if call.Parent().SpanID().String() != parent || call.SpanKind() != trace.SpanKindServer {
		t.Errorf("BookSeats span: parent %s, kind %v; want the request's span %s, server", call.Parent().SpanID(), call.SpanKind(), parent)
	}
	if op.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("firelock.booking.book's parent is %s, want the call's span %s", op.Parent().SpanID(), call.SpanContext().SpanID())
	}
	commits := 0
	for _, s := range byID {
		if s.Parent().SpanID() == op.SpanContext().SpanID() && strings.Contains(s.Name(), "firestore") && strings.Contains(strings.ToLower(s.Name()), "commit") {
			commits++
		}
	}
	if commits == 0 {
		t.Errorf("no Firestore commit span inside firelock.booking.book: %v", names(byID))
	}

	// The log line of the booking names the trace and the call's span.
	found := false
	for _, line := range bytes.Split(e.log.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m["message"] != "booked" {
			continue
		}
		found = true
		if m["logging.googleapis.com/trace"] != "projects/"+emulators.AuthProject+"/traces/"+traceID ||
			m["logging.googleapis.com/spanId"] != call.SpanContext().SpanID().String() || m["logging.googleapis.com/trace_sampled"] != true {
			t.Errorf("log line %s: want trace %s, the call's span %s, sampled", line, traceID, call.SpanContext().SpanID())
		}
	}
	if !found {
		t.Errorf("no 'booked' line in the log:\n%s", e.log)
	}
}

func names(spans map[trace.SpanID]sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
