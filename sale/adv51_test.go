package sale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Attacks on the read cuts of issue #51 (the admitter's kept line, the
// ranking without reads, joins without a first read of the place).

// A later join whose commit lands after its join window (the commit
// overran its deadline: the server got it late) has an order the admitter
// may already have read through. Before issue #51 the heads were queried
// afresh each tick, so such a place sorted first and was admitted at the
// next tick (as an early straggler is: docs/waiting-room.md, Stragglers).
// The run's kept line (r.line) queries each shard only from where it knows
// it, so a place landing behind that point is never seen until the lease
// changes hands, while everyone who joins after it is admitted.
//
// The line is kept busy by a trickle of joiners, as in any sale: each tick
// reads every shard through the bound. Then what the overdue commit would
// have written lands (as TestAStragglingEarlyJoinIsRankedBeforeLaterJoiners
// writes an early one), and the trickle goes on. Red before the kept
// line was checked by a count (heads): the straggler still waited after
// 20 s, and 15 who joined after it landed were admitted.
func TestALaterJoinWhoseCommitLandsLateIsStillAdmittedFirst(t *testing.T) {
	e := newEnv(t, 10, 20, saleOpening(time.Now().Add(-time.Minute), 6000, 500, 60))
	a := e.admitter()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(time.Minute)) }()

	trickle := func(prefix string, n int) {
		for i := range n {
			e.join(fmt.Sprintf("%s%02d", prefix, i))
			time.Sleep(150 * time.Millisecond)
		}
	}
	trickle("a", 12) // about 2 s: the run reads every shard through its bound, tick after tick
	id := QueueID(e.id, "straggler")
	joined := e.serverNow().Add(-3 * time.Second) // its read; its commit lands now, 3 s on
	p := Place{ID: id, UID: "straggler", ScreeningID: e.id, Status: StatusWaiting, JoinedAt: joined, Shard: shardOf(id), Order: lateOrder(joined, id)}
	if _, err := e.fs.Collection(Queue).Doc(id).Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	landed := e.serverNow()
	trickle("b", 20) // 3 s more
	// Everyone who joined has had their window: wait for the line to empty.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		waiting := 0
		for _, q := range e.places() {
			if q.Status == StatusWaiting {
				waiting++
			}
		}
		if waiting == 0 {
			break
		}
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	var s *Place
	all := e.places()
	for i := range all {
		if all[i].ID == id {
			s = &all[i]
		}
	}
	if s == nil {
		t.Fatal("the straggler's place is gone")
	}
	// Those who joined 1 s or more after it landed (a tick and a window
	// later) must not be admitted before it.
	var overtook []string
	for _, q := range all {
		if q.ID == id || q.AdmittedAt == nil || q.JoinedAt.Before(landed.Add(time.Second)) {
			continue
		}
		if s.AdmittedAt == nil || q.AdmittedAt.Before(*s.AdmittedAt) {
			overtook = append(overtook, q.UID)
		}
	}
	t.Logf("the run read its line afresh %d times", strings.Count(e.log.String(), "changed behind what the admitter read"))
	if s.Status != StatusAdmitted || len(overtook) > 0 {
		t.Fatalf("the place whose join landed late (order %s, landed %v) is %s, admitted %v; admitted before it, though they joined a second or more after it landed: %v",
			s.Order, landed, s.Status, s.AdmittedAt, overtook)
	}
}
