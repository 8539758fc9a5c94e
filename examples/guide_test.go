package guide_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"example.com/guide"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// guide:test

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) } // the Firestore emulator, once

// An operator force-releases the lease while the report is being counted:
// the report is not written, and the error says so.
func TestALostLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	client := firelocktest.NewClient(t) // a project of its own, closed when t ends
	locker, err := lock.New(client, "locks", lock.WithLeaseDuration(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	err = guide.NightlyReport(context.Background(), client, locker, func(ctx context.Context) (int, error) {
		seen, err := lock.Inspect(ctx, client, "locks/nightly-report")
		if err != nil {
			return 0, err
		}
		if err := lock.ForceRelease(ctx, client, seen, "olive", "stuck"); err != nil {
			return 0, err
		}
		<-ctx.Done() // the keep-alive finds the lease gone
		return 0, ctx.Err()
	})
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("err = %v, want lock.ErrNotHeld", err)
	}
	t.Log(guide.Status(err))
	if _, err := client.Doc("reports/nightly").Get(context.Background()); err == nil {
		t.Fatal("the report was written without the lease")
	}
}

// guide:end

// Instances that run the report at once take turns.
func TestNightlyReportRunsOneAtATime(t *testing.T) {
	t.Parallel()
	client := firelocktest.NewClient(t)
	var inside, most atomic.Int32
	count := func(ctx context.Context) (int, error) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		return 42, nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		locker, err := lock.New(client, "locks") // an instance each
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = guide.NightlyReport(context.Background(), client, locker, count) })
	}
	wg.Wait()
	for _, err := range errs {
		if got := guide.Status(err); got != "written" {
			t.Fatal(got)
		}
	}
	if most.Load() != 1 {
		t.Fatalf("%d instances counted at once", most.Load())
	}
	s, err := client.Doc("reports/nightly").Get(context.Background())
	if err != nil || s.Data()["rows"] != int64(42) {
		t.Fatalf("the report: %v %v", s.Data(), err)
	}
}

// Status tells a held lock, a lost lease and a cancellation apart.
func TestStatusTellsWhatHappened(t *testing.T) {
	t.Parallel()
	client := firelocktest.NewClient(t)
	holder, err := lock.New(client, "locks", lock.WithOwner("the-other-instance"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.TryAcquire(context.Background(), "nightly-report"); err != nil {
		t.Fatal(err)
	}
	locker, err := lock.New(client, "locks")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = guide.NightlyReport(ctx, client, locker, func(context.Context) (int, error) { return 1, nil })
	if got := guide.Status(err); !strings.HasPrefix(got, "held by the-other-instance") {
		t.Fatalf("a held lock: %q", got)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err = guide.NightlyReport(cancelled, client, locker, func(context.Context) (int, error) { return 1, nil })
	if got := guide.Status(err); got != "cancelled by its caller" {
		t.Fatalf("a cancelled call: %q (%v)", got, err)
	}
}

// Two publishes of one tick, and a redelivery: the report is written once,
// and every delivery is acknowledged.
func TestDailyReportRunsOncePerTick(t *testing.T) {
	t.Parallel()
	client := firelocktest.NewClient(t)
	handle := guide.ScheduledJobs(guide.NewRunner(client))
	tick := time.Date(2026, 11, 22, 6, 0, 3, 0, time.UTC)
	for _, id := range []string{"1", "2", "2"} {
		if err := handle(context.Background(), pubsubEvent(t, id, tick)); err != nil {
			t.Fatalf("delivery of message %s: %v, want it acknowledged", id, err)
		}
	}
	bad := pubsubEvent(t, "3", tick)
	bad.SetData(event.ApplicationJSON, []byte(`{"message": {"data": "e30="}}`)) // {}: no job
	if err := handle(context.Background(), bad); err != nil {
		t.Fatalf("a bad message: %v, want it acknowledged (dropped)", err)
	}
	reports, err := client.Collection("daily").Documents(context.Background()).GetAll()
	if err != nil || len(reports) != 1 || reports[0].Ref.ID != "dailyReport@2026-11-22T06:00:00Z" {
		t.Fatalf("%d reports (%v), want one, for the tick of 06:00", len(reports), err)
	}
}

func pubsubEvent(t *testing.T, id string, published time.Time) event.Event {
	t.Helper()
	e := event.New()
	e.SetID(id)
	e.SetSource("//pubsub.googleapis.com/projects/demo-guide/topics/scheduled-jobs")
	e.SetType("google.cloud.pubsub.topic.v1.messagePublished")
	e.SetTime(published)
	data := []byte(`{"job": "dailyReport", "schedule": "0 6 * * *"}`)
	if err := e.SetData(event.ApplicationJSON, map[string]any{
		"message": map[string]any{"data": data, "messageId": id, "publishTime": published},
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCountLikes(t *testing.T) {
	t.Parallel()
	n, err := guide.CountLikes(context.Background(), firelocktest.NewClient(t), 50)
	if err != nil || n != 50 {
		t.Fatalf("%d likes (%v), want 50", n, err)
	}
}

// The fault proxy loses the answers of the report's grant: the call fails
// (it cannot know what happened), and leaves nothing behind: the next
// instance writes the report at once.
func TestLostAnswersLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
	project := firelocktest.ProjectID(t)
	client, opts := firelocktest.NewClientVia(t, p.Addr, project)
	locker, err := lock.New(client, "locks", lock.WithClientOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	if err := p.DropAnswers(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = guide.NightlyReport(ctx, client, locker, func(context.Context) (int, error) { return 1, nil })
	p.Heal()
	if err == nil {
		t.Fatal("the report was written with every answer lost")
	}
	direct := firelocktest.NewClientFor(t, project)
	next, err := lock.New(direct, "locks")
	if err != nil {
		t.Fatal(err)
	}
	err = guide.NightlyReport(context.Background(), direct, next, func(context.Context) (int, error) { return 2, nil })
	if err != nil {
		t.Fatalf("the next instance: %s", guide.Status(err))
	}
	if s, err := direct.Doc("reports/nightly").Get(context.Background()); err != nil || s.Data()["rows"] != int64(2) {
		t.Fatalf("the report: %v %v", s.Data(), err)
	}
}
