package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSlotIsTheLatestTickOnTheZonesWallClock(t *testing.T) {
	for _, tc := range []struct {
		name, schedule, zone, at, want string
	}{
		{"hourly, a few seconds late", "0 * * * *", "", "2026-11-22T10:00:03Z", "2026-11-22T10:00:00Z"},
		{"hourly, at the next tick's edge", "0 * * * *", "UTC", "2026-11-22T10:59:59Z", "2026-11-22T10:00:00Z"},
		{"every 15 minutes", "*/15 * * * *", "UTC", "2026-11-22T10:44:10Z", "2026-11-22T10:30:00Z"},
		// 09:00 in Berlin is 08:00Z in winter (CET) and 07:00Z in summer (CEST).
		{"daily, day before spring DST", "0 9 * * *", "Europe/Berlin", "2026-03-28T08:00:04Z", "2026-03-28T08:00:00Z"},
		{"daily, day of spring DST", "0 9 * * *", "Europe/Berlin", "2026-03-29T07:00:04Z", "2026-03-29T07:00:00Z"},
		{"daily, before the tick it is yesterday's", "0 9 * * *", "Europe/Berlin", "2026-03-29T06:59:00Z", "2026-03-28T08:00:00Z"},
		// 02:30 does not exist in Berlin on 2026-03-29: the tick still has a
		// slot of its own, not the day before's, at the instant the clocks
		// jumped from 02:00 to 03:00 (01:00Z), so a publish at 03:00 finds it.
		{"tick in the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:05Z", "2026-03-29T01:00:00Z"},
		{"just before the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-29T00:59:59Z", "2026-03-28T01:30:00Z"},
		// 02:30 happens twice on 2026-10-25 (CEST, then CET): two instants,
		// two ticks, each its own slot; nothing published in the second is
		// taken for the first, which ran an hour before.
		{"repeated hour, first 02:30", "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:05Z", "2026-10-25T00:30:00Z"},
		{"repeated hour, second 02:30", "30 2 * * *", "Europe/Berlin", "2026-10-25T01:30:05Z", "2026-10-25T01:30:00Z"},
		{"repeated hour, between the two 02:30s", "30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", "2026-10-25T00:30:00Z"},
		// Every minute in London on 2026-10-25: 01:00-01:59 comes twice (BST,
		// then GMT), and a message of the second hour is its own minute
		// (issue #29.7: 01:30:10Z was taken for 00:30Z, which had run).
		{"every minute, the repeated hour's second 01:30", "* * * * *", "Europe/London", "2026-10-25T01:30:10Z", "2026-10-25T01:30:00Z"},
		{"every minute, the repeated hour's first 01:59", "* * * * *", "Europe/London", "2026-10-25T00:59:59Z", "2026-10-25T00:59:00Z"},
		{"New York, weekdays at 06:00", "0 6 * * 1-5", "America/New_York", "2026-11-23T11:00:30Z", "2026-11-23T11:00:00Z"},
		{"New York, on a Sunday it is Friday's", "0 6 * * 1-5", "America/New_York", "2026-11-22T12:00:00Z", "2026-11-20T11:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jobs.Slot(tc.schedule, tc.zone, utc(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(utc(tc.want)) {
				t.Fatalf("Slot(%q, %q, %s) = %s, want %s", tc.schedule, tc.zone, tc.at, got.Format(time.RFC3339), tc.want)
			}
		})
	}
}

