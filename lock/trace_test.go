package lock_test

import (
	"context"
	"testing"

	"github.com/firelock/firelock/firelocktest"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The lock's commits are spans inside the caller's trace (a grant writes
// the lease and its fence: two writes, named by count only); a commit
// outside any trace starts none, so renewals make no traces of their own.
func TestCommitsAreSpansInTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp) // the lock's tracer records into the first provider set: this one
	c := firelocktest.NewClient(t)
	l := newLocker(t, c)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	lease, err := l.TryAcquire(ctx, "traced")
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var commits int
	for _, s := range rec.Ended() {
		if s.Name() != "firelock.lock.commit" {
			continue
		}
		commits++
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("a commit span outside the caller's trace (parent %s)", s.Parent().SpanID())
		}
		for _, a := range s.Attributes() {
			if a.Key == "firelock.writes" && a.Value != attribute.IntValue(2) {
				t.Errorf("the grant's span counts %v writes, want 2 (lease and fence)", a.Value.Emit())
			}
		}
	}
	if commits != 1 {
		t.Fatalf("%d commit spans, want 1: the grant's (the renewal and the release ran outside any trace)", commits)
	}
}
