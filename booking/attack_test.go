package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
)

// Defects found by attacking the booking (each test fails on the code it
// was written against; see the commit that adds it).

// A request whose commit answer is lost in its last read-then-commit round
// (the commit landed; the client library's retry of it fails its
// preconditions, which looks like a lost race) must not answer seat_busy:
// its booking is in Firestore.
func TestLostAnswerInTheLastRoundIsNotSeatBusy(t *testing.T) {
	t.Parallel() // its own project and proxy; judged on what Firestore holds, not on time
	tp := newTapped(t)
	ctx := context.Background()
	other := New(tp.direct)
	defer other.Close()
	// Rounds 1..takeRounds-1: another user books A1 right before this
	// request's commit, and cancels right before its next read, so each
	// round loses a race and the next finds the seat free again. In the
	// last round the commit lands and its answer is lost.
	var mu sync.Mutex
	commits, booked := 0, ""
	wantsA1 := writesSeat("A1")
	tp.setTap(func(method string, req any) {
		mu.Lock()
		defer mu.Unlock()
		c, _ := req.(*pb.CommitRequest)
		switch {
		case method == "Commit" && c != nil && wantsA1(c):
			commits++
			switch {
			case commits < takeRounds:
				b, _, err := other.Book(ctx, "o", Request{UID: "o", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: fmt.Sprint("o", commits)})
				if err != nil {
					t.Error(err)
				}
				booked = b.ID
			case commits == takeRounds:
				tp.loseAnswers(t, 600*time.Millisecond)
			}
		case method == "BatchGetDocuments" && booked != "":
			if _, err := other.Cancel(ctx, "o", booked); err != nil {
				t.Error(err)
			}
			booked = ""
		}
	})
	b, _, err := tp.svc.Book(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"})
	tp.setTap(nil)
	if commits < takeRounds {
		t.Fatalf("only %d commits: the rounds were not lost as planned (%v)", commits, err)
	}
	mine, qerr := tp.direct.Collection(Bookings).Where("uid", "==", "u").Documents(ctx).GetAll()
	if qerr != nil {
		t.Fatal(qerr)
	}
	switch {
	case err != nil && len(mine) > 0:
		t.Fatalf("answered %v, yet the booking %s is in Firestore", err, mine[0].Ref.ID)
	case err == nil && len(mine) == 0:
		t.Fatalf("answered the booking %s, which is not in Firestore", b.ID)
	}
	checkSeats(t, tp.direct)
}

// Cancel, ReleaseHold, ExtendHold and a ConfirmHold that goes through its
// transaction, whose commit lands but whose answer is lost: the client
// library retries the commit, Firestore refuses the finished transaction
// (InvalidArgument "Transaction is invalid or closed"), and the call
// reports that error (HTTP: 500 internal) though its change is stored. It
// must report what landed (or at least an error a caller retries).
func TestTransactionWithALostAnswerReportsWhatLanded(t *testing.T) {
	for _, op := range []string{"cancel", "release", "extend", "confirm"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			tp := newTapped(t)
			ctx := context.Background()
			svc := tp.svc
			b, _, err := svc.Book(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "b"})
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := svc.Hold(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{"A2"}, RequestID: "h"}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			tp.onNextCommit(inTransaction, func() { tp.loseAnswers(t, 600*time.Millisecond) })
			var landed func() bool
			switch op {
			case "cancel":
				_, err = svc.Cancel(ctx, "u", b.ID)
				landed = func() bool { _, d := storedAt(t, tp.direct, Bookings+"/"+b.ID); return d["status"] == StatusCanceled }
			case "release":
				_, err = svc.ReleaseHold(ctx, "u", h.ID)
				landed = func() bool { _, d := storedAt(t, tp.direct, Holds+"/"+h.ID); return d["status"] == StatusReleased }
			case "extend":
				_, err = svc.ExtendHold(ctx, "u", h.ID, 5*time.Minute)
				landed = func() bool {
					_, d := storedAt(t, tp.direct, Holds+"/"+h.ID)
					return d["heldUntil"].(time.Time).After(h.HeldUntil.Add(time.Minute))
				}
			case "confirm":
				svc.Close() // no screening listener: the confirm goes through its transaction
				_, _, err = svc.ConfirmHold(ctx, "u", h.ID)
				landed = func() bool { _, d := storedAt(t, tp.direct, Holds+"/"+h.ID); return d["status"] == StatusOK }
			}
			if tp.proxy.Faults() != 1 {
				t.Fatal("the transaction's commit was not reached")
			}
			if err != nil && landed() {
				t.Fatalf("%s answered %v, yet it landed", op, err)
			}
			checkSeats(t, tp.direct)
		})
	}
}

