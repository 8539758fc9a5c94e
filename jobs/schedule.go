package jobs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/adhocore/gronx"
)

// A schedule's ticks are instants: every instant at which the zone's wall
// clock shows a minute that the 5-field cron schedule matches. Where
// daylight saving repeats an hour, its wall times come twice, and each is
// a tick of its own: an every-minute schedule ticks every minute of real
// time through the change, as Cloud Scheduler publishes it. A wall time
// that a change skips has one tick, at the instant the clocks jumped over
// it (never the day before's; the skipped times of an hour share it). So every instant lies in exactly one slot,
// from the latest tick at or before it to the next.
//
// Cloud Scheduler's own documentation leaves runs in a repeated hour open
// ("execution anomalies"); a daily job whose time falls in it runs once
// for each occurrence that Scheduler publishes. Jobs that must run once a
// day should use a zone without daylight saving (UTC), as Google advises.

// dstShift is more than any daylight-saving change moves a wall clock: a
// wall time more than this apart from another is on the same side of it.
const dstShift = 3 * time.Hour

// Slot is the schedule slot of a message published at: the latest tick of
// the standard 5-field cron schedule at or before at, in zone (IANA name;
// "" is UTC). A bad schedule or zone is ErrBadPayload. No RPC.
func Slot(schedule, zone string, at time.Time) (time.Time, error) {
	loc, err := parseSchedule(schedule, zone)
	if err != nil {
		return time.Time{}, err
	}
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("%w: a scheduled message needs its publish time", ErrBadPayload)
	}
	wallAt := wallClock(at, loc)
	var best, bestWall time.Time
	consider := func(w time.Time) {
		for _, i := range instantsOf(w, loc) {
			if !i.After(at) && i.After(best) {
				best, bestWall = i, w
			}
		}
	}
	near := changeNear(loc, at.Add(-2*dstShift), at.Add(dstShift))
	if near { // wall times after wallAt may have come before at (an hour the clocks went back over)
		for w, err := nextTick(schedule, wallAt, false); err == nil && !w.After(wallAt.Add(dstShift)); w, err = nextTick(schedule, w, false) {
			consider(w)
		}
	}
	w, err := prevTick(schedule, wallAt, true)
	for ; err == nil; w, err = prevTick(schedule, w, false) {
		if !best.IsZero() && (!near || w.Before(bestWall.Add(-dstShift))) {
			break // no earlier wall time can be a later instant
		}
		consider(w)
	}
	if best.IsZero() {
		return time.Time{}, fmt.Errorf("%w: schedule %q has no tick before %s", ErrBadPayload, schedule, wallAt.Format(time.DateTime))
	}
	return best, nil
}

// NextSlot is the slot after slot: the first tick of schedule after it. A
// scheduled run's Until (capped by the function's timeout: see Run.Until).
// No RPC.
func NextSlot(schedule, zone string, slot time.Time) (time.Time, error) {
	loc, err := parseSchedule(schedule, zone)
	if err != nil {
		return time.Time{}, err
	}
	wallS := wallClock(slot, loc)
	var best, bestWall time.Time
	consider := func(w time.Time) {
		for _, i := range instantsOf(w, loc) {
			if i.After(slot) && (best.IsZero() || i.Before(best)) {
				best, bestWall = i, w
			}
		}
	}
	near := changeNear(loc, slot.Add(-dstShift), slot.Add(2*dstShift))
	if near { // wall times before wallS may come again after slot
		for w, err := prevTick(schedule, wallS, true); err == nil && !w.Before(wallS.Add(-dstShift)); w, err = prevTick(schedule, w, false) {
			consider(w)
		}
	}
	w, err := nextTick(schedule, wallS, false)
	for ; err == nil; w, err = nextTick(schedule, w, false) {
		if !best.IsZero() && (!near || w.After(bestWall.Add(dstShift))) {
			break
		}
		consider(w)
	}
	if best.IsZero() {
		return time.Time{}, fmt.Errorf("%w: schedule %q has no tick after %s", ErrBadPayload, schedule, wallS.Format(time.DateTime))
	}
	return best, nil
}

