package sale

import (
	"context"

	"github.com/firelock/firelock/jobs"
)

// Job is the body of the scheduled job admitQueue (AdmitJob): it admits
// until the run's end (the next tick of its schedule; with seconds, that
// long; with neither, one pass), and then, so that no sale goes unadmitted
// while the next run arrives (it starts at that tick, but Pub/Sub's push, a
// cold start and its own lease take a while), for the handover (15 s) more.
// The next run waits for each sale's lease and takes it over the moment
// this one lets go. Its writes are fenced by the sales' admitter leases,
// not by the run's lease: an admission commits only while its admitter
// holds the sale, whichever run that is.
func (a *Admitter) Job() jobs.Func {
	return func(ctx context.Context, run *jobs.Run) error {
		until := run.Until()
		if !until.IsZero() {
			until = until.Add(a.s.o.handover)
		}
		return a.Run(ctx, until)
	}
}
