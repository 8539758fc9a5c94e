package sale

import (
	"context"

	"github.com/firelock/firelock/internal/jobs"
)

// Job is the body of the scheduled job admitQueue (AdmitJob): it admits
// until the run's end (the next tick of its schedule; with seconds, that
// long; with neither, one pass). Its writes are fenced by the sales'
// admitter leases, not by the run's lease: an admission commits only while
// its admitter holds the sale, whichever run that is.
func (a *Admitter) Job() jobs.Func {
	return func(ctx context.Context, run *jobs.Run) error {
		return a.Run(ctx, run.Until())
	}
}
