package telemetry

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Span names of the library (the functions name theirs after the function).
const (
	LockCommitSpan = "firelock.lock.commit" // a grant's, renewal's or release's commit
	BookingSpan    = "firelock.booking."    // + the operation: firelock.booking.book, ...
)

// Tracer is package pkg's tracer from the global provider: a no-op until
// the application sets one (the functions do when deployed with
// FIRELOCK_TRACES=cloud). A tracer taken before then records into the
// provider set first. Firestore's client traces its own calls into the
// same provider, so a booking's commit shows under its operation's span.
func Tracer(pkg string) trace.Tracer { return otel.Tracer(Scope + "/" + pkg) }