// A one-commit hold places its end (heldUntil) when it decides, before it
// commits. A commit that lands late (held back by the network here; the
// client library also retries an unanswered commit for up to 60 s) makes a
// hold shorter than asked, down to one that has ended when it is made and
// answered as held. A hold lasts its length from its creation, give or take
// the second TestOneCommitHoldEndsOnTheServersClock allows (or the request
// fails and holds nothing).
func TestHoldCommittedLateLastsItsLength(t *testing.T) {
	tp := newTapped(t)
	ctx := context.Background()
	warm(t, tp.svc)
	var once sync.Once
	tp.svc.hooks.beforeCommit = func(bool) { once.Do(func() { tp.delayRequests(t, 2*time.Second, 2200*time.Millisecond) }) }
	h, _, err := tp.svc.Hold(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "h"}, 5*time.Second)
	if err != nil { // refused: then nothing may hold the seat
		checkSeats(t, tp.direct)
		if s, gerr := tp.direct.Collection(Holds).Doc(holdID("u", "h")).Get(ctx); gerr == nil && s.Data()["status"] == StatusHeld {
			t.Fatalf("answered %v, yet the hold is stored: %v", err, s.Data())
		}
		return
	}
	created, d := storedAt(t, tp.direct, Holds+"/"+h.ID)
	if lasts := d["heldUntil"].(time.Time).Sub(created); lasts < 4*time.Second {
		t.Fatalf("a 5 s hold answered as held until %v lasts %v from its creation", h.HeldUntil, lasts)
	}
}

// The clock keeps its tightest sample, and trusts none older than
// clockMaxAge. A busy instance whose answers take longer than its best one
// did is refused every fresh sample once the best ages out, and loses the
// one-commit path (and places nothing) until drift widens the old sample
// past the new ones: with a 1 ms best sample and 15 ms answers, 4 s out of
// every 34; with 20 ms and 50 ms answers, 75 s out of 105.
func TestServerClockTakesAFreshSampleOnceTheBestOneAgesOut(t *testing.T) {
	var c serverClock
	now := time.Now()
	best := now.Add(-clockMaxAge - time.Second)
	c.observe(best, best, best.Add(time.Millisecond))
	c.observe(now, now.Add(-15*time.Millisecond), now)
	if _, _, ok := c.bounds(); !ok {
		t.Fatal("no bounds of the server's clock with a sample 15 ms wide taken just now")
	}
}

// Requests for screenings that do not exist (any string a client sends)
// each open a snapshot listener, and past maxScreenings they evict the
// listeners of real screenings: a client can switch off an instance's
// one-commit path, and make every request it sends cost a listener's read
// besides its own.
func TestUnknownScreeningsDoNotEvictTheListenerOfARealOne(t *testing.T) {
	_, svc := newScreening(t)
	ctx := context.Background()
	warm(t, svc)
	for i := range maxScreenings {
		_, _, err := svc.Book(ctx, "e", Request{UID: "x", ScreeningID: fmt.Sprint("no-such-", i), Seats: []string{"A1"}, RequestID: "r"})
		if !errors.Is(err, ErrScreeningNotFound) {
			t.Fatalf("screening no-such-%d: %v", i, err)
		}
	}
	fast := false
	svc.hooks.beforeCommit = func(f bool) { fast = f }
	if _, _, err := svc.Book(ctx, "e", Request{UID: "u", ScreeningID: "s1", Seats: []string{"A1"}, RequestID: "r"}); err != nil {
		t.Fatal(err)
	}
	if !fast {
		t.Fatal("after requests for unknown screenings, a booking of free seats of s1 no longer takes one commit: its listener was evicted")
	}
}
