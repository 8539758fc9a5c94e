package functions

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/firelock/firelock/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Cloud Logging groups the lines of one request by these fields.
const (
	traceKey        = "logging.googleapis.com/trace"
	spanKey         = "logging.googleapis.com/spanId"
	traceSampledKey = "logging.googleapis.com/trace_sampled"
)

type traceCtxKey struct{}

type trace struct {
	id, span string
	sampled  bool
}

var (
	traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$`)
	cloudTrace  = regexp.MustCompile(`^([0-9a-fA-F]{32})(?:/([0-9]+))?(?:;o=([01]))?$`)
)

// traceOf reads the request's trace: W3C traceparent first, then Google's
// X-Cloud-Trace-Context (TRACE_ID/SPAN_ID;o=1, the span in decimal).
func traceOf(r *http.Request) (trace, bool) {
	if m := traceparent.FindStringSubmatch(strings.TrimSpace(r.Header.Get("traceparent"))); m != nil && m[1] != strings.Repeat("0", 32) {
		flags, _ := strconv.ParseUint(m[3], 16, 8)
		return trace{id: m[1], span: m[2], sampled: flags&1 == 1}, true
	}
	if m := cloudTrace.FindStringSubmatch(strings.TrimSpace(r.Header.Get("X-Cloud-Trace-Context"))); m != nil {
		t := trace{id: strings.ToLower(m[1]), sampled: m[3] == "1"}
		if span, err := strconv.ParseUint(m[2], 10, 64); err == nil && m[2] != "" {
			t.span = strconv.FormatUint(span, 16)
			t.span = strings.Repeat("0", 16-len(t.span)) + t.span
		}
		return t, true
	}
	return trace{}, false
}

// withTrace returns r with its trace, qualified by project, in the context:
// every line logged with that context carries it.
func withTrace(r *http.Request, project string) *http.Request {
	t, ok := traceOf(r)
	if !ok || project == "" {
		return r
	}
	t.id = "projects/" + project + "/traces/" + t.id
	return r.WithContext(context.WithValue(r.Context(), traceCtxKey{}, t))
}

var tracer = telemetry.Tracer("functions")

// startSpan starts the span of a function call (named after the function),
// a child of the span the request names (traceOf), so that Cloud Trace
// shows it inside the request's trace, and the lines logged meanwhile name
// it (traceHandler). Without a tracer provider (FIRELOCK_TRACES unset) the
// span records nothing and carries the request's own span on.
func startSpan(r *http.Request) (*http.Request, oteltrace.Span) {
	ctx := r.Context()
	if t, ok := traceOf(r); ok {
		tid, err1 := oteltrace.TraceIDFromHex(t.id)
		sid, err2 := oteltrace.SpanIDFromHex(t.span)
		if err1 == nil && err2 == nil {
			flags := oteltrace.TraceFlags(0)
			if t.sampled {
				flags = oteltrace.FlagsSampled
			}
			ctx = oteltrace.ContextWithRemoteSpanContext(ctx, oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
				TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}))
		}
	}
	ctx, span := tracer.Start(ctx, functionName(r), oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	return r.WithContext(ctx), span
}

// answered notes the answer on the function call's span.
func answered(r *http.Request, status int, code string) {
	span := oteltrace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status), telemetry.Code.String(code))
	if status >= 500 {
		span.SetStatus(otelcodes.Error, code)
	}
}

// functionName is the function a request calls: the entry point deployed
// (Cloud Run serves it at /), or the first part of the local server's path.
func functionName(r *http.Request) string {
	if fn := os.Getenv("FUNCTION_TARGET"); fn != "" {
		return fn
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return name
}

// traceHandler adds the context's trace to each record: the span of the
// function call when it is recorded (so each line joins its span in Cloud
// Trace), else the span the request named.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, rec slog.Record) error {
	if t, ok := ctx.Value(traceCtxKey{}).(trace); ok {
		if span := oteltrace.SpanFromContext(ctx); span.IsRecording() && strings.HasSuffix(t.id, "/"+span.SpanContext().TraceID().String()) {
			sc := span.SpanContext()
			t.span, t.sampled = sc.SpanID().String(), sc.IsSampled()
		}
		rec.AddAttrs(slog.String(traceKey, t.id), slog.Bool(traceSampledKey, t.sampled))
		if t.span != "" {
			rec.AddAttrs(slog.String(spanKey, t.span))
		}
	}
	return h.Handler.Handle(ctx, rec)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
