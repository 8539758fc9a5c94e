package sale

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An operator's transaction answered Aborted or Canceled by the store is
// run again while the request lasts (the emulator answers a commit
// CANCELLED when a listener on its document was closed and not yet
// forgotten: an operator's pause answered 503, CI 2026-11-29 22:45); any
// other error, or one after the request ended, is returned at once.
func TestRetryTransientRunsAgainOnlyWhatTheStoreCutOff(t *testing.T) {
	for _, c := range []struct {
		name  string
		fails []error
		calls int
		ok    bool
	}{
		{"canceled by the store, then done", []error{status.Error(codes.Canceled, "call already cancelled")}, 2, true},
		{"aborted twice, then done", []error{status.Error(codes.Aborted, "contention"), status.Error(codes.Aborted, "contention")}, 3, true},
		{"refused for good", []error{status.Error(codes.FailedPrecondition, "no")}, 1, false},
		{"the caller's own error", []error{errors.New("invalid")}, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retryTransient(context.Background(), func() error {
				calls++
				if calls <= len(c.fails) {
					return c.fails[calls-1]
				}
				return nil
			})
			if calls != c.calls || (err == nil) != c.ok {
				t.Errorf("%d calls, error %v; want %d calls, ok %v", calls, err, c.calls, c.ok)
			}
		})
	}
	t.Run("the request ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		calls := 0
		err := retryTransient(ctx, func() error { calls++; return status.Error(codes.Canceled, "context canceled") })
		if calls != 1 || status.Code(err) != codes.Canceled {
			t.Errorf("%d calls, error %v; want 1 call and its Canceled", calls, err)
		}
	})
}