// A scheduled run's Until is the next slot: the schedule's next tick after
// its slot on the zone's wall clock, read as Slot reads ticks.
func TestNextSlotIsTheNextTickOnTheZonesWallClock(t *testing.T) {
	for _, tc := range []struct {
		name, schedule, zone, slot, want string
	}{
		{"hourly", "0 * * * *", "", "2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z"},
		{"every 15 minutes", "*/15 * * * *", "UTC", "2026-11-22T10:30:00Z", "2026-11-22T10:45:00Z"},
		{"every minute, across midnight", "* * * * *", "UTC", "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z"},
		// 09:00 in Berlin: 23 hours on to spring's DST day, 25 on to autumn's.
		{"daily, into spring DST", "0 9 * * *", "Europe/Berlin", "2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z"},
		{"daily, into autumn DST", "0 9 * * *", "Europe/Berlin", "2026-10-24T07:00:00Z", "2026-10-25T08:00:00Z"},
		// 02:30 is skipped on 2026-03-29: its slot is 03:00 CEST; the next is the day after's 02:30.
		{"from a tick in the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
		{"into a tick in the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z"},
		// 02:30 happens twice on 2026-10-25: the first is followed by the
		// second, an hour on, and that by the day after's (CET).
		{"from the first tick of a repeated hour", "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"},
		{"from the second tick of a repeated hour", "30 2 * * *", "Europe/Berlin", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z"},
		// Through the repeated hour a half-hourly schedule goes on every 30
		// minutes of real time.
		{"half-hourly through the repeated hour", "*/30 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z"},
		// The run of 00:59Z (01:59 BST) ends at the next minute, 01:00 GMT,
		// not an hour and a minute later at 02:00 GMT (issue #29.7).
		{"every minute, into the repeated hour", "* * * * *", "Europe/London", "2026-10-25T00:59:00Z", "2026-10-25T01:00:00Z"},
		{"every minute, across spring's skipped hour", "* * * * *", "Europe/London", "2026-03-29T00:59:00Z", "2026-03-29T01:00:00Z"},
		{"New York, Friday to Monday", "0 6 * * 1-5", "America/New_York", "2026-11-20T11:00:00Z", "2026-11-23T11:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jobs.NextSlot(tc.schedule, tc.zone, utc(tc.slot))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(utc(tc.want)) {
				t.Fatalf("NextSlot(%q, %q, %s) = %s, want %s", tc.schedule, tc.zone, tc.slot, got.Format(time.RFC3339), tc.want)
			}
			// The next slot is the slot of a message published at its tick.
			if slot, err := jobs.Slot(tc.schedule, tc.zone, got.Add(30*time.Second)); err != nil || !slot.Equal(got) {
				t.Fatalf("Slot of a publish at the next slot = %s, %v", slot.Format(time.RFC3339), err)
			}
		})
	}
	if _, err := jobs.NextSlot("61 * * * *", "", utc("2026-11-22T10:00:00Z")); !errors.Is(err, jobs.ErrBadPayload) {
		t.Errorf("bad schedule: err = %v, want ErrBadPayload", err)
	}
}

func TestBadSchedulesAreBadPayloads(t *testing.T) {
	at := utc("2026-11-22T10:00:00Z")
	for _, tc := range []struct{ schedule, zone string }{
		{"* * *", ""},
		{"0 0 * * * *", ""}, // six fields (seconds or years): not standard cron
		{"61 * * * *", ""},
		{"every hour", ""},
		{"0 * * * *", "Mars/Olympus"},
		{"0 * * * *", "Local"},
	} {
		if _, err := jobs.Slot(tc.schedule, tc.zone, at); !errors.Is(err, jobs.ErrBadPayload) {
			t.Errorf("Slot(%q, %q): err = %v, want ErrBadPayload", tc.schedule, tc.zone, err)
		}
	}
	if _, err := jobs.Slot("0 * * * *", "", time.Time{}); !errors.Is(err, jobs.ErrBadPayload) {
		t.Errorf("no publish time: err = %v, want ErrBadPayload", err)
	}
}

func scheduled(id, job, schedule, zone, published string) jobs.Event {
	return jobs.Event{Source: source, ID: id, PublishTime: utc(published),
		Data: fmt.Appendf(nil, `{"job": %q, "schedule": %q, "timeZone": %q}`, job, schedule, zone)}
}

func slotDoc(t *testing.T, c *firestore.Client, key string) (map[string]any, map[string]int) {
	t.Helper()
	ctx := context.Background()
	run := c.Collection(jobs.Collection).Doc(key)
	s, err := run.Get(ctx)
	if err != nil {
		t.Fatalf("run %s: %v", key, err)
	}
	snaps, err := run.Collection("deliveries").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range snaps {
		out[d.Data()["outcome"].(string)]++
	}
	return s.Data(), out
}

