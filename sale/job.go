package sale

import (
	"context"
	"time"

	"github.com/firelock/firelock/internal/jobs"
	"github.com/firelock/firelock/lock"
)

// Job is the body of the scheduled job admitQueue (AdmitJob): it admits
// until the run's end (the next tick of its schedule; with seconds, that
// long; with neither, one pass). Its writes are fenced by the sales'
// admitter leases, not by the run's lease: an admission commits only while
// its admitter holds the sale, whichever run that is.
func (a *Admitter) Job() jobs.Func {
	// internal/jobs does not tell a body its run's end yet: until it does,
	// each run makes one pass.
	return func(ctx context.Context, _ *lock.Lease) error {
		return a.Run(ctx, time.Time{})
	}
}
