package firelock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/ticket"
)

// CONTRACT §13's races on the scanner app's own path: its batched
// check-in, held by firestore.rules, against the server's transactions
// that change the ticket or admit it. Each round starts both at once;
// exactly one may win, whichever it is.

type raceUsers map[string]string

func (u raceUsers) UIDByEmail(_ context.Context, email string) (string, error) {
	if uid, ok := u[email]; ok {
		return uid, nil
	}
	return "", ticket.ErrUserNotFound
}

const raceRounds = 10

// race runs a and b at once, raceRounds times, on a fresh scene each, and
// fails a round where both or neither won.
func race(t *testing.T, scene func() doorScene, a, b func(doorScene) error) {
	t.Helper()
	wins := map[string]int{}
	for round := range raceRounds {
		sc := scene()
		var errA, errB error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; errA = a(sc) })
		wg.Go(func() { <-start; errB = b(sc) })
		close(start)
		wg.Wait()
		if (errA == nil) == (errB == nil) {
			t.Fatalf("round %d: the app's check-in (%v) and the other (%v): want exactly one to win", round, errA, errB)
		}
		if errA == nil {
			wins["app"]++
		} else {
			wins["other"]++
			if !errors.Is(errA, errDenied) {
				t.Fatalf("round %d: the app's check-in lost with %v, want denied", round, errA)
			}
		}
	}
	t.Logf("%d rounds: %v", raceRounds, wins)
}

// raceSetup is a race's project: its admin client, the scanner sam, who
// writes through the rules as the app does, and the tickets' keys.
func raceSetup(t *testing.T) (rulesEnv, user, *ticket.Keys) {
	t.Helper()
	project := firelocktest.ProjectID(t)
	keys, err := ticket.GenerateKeys("races")
	must(t, err)
	return rulesEnv{admin: firelocktest.NewClientFor(t, project)},
		user{t: t, project: project, uid: "sam", claims: map[string]any{"scanner": true}}, keys
}

func TestATransferRacingTheAppsCheckInOneWins(t *testing.T) {
	e, sam, keys := raceSetup(t)
	tickets := ticket.New(e.admin, keys)
	race(t, func() doorScene { return newDoorScene(t, e, doorOptions{door: openDoor(false)}) },
		func(sc doorScene) error { return sam.checkInBatch(sc, move{state: "in", seq: 1}) },
		func(sc doorScene) error {
			_, err := tickets.Transfer(context.Background(), "alice", sc.ticket, "bob@example.com", raceUsers{"bob@example.com": "bob"})
			if err != nil && !errors.Is(err, booking.ErrTicketUsed) {
				t.Errorf("the transfer lost with %v, want ticket_used", err)
			}
			return err
		})
}

func TestACancelRacingTheAppsCheckInOneWins(t *testing.T) {
	e, sam, keys := raceSetup(t)
	bookings := booking.New(e.admin, booking.WithTickets(ticket.New(e.admin, keys)))
	defer bookings.Close()
	ctx := context.Background()
	bookingOf := map[string]string{}
	race(t, func() doorScene {
		sid := uniq("race-cancel")
		_, err := e.admin.Doc("screenings/"+sid).Set(ctx, map[string]any{"title": "x", "startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2, "door": openDoor(false)})
		must(t, err)
		b, _, err := bookings.Book(ctx, "x", booking.Request{UID: "alice", ScreeningID: sid, Seats: []string{"A1"}, RequestID: sid})
		must(t, err)
		bookingOf[sid] = b.ID
		return doorScene{screening: sid, ticket: b.Tickets["A1"]}
	},
		func(sc doorScene) error { return sam.checkInBatch(sc, move{state: "in", seq: 1}) },
		func(sc doorScene) error {
			_, err := bookings.Cancel(ctx, "alice", bookingOf[sc.screening])
			if err != nil && !errors.Is(err, booking.ErrTicketUsed) {
				t.Errorf("the cancel lost with %v, want ticket_used", err)
			}
			return err
		})
}

func TestCheckInRacingTheAppsCheckInOneWins(t *testing.T) {
	e, sam, keys := raceSetup(t)
	svc := door.New(e.admin, keys)
	race(t, func() doorScene { return newDoorScene(t, e, doorOptions{door: openDoor(false)}) },
		func(sc doorScene) error { return sam.checkInBatch(sc, move{state: "in", seq: 1, gate: "B"}) },
		func(sc doorScene) error {
			code, err := keys.Sign(ticket.Payload{TicketID: sc.ticket, ScreeningID: sc.screening, Seat: "A1", Version: 1})
			must(t, err)
			_, err = svc.CheckIn(context.Background(), door.Request{Scanner: "sue", ScreeningID: sc.screening, Gate: "A", Code: code, Nonce: uniq("nonce-race-00000000")})
			if err != nil && door.Code(err) != "already_in" {
				t.Errorf("CheckIn lost with %v, want already_in", err)
			}
			return err
		})
}