// Cloud Scheduler may publish one tick twice: two messages, two ids, two
// publish times in one slot. The job runs once; the next tick runs again.
func TestDuplicatePublishesOfOneTickRunOnce(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	var runs atomic.Int32
	r := jobs.New(c, map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error { runs.Add(1); return nil }})
	first := scheduled("1001", "work", "0 * * * *", "UTC", "2026-11-22T10:00:03Z")
	dup := scheduled("1002", "work", "0 * * * *", "UTC", "2026-11-22T10:00:41Z")
	if o, err := r.Deliver(ctx, execID(t), first); err != nil || o != jobs.Ran {
		t.Fatalf("first publish: %s %v", o, err)
	}
	if o, err := r.Deliver(ctx, execID(t), dup); err != nil || o != jobs.AlreadyDone {
		t.Fatalf("duplicate publish: %s %v", o, err)
	}
	doc, d := slotDoc(t, c, "work@2026-11-22T10:00:00Z")
	if doc["state"] != jobs.StateDone || d["ran"] != 1 || d["already_done"] != 1 {
		t.Fatalf("slot run %v, deliveries %v", doc, d)
	}
	if slot, _ := doc["slot"].(time.Time); !slot.Equal(utc("2026-11-22T10:00:00Z")) {
		t.Fatalf("slot field %v", doc["slot"])
	}
	next := scheduled("1003", "work", "0 * * * *", "UTC", "2026-11-22T11:00:02Z")
	if o, err := r.Deliver(ctx, execID(t), next); err != nil || o != jobs.Ran || runs.Load() != 2 {
		t.Fatalf("next tick: %s %v, runs %d", o, err, runs.Load())
	}
	// Across a DST change, each day's 09:00 in Berlin is its own slot.
	for i, published := range []string{"2026-03-28T08:00:04Z", "2026-03-28T08:00:50Z", "2026-03-29T07:00:04Z", "2026-03-29T07:01:30Z"} {
		o, err := r.Deliver(ctx, execID(t), scheduled(fmt.Sprint(2000+i), "work", "0 9 * * *", "Europe/Berlin", published))
		want := jobs.Ran
		if i%2 == 1 {
			want = jobs.AlreadyDone
		}
		if err != nil || o != want {
			t.Fatalf("Berlin publish %s: %s %v, want %s", published, o, err, want)
		}
	}
	for _, key := range []string{"work@2026-03-28T08:00:00Z", "work@2026-03-29T07:00:00Z"} {
		if _, d := slotDoc(t, c, key); d["ran"] != 1 || d["already_done"] != 1 {
			t.Fatalf("%s deliveries %v", key, d)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("the body ran %d times, want 4 (two hourly ticks, two days)", runs.Load())
	}
}

func TestBadSchedulePayloadWritesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	r := jobs.New(c, table())
	for name, ev := range map[string]jobs.Event{
		"unparsable schedule": scheduled("1", "rollupCounters", "every hour", "UTC", "2026-11-22T10:00:00Z"),
		"unknown zone":        scheduled("2", "rollupCounters", "0 * * * *", "Atlantis/Capital", "2026-11-22T10:00:00Z"),
		"zone without schedule": {Source: source, ID: "3", PublishTime: utc("2026-11-22T10:00:00Z"),
			Data: []byte(`{"job": "rollupCounters", "timeZone": "UTC"}`)},
	} {
		if _, err := r.Deliver(context.Background(), execID(t), ev); !errors.Is(err, jobs.ErrBadPayload) {
			t.Errorf("%s: err = %v, want ErrBadPayload", name, err)
		}
	}
	if refs, err := c.Collection(jobs.Collection).DocumentRefs(context.Background()).GetAll(); err != nil || len(refs) != 0 {
		t.Fatalf("bad payloads wrote %d job runs (%v)", len(refs), err)
	}
}

// A run that finished but could not be marked done (the network failed
// right after the body, so the release fails too) is not acknowledged, and
// the event is not lost: the next delivery finds it done, or takes it over
// once the lease ends and runs it.
func TestRunNotMarkedDoneIsNotLost(t *testing.T) {
	t.Parallel() // its own projects and proxies; it mostly waits for leases to end
	for _, fault := range []string{"reset", "drop"} {
		t.Run(fault, func(t *testing.T) {
			project := firelocktest.ProjectID(t)
			direct := firelocktest.NewClientFor(t, project)
			p := firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
			via, opts := firelocktest.NewClientVia(t, p.Addr, project)
			var runs atomic.Int32
			body := map[string]jobs.Func{"work": func(context.Context, *jobs.Run) error {
				runs.Add(1)
				if fault == "reset" {
					return p.Reset()
				}
				return p.DropAnswers(100 * time.Millisecond)
			}}
			const lease = 2 * time.Second
			faulty := jobs.New(via, body, jobs.WithLease(lease), jobs.WithLockOptions(lock.WithClientOptions(opts...)))
			ev := event("77", "work")
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			o, err := faulty.Deliver(ctx, execID(t), ev)
			cancel()
			p.Heal()
			if err == nil {
				t.Fatalf("a run that could not be marked done was acknowledged (%s)", o)
			}
			firstErr := err
			healthy := jobs.New(direct, body, jobs.WithLease(lease))
			o, err = healthy.Deliver(context.Background(), execID(t), ev)
			if err != nil || (o != jobs.Ran && o != jobs.AlreadyDone) {
				t.Fatalf("redelivery: %s %v", o, err)
			}
			if runDoc(t, direct, ev)["state"] != jobs.StateDone {
				t.Fatal("the event is not done: lost")
			}
			t.Logf("first delivery: %v; redelivery: %s; body ran %d times", firstErr, o, runs.Load())
		})
	}
}

