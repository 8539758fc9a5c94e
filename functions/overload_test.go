package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/sale"
)

// overloadCap is the functions server's cap on requests in flight in
// TestAdmitterKeepsItsLeaseWhileTheServerIsPastItsCap (0: none, the
// server before issue #41).
var overloadCap = 16

// The admitter keeps its lease while a crowd drives the functions' server
// past its cap (issue #41). In the ten-times surge the admitter lost its
// lease three times before the sale opened: each time a renewal, sent on
// time, was not answered within the 5.7 s left of its 10-s lease, because
// the Firestore emulator answered every commit late under the crowd (a
// probe writing on a connection of its own, straight to the emulator, took
// 3-14 s too). The renewals share the database with the users' calls, not a
// connection, so what protects them is keeping the crowd's calls out of
// the database's queue: the cap sheds them (503, Retry-After) first.
//
// Here, as in the local run, one process serves JoinQueue and runs the
// admitter on one API, with a 3-s lease (a renewal must be answered within
// about 1.7 s). 4,000 listeners on the sale make each commit cost what it
// costs in a crowd; then 1,500 users call JoinQueue back to back for 8 s.
// With the cap the lease is the same grant at the end and was never
// reported lost; without it (overloadCap = 0) the joins queue in the
// emulator and the renewals come too late (2 runs out of 3 here).
func TestAdmitterKeepsItsLeaseWhileTheServerIsPastItsCap(t *testing.T) {
	if os.Getenv("FIRELOCK_OVERLOAD") == "" {
		// Beside make test's other packages on two cores the emulator is
		// slow enough that the lease was lost even with the cap (CI,
		// 2026-11-26): what it measures is the load it makes itself, so
		// make test runs it alone, as a step of its own after the others.
		t.Skip("runs alone: FIRELOCK_OVERLOAD=1 go test -run TestAdmitterKeeps ./functions/ (a step of make test)")
	}
	const users, load, leaseLength = 1500, 8 * time.Second, 3 * time.Second
	const listeners, listenerConns = 4000, 8
	ctx := context.Background()
	project := firelocktest.ProjectID(t)
	fs := firelocktest.NewClientFor(t, project)
	e := newEnvOn(t, fs)
	e.api.Sales = sale.New(fs, sale.WithLogger(e.api.Log), sale.WithAdmitterLease(leaseLength))
	e.onSale("crowd", time.Now().Add(3*time.Hour), map[string]any{
		"opensAt": time.Now().Add(time.Hour), "admitPerMinute": 600, "maxActive": 100})
	inFlight := functions.NewInFlight(overloadCap)
	mux := http.NewServeMux()
	mux.HandleFunc("/JoinQueue", inFlight.Wrap(e.api, e.api.JoinQueue))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The crowd's ID tokens, signed up 16 at a time.
	toks := make([]string, users)
	var signups sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		signups.Go(func() {
			for i := int(next.Add(1) - 1); i < users; i = int(next.Add(1) - 1) {
				tok, _, err := emulators.SignIn(fmt.Sprintf("crowd%d-%s@example.com", i, t.Name()), "secret-crowd")
				if err != nil {
					t.Error(err)
					return
				}
				toks[i] = tok
			}
		})
	}
	signups.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The crowd listens to the sale as the app does while waiting (the
	// emulator matches every commit against every listener), on a few
	// connections of its own; all listen before the admitter starts, so
	// that what the lease lives through is the crowd's calls.
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	var listening, listened sync.WaitGroup
	defer listening.Wait()
	defer stopListening()
	for range listenerConns {
		lfs := firelocktest.NewClientFor(t, project)
		for range listeners / listenerConns {
			listened.Add(1)
			listening.Go(func() {
				it := lfs.Collection(sale.Sales).Doc("crowd").Snapshots(lctx)
				defer it.Stop()
				for first := true; ; first = false {
					_, err := it.Next()
					if first {
						listened.Done()
					}
					if err != nil {
						return
					}
				}
			})
		}
	}
	listened.Wait()

	// The admitter, as admitQueue runs it, until well after the load.
	adm, err := e.api.Sales.Admitter()
	if err != nil {
		t.Fatal(err)
	}
	actx, stopAdmitter := context.WithCancel(ctx)
	admitted := make(chan error, 1)
	go func() { admitted <- adm.Run(actx, time.Now().Add(time.Minute)) }()
	var stopped sync.Once
	stopRun := func() { stopped.Do(func() { stopAdmitter(); <-admitted }) }
	defer stopRun()
	leaseRef := fs.Collection(sale.Locks).Doc("admit-crowd")
	var before *firestore.DocumentSnapshot
	for deadline := time.Now().Add(10 * time.Second); ; {
		if before, err = leaseRef.Get(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admitter took no lease on the sale: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The crowd: each user joins again as soon as answered, and after a
	// 503 waits its Retry-After, as the app does.
	var answers sync.Map // status -> *atomic.Int64
	count := func(status int) {
		n, _ := answers.LoadOrStore(status, &atomic.Int64{})
		n.(*atomic.Int64).Add(1)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: users}}
	stop := time.Now().Add(load)
	var crowd sync.WaitGroup
	for i := range users {
		crowd.Go(func() {
			body, _ := json.Marshal(map[string]any{"screeningId": "crowd"})
			for time.Now().Before(stop) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/JoinQueue", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+toks[i])
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("user %d: %v (a socket error; want an answer)", i, err)
					return
				}
				resp.Body.Close()
				count(resp.StatusCode)
				if resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(time.Second)
				}
			}
		})
	}
	crowd.Wait()
	after, err := leaseRef.Get(ctx)
	if err != nil {
		t.Fatalf("the lease after the load: %v", err)
	}
	stopRun() // the log is read below
	var summary []string
	answers.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%v: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("cap %d, %d users for %v: answers %s, shed %d", overloadCap, users, load, strings.Join(summary, ", "), inFlight.Shed())

	// Stopping the run ends its lease's context too: that is logged as
	// "context canceled", not as a lease lost.
	for line := range strings.Lines(e.log.String()) {
		if strings.Contains(line, "admitter lost its lease") && !strings.Contains(line, "context canceled") {
			t.Errorf("the admitter lost its lease under the load: %s", line)
		}
	}
	if a, b := before.Data()[lock.FieldAcquiredAt], after.Data()[lock.FieldAcquiredAt]; a != b {
		t.Errorf("the lease was granted again during the load (acquiredAt %v, then %v): it was lost in between", a, b)
	}
	if overloadCap > 0 && inFlight.Shed() == 0 {
		t.Errorf("the crowd never drove the server past its cap of %d", overloadCap)
	}
}
