package sale

import (
	"context"
	"testing"
	"time"
)

// A change of state goes out within a second or two even in an idle sale
// (nobody waiting, no pass live: the admitter steps it every idle tick,
// 5 s with the contract's ticks) when it comes within publishEvery of the
// last publication: here a resume right after a pause. The step that sees
// it may not publish yet (publishEvery), and must then look again when it
// may, not an idle tick later.
func TestAStateChangeDeferredByPublishEveryGoesOutSoon(t *testing.T) {
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(time.Hour), 600, 2, 60))
	e.setSale(map[string]any{"opensAt": e.serverNow().Add(-time.Minute)})
	svc := e.prodService()
	a, err := svc.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, time.Now().Add(40*time.Second)) }()
	waitState := func(want string, within time.Duration) Public {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
			snap, err := e.fs.Collection(Sales).Doc(e.id).Get(context.Background())
			if err == nil && snap.Exists() {
				var p Public
				if snap.DataTo(&p) == nil && p.State == want {
					return p
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("sales/%s not %s within %v", e.id, want, within)
			}
		}
	}
	waitState(StateOpen, 15*time.Second)
	time.Sleep(1500 * time.Millisecond) // idle: no publication pending
	e.operate(svc, ActionPause, nil)
	waitState(StatePaused, 3*time.Second)
	resumed := e.operate(svc, ActionResume, nil) // within publishEvery of the pause's publication
	p := waitState(StateOpen, 15*time.Second)
	if lag := p.UpdatedAt.Sub(resumed); lag > 2*time.Second {
		t.Errorf("the resume at %v went out as open %v later, want within 2 s", resumed, lag)
	}
	cancel()
	<-done
}

// A new run of the admitter (admitQueue's next tick, or a lease taken
// over) publishes sales/{id} only when something a reader sees changed,
// or at the heartbeat, as the run before it would have: not once more on
// taking the sale (each update is a read for every listener; at 150,000
// in line, published every 15 s, one more a minute is a quarter more).
func TestANewRunDoesNotRepublishUnchangedNumbers(t *testing.T) {
	e := newEnv(t, 2, 5, saleOpening(time.Now().Add(time.Hour), 600, 2, 60))
	e.setSale(map[string]any{"opensAt": e.serverNow().Add(-time.Minute)})
	if err := e.run(e.admitter(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	first := e.public()
	time.Sleep(1100 * time.Millisecond) // past publishEvery
	if err := e.run(e.admitter(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if again := e.public(); !again.UpdatedAt.Equal(first.UpdatedAt) {
		t.Errorf("the next run published sales/%s again (%v, then %v) with nothing changed: %+v, then %+v", e.id, first.UpdatedAt, again.UpdatedAt, first, again)
	}
}