// Every instant belongs to exactly one slot, in any zone and through both
// of daylight saving's changes: the slot of an instant is a tick at or
// before it, the next slot lies after it, and a tick is its own slot. An
// every-minute schedule has a slot every minute of real time, so no run
// is planned longer than a minute (issue #29.7).
func TestEveryInstantHasExactlyOneSlot(t *testing.T) {
	t.Parallel() // pure computation: beside the tests that wait on leases and faults
	// Each zone's changes of 2026 (Lord Howe moves by half an hour).
	days := map[string][]string{
		"UTC":                 {"2026-03-29T00:00:00Z"},
		"Asia/Kolkata":        {"2026-03-29T00:00:00Z"},
		"Europe/London":       {"2026-03-29T00:00:00Z", "2026-10-25T00:00:00Z"},
		"Europe/Berlin":       {"2026-03-29T00:00:00Z", "2026-10-25T00:00:00Z"},
		"America/New_York":    {"2026-03-08T06:00:00Z", "2026-11-01T05:00:00Z"},
		"Australia/Lord_Howe": {"2026-04-04T14:00:00Z", "2026-10-03T15:00:00Z"},
	}
	schedules := map[string]time.Duration{"* * * * *": time.Minute, "*/5 * * * *": 5 * time.Minute, "7,37 * * * *": 30 * time.Minute, "30 1 * * *": 0, "30 2 * * *": 0, "0 * * * *": 0}
	// Pure computation, and a lot of it under -race (about 2 minutes on
	// one core): each zone's changes are a subtest of their own, run side
	// by side on the machine's cores.
	for zone, days := range days {
		for _, day := range days {
			t.Run(zone+" "+day, func(t *testing.T) {
				t.Parallel()
				eachInstantHasOneSlot(t, zone, utc(day), schedules)
			})
		}
	}
}

// eachInstantHasOneSlot checks the instants of the 6 hours from start in
// zone against each schedule (and its longest gap between slots, 0: any).
func eachInstantHasOneSlot(t *testing.T, zone string, start time.Time, schedules map[string]time.Duration) {
	t.Helper()
	for schedule, gap := range schedules {
		for at := start; at.Before(start.Add(6 * time.Hour)); at = at.Add(13 * time.Minute / 3) {
			slot, err := jobs.Slot(schedule, zone, at)
			if err != nil {
				t.Fatalf("%s %s at %s: %v", schedule, zone, at.Format(time.RFC3339), err)
			}
			next, err := jobs.NextSlot(schedule, zone, slot)
			if err != nil {
				t.Fatal(err)
			}
			if slot.After(at) || !next.After(at) {
				t.Fatalf("%q in %s: %s lies outside its slot [%s, %s)", schedule, zone, at.Format(time.RFC3339), slot.Format(time.RFC3339), next.Format(time.RFC3339))
			}
			if again, _ := jobs.Slot(schedule, zone, next); !again.Equal(next) {
				t.Fatalf("%q in %s: the tick %s is not its own slot (%s)", schedule, zone, next.Format(time.RFC3339), again.Format(time.RFC3339))
			}
			if gap > 0 && next.Sub(slot) > gap {
				t.Fatalf("%q in %s: slot %s is followed only at %s, more than %v on", schedule, zone, slot.Format(time.RFC3339), next.Format(time.RFC3339), gap)
			}
		}
	}
}

// A run is never planned past RunScheduledJob's timeout: a schedule whose
// next tick is far away (a yearly one here; an every-minute one across a
// daylight-saving change used to be an hour away) ends its run within
// MaxSeconds of the delivery, less the reserve for winding down.
func TestRunIsNeverPlannedPastTheFunctionsTimeout(t *testing.T) {
	c := firelocktest.NewClient(t)
	for _, tc := range []struct{ name, data string }{
		{"yearly schedule", `{"job": "work", "schedule": "0 0 1 1 *", "timeZone": "UTC"}`},
		{"seconds at the maximum", `{"job": "work", "seconds": 540}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var until time.Time
			r := jobs.New(c, map[string]jobs.Func{"work": func(_ context.Context, run *jobs.Run) error { until = run.Until(); return nil }})
			start := time.Now()
			ev := jobs.Event{Source: source, ID: tc.name, PublishTime: start, Data: []byte(tc.data)}
			if o, err := r.Deliver(context.Background(), execID(t), ev); err != nil || o != jobs.Ran {
				t.Fatalf("deliver: %s %v", o, err)
			}
			limit := time.Now().Add(jobs.MaxSeconds*time.Second - jobs.RunReserve)
			if until.IsZero() || until.After(limit) {
				t.Fatalf("the run was planned until %s, past %s (the timeout less the reserve)", until.Format(time.RFC3339), limit.Format(time.RFC3339))
			}
			if until.Before(start.Add(jobs.MaxSeconds*time.Second - jobs.RunReserve - time.Minute)) {
				t.Fatalf("the run was planned until %s, far short of the timeout", until.Format(time.RFC3339))
			}
		})
	}
}
