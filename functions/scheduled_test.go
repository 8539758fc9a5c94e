package functions_test

import (
	"context"
	"io"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
)

// The app's scheduled jobs, registered from the app's side (the jobs
// library knows none of them), run through RunScheduledJob as deployed.
func appJobsAPI(t *testing.T) (*functions.API, *firestore.Client) {
	t.Helper()
	fs := firelocktest.NewClient(t)
	api, err := functions.NewAPI(context.Background(), fs, emulators.AuthProject)
	if err != nil {
		t.Fatal(err)
	}
	api.Log = functions.NewLogger(io.Discard)
	return api, fs
}

func TestRollupCountersJob(t *testing.T) {
	api, fs := appJobsAPI(t)
	ctx := context.Background()
	ctr, err := counter.Create(ctx, fs, "tickets-s1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.Increment(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := api.RunScheduledJob(ctx, pubsubEvent(t, "100", `{"job": "rollupCounters"}`, time.Now())); err != nil {
		t.Fatal(err)
	}
	s, _ := fs.Doc("counters/tickets-s1").Get(ctx)
	if s.Data()["total"] != int64(5) {
		t.Fatalf("total %v, want 5", s.Data()["total"])
	}
}

// sweepExpired deletes the app's lease documents whose lease ended long
// ago (locks, seatLocks, the web client's mutexes a day after, job runs a
// week after), judged by Firestore's clock, never a live one.
func TestSweepExpiredDeletesOnlyLongEndedLeases(t *testing.T) {
	api, c := appJobsAPI(t)
	ctx := context.Background()
	now := time.Now()
	lease := func(path string, renewed time.Time, seconds int, extra map[string]any) {
		d := map[string]any{"owner": "x", "acquiredAt": renewed, "renewedAt": renewed, "leaseSeconds": seconds}
		for k, v := range extra {
			d[k] = v
		}
		if _, err := c.Doc(path).Set(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	lease("locks/ancient", now.Add(-72*time.Hour), 30, nil)
	lease("locks/recent", now.Add(-2*time.Hour), 30, nil)   // ended, but not a day ago
	lease("locks/live", now.Add(-3*time.Hour), 3600*4, nil) // renewed long ago, lease still running
	// Renewed before the query's cutoff but with a lease that still runs:
	// only the read-time check keeps it.
	lease("locks/stretched", now.Add(-26*time.Hour), 48*3600, nil)
	lease("seatLocks/s1_A1", now.Add(-48*time.Hour), 10, nil)         // ended two days ago
	lease("mutex_critical_data/m1", now.Add(-30*time.Hour), 300, nil) // client mutex, ended yesterday
	lease("jobRuns/old", now.Add(-8*24*time.Hour), 60, map[string]any{"state": "done"})
	lease("jobRuns/young", now.Add(-3*24*time.Hour), 60, map[string]any{"state": "done"})
	if _, err := c.Doc("jobRuns/old/deliveries/e1").Set(ctx, map[string]any{"outcome": "ran"}); err != nil {
		t.Fatal(err)
	}
	if err := api.RunScheduledJob(ctx, pubsubEvent(t, "200", `{"job": "sweepExpired"}`, time.Now())); err != nil {
		t.Fatal(err)
	}
	exists := func(path string) bool { _, err := c.Doc(path).Get(ctx); return err == nil }
	for path, want := range map[string]bool{
		"locks/ancient": false, "locks/recent": true, "locks/live": true, "locks/stretched": true,
		"seatLocks/s1_A1": false, "mutex_critical_data/m1": false,
		"jobRuns/old": false, "jobRuns/old/deliveries/e1": false, "jobRuns/young": true,
	} {
		if exists(path) != want {
			t.Errorf("%s exists = %v, want %v", path, !want, want)
		}
	}
}
