package functions

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
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

// traceHandler adds the context's trace to each record.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, rec slog.Record) error {
	if t, ok := ctx.Value(traceCtxKey{}).(trace); ok {
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
