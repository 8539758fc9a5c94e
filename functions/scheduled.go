package functions

import (
	"context"
	"errors"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// The app's scheduled jobs (CONTRACT §4), registered here, on the app's
// side: the jobs package runs any table of jobs and knows none of these.
const (
	RollupCounters = "rollupCounters"
	SweepExpired   = "sweepExpired"
)

// swept is what sweepExpired deletes once long ended: lease documents of
// locks a day after their lease ended (the server's locks, the legacy
// seatLocks, the web client's mutexes), and job runs a week after, beyond
// Pub/Sub's longest redelivery, so a late duplicate still finds its event
// done.
var swept = []jobs.Swept{
	{Collection: sale.Locks, After: 24 * time.Hour},
	{Collection: "seatLocks", After: 24 * time.Hour},
	{Collection: "mutex_critical_data", After: 24 * time.Hour},
	jobs.Runs(jobs.Collection),
}

// scheduledJobs is the app's job table: rollupCounters, sweepExpired and
// the waiting room's admitQueue. Each writes conditionally (a rollup on
// the counter's update time, a sweep on each lease's), so a stale run can
// only lose a race, and is idempotent, so a rerun after a lost done mark
// is harmless.
func scheduledJobs(fs *firestore.Client, bookings *booking.Service, payments *payment.Service, admitter *sale.Admitter) map[string]jobs.Func {
	sweep := jobs.Sweep(fs, swept...)
	return map[string]jobs.Func{
		RollupCounters: func(ctx context.Context, _ *jobs.Run) error {
			_, err := counter.RollupAll(ctx, fs)
			return err
		},
		// Ended holds turn expired and leave the seat map (their seats were
		// free from the moment they ended), long-ended leases go; until the
		// run's end (the next tick), every payment.SweepEvery, the payments'
		// sweep ends paying holds that lapsed and makes at Stripe what their
		// records say is due (expired sessions, refunds a request could not
		// make).
		SweepExpired: func(ctx context.Context, run *jobs.Run) error {
			var errs []error
			if _, err := bookings.ExpireHolds(ctx); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, sweep(ctx, run), payments.Sweep(ctx, run.Until()))
			return errors.Join(errs...)
		},
		sale.AdmitJob: admitter.Job(),
	}
}
