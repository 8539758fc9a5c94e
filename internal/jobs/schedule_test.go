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
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/faultproxy"
	"github.com/firelock/firelock/internal/jobs"
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
		// slot of its own, not the day before's.
		{"tick in the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:05Z", "2026-03-29T01:30:00Z"},
		// 02:30 happens twice on 2026-10-25 (CEST, then CET): one slot.
		{"repeated hour, first 02:30", "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:05Z", "2026-10-25T00:30:00Z"},
		{"repeated hour, second 02:30", "30 2 * * *", "Europe/Berlin", "2026-10-25T01:30:05Z", "2026-10-25T00:30:00Z"},
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
		// 02:30 is skipped on 2026-03-29: its slot is 03:30 CEST; the next is the day after's 02:30.
		{"from a tick in the skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"},
		// 02:30 happens twice on 2026-10-25: one slot, the first; then the day after's (CET).
		{"from a tick in the repeated hour", "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		// The repeated hour's ticks are the first hour's slots again: the next new slot is 03:00 CET.
		{"half-hourly through the repeated hour", "*/30 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z"},
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
	c := emulators.NewFirestore(t)
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
	c := emulators.NewFirestore(t)
	r := jobs.New(c, jobs.Standard(c))
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
	for _, fault := range []string{"reset", "drop"} {
		t.Run(fault, func(t *testing.T) {
			project := emulators.ProjectID(t)
			direct := emulators.NewFirestoreFor(t, project)
			p := faultproxy.Start(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))
			via, opts := emulators.NewFirestoreVia(t, p.Addr, project)
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