// parseSchedule checks a 5-field cron schedule and loads its zone.
func parseSchedule(schedule, zone string) (*time.Location, error) {
	if n := len(strings.Fields(schedule)); n != 5 {
		return nil, fmt.Errorf("%w: schedule %q has %d fields, want the 5 of standard cron (minute hour day-of-month month day-of-week)", ErrBadPayload, schedule, n)
	}
	if !gronx.IsValid(schedule) {
		return nil, fmt.Errorf("%w: schedule %q is not valid cron", ErrBadPayload, schedule)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return nil, fmt.Errorf("%w: time zone %q is not an IANA zone name", ErrBadPayload, zone)
	}
	return loc, nil
}

// wallClock is t's minute on loc's wall clock as a plain (UTC) time, which
// cron fields match directly.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
}

// instantsOf lists, in order, the instants at which loc's wall clock shows
// wall (a plain UTC time): one, two where the clocks went back over it, or,
// for a wall time the clocks skipped, the instant they jumped over it: a
// message Scheduler publishes for that tick comes at or after it.
func instantsOf(wall time.Time, loc *time.Location) []time.Time {
	t := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), 0, 0, loc)
	var out []time.Time
	for _, probe := range []time.Time{t.Add(-dstShift), t, t.Add(dstShift)} {
		_, offset := probe.Zone()
		i := wall.Add(-time.Duration(offset) * time.Second)
		if wallClock(i, loc).Equal(wall) && !slices.ContainsFunc(out, i.Equal) {
			out = append(out, i)
		}
	}
	if len(out) == 0 { // skipped: the gap ends where the later offset starts
		start, _ := t.Add(dstShift).In(loc).ZoneBounds()
		return []time.Time{start.UTC()}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// changeNear says whether loc's offset changes between from and to.
func changeNear(loc *time.Location, from, to time.Time) bool {
	_, end := from.In(loc).ZoneBounds()
	return !end.IsZero() && !end.After(to)
}

// nextTick is gronx.NextTickAfter and prevTick gronx.PrevTickBefore, each
// answer remembered: Slot and NextSlot walk a schedule's wall times one
// tick at a time, hours of them around a daylight-saving change, and gronx
// parses the schedule again (with regular expressions) at every step.
// Neighbouring instants walk the same ticks. The answers depend on their
// arguments alone; only plain UTC wall times (all Slot and NextSlot pass)
// are remembered, and at most tickMemoSize of them, then the memo starts
// over.
func nextTick(schedule string, w time.Time, incl bool) (time.Time, error) {
	return memoTick(schedule, w, true, incl)
}

func prevTick(schedule string, w time.Time, incl bool) (time.Time, error) {
	return memoTick(schedule, w, false, incl)
}

const tickMemoSize = 1 << 15

type tickKey struct {
	schedule   string
	wall       int64 // Unix nanoseconds of a UTC time
	next, incl bool
}

type tickAnswer struct {
	t   time.Time
	err error
}

var tickMemo = struct {
	sync.Mutex
	m map[tickKey]tickAnswer
}{m: map[tickKey]tickAnswer{}}

func memoTick(schedule string, w time.Time, next, incl bool) (time.Time, error) {
	tick := gronx.PrevTickBefore
	if next {
		tick = gronx.NextTickAfter
	}
	if w.Location() != time.UTC {
		return tick(schedule, w, incl)
	}
	k := tickKey{schedule, w.UnixNano(), next, incl}
	tickMemo.Lock()
	a, ok := tickMemo.m[k]
	tickMemo.Unlock()
	if ok {
		return a.t, a.err
	}
	t, err := tick(schedule, w, incl)
	tickMemo.Lock()
	if len(tickMemo.m) >= tickMemoSize {
		clear(tickMemo.m)
	}
	tickMemo.m[k] = tickAnswer{t, err}
	tickMemo.Unlock()
	return t, err
}
