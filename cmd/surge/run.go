package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/telemetry"
	"github.com/firelock/firelock/report"
	"github.com/firelock/firelock/sale"
	gonanoid "github.com/matoous/go-nanoid/v2"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// surgeScreening is the screening on sale.
const surgeScreening = "surge"

// grace is how long calls in flight when the surge ends may take to answer
// before they are cut (an answer cut off would leave the audit guessing).
const grace = 30 * time.Second

// run carries out one surge and audits it.
func run(ctx context.Context, cfg config) (*Report, error) {
	sb, err := openSandbox(ctx, "demo-surge-")
	if err != nil {
		return nil, err
	}
	defer sb.close()
	project, admin := sb.project, sb.admin // admin: setup, watching the sale, the audit
	log := functions.NewLogger(&lockedWriter{w: cfg.logw})
	// The run's metrics (CONTRACT §9), read at the end: the leases lost.
	metrics := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics))
	defer mp.Shutdown(context.Background())
	otel.SetMeterProvider(mp) // before the functions make their instruments
	progress := func(format string, args ...any) { fmt.Fprintf(cfg.out, format+"\n", args...) }

	// Every Firestore client of the run dials the emulator itself. The lock
	// package's commit clients (the leases) are made from
	// FIRESTORE_EMULATOR_HOST when the functions' APIs are built, so it
	// names the commit tap meanwhile (see commitTap): nothing is counted
	// twice, and nothing written goes uncounted.
	emulatorHost := os.Getenv("FIRESTORE_EMULATOR_HOST")
	hot := newHotDocs()
	tap, err := startCommitTap(emulatorHost, hot.record)
	if err != nil {
		return nil, err
	}
	defer tap.stop()
	os.Setenv("FIRESTORE_EMULATOR_HOST", tap.addr)
	defer os.Setenv("FIRESTORE_EMULATOR_HOST", emulatorHost)
	var pay *payRun
	if cfg.Pay { // before the functions' APIs are built: they read its environment
		if pay, err = startPayments(ctx); err != nil {
			return nil, err
		}
		defer pay.stop()
	}
	ac, restoreAppCheck, err := startAppCheck(cfg.AppCheck, emulators.AuthProject)
	if err != nil {
		return nil, err
	}
	defer restoreAppCheck()
	be, err := startBackend(ctx, project, emulatorHost, cfg.MaxInFlight, hot, log)
	if err != nil {
		return nil, err
	}
	defer be.close()
	admIn, err := newInstance(ctx, "RunScheduledJob", project, emulatorHost, hot, log)
	if err != nil {
		return nil, err
	}
	pool, err := newListenerPool(ctx, emulatorHost, project, cfg.Conns)
	if err != nil {
		return nil, err
	}
	defer pool.close()

	users := cfg.Early + cfg.Late
	t0 := time.Now()
	progress("surge: signing up %d users in the Auth emulator ...", users)
	accts, err := signUp(ctx, "surge", users, cfg.SignupConcurrency)
	if err != nil {
		return nil, err
	}
	botAccts, err := signUp(ctx, "surge-bot", cfg.Bots, cfg.SignupConcurrency)
	if err != nil {
		return nil, err
	}
	progress("surge: %d users signed up in %.1f s", users, time.Since(t0).Seconds())
	prober := startProbe(admin)
	defer prober.end()

	// The screening on sale, opening once the early joiners' span has passed.
	opensAt := time.Now().Add(cfg.EarlySpan + 2*time.Second).Truncate(time.Millisecond)
	var rows []string
	for r := range cfg.Seats / cfg.SeatsPerRow {
		rows = append(rows, rowLabel(r))
	}
	screening := map[string]any{
		"title": "The Surge", "startsAt": opensAt.Add(2 * time.Hour), "rows": rows, "seatsPerRow": cfg.SeatsPerRow,
		"sale": map[string]any{"opensAt": opensAt, "admitPerMinute": cfg.AdmitPerMinute, "maxActive": cfg.MaxActive,
			"passSeconds": cfg.PassSeconds, "maxSeatsPerUser": cfg.MaxSeatsPerUser},
	}
	if pay != nil {
		screening["price"] = pay.price()
	}
	if _, err := admin.Collection(booking.Screenings).Doc(surgeScreening).Set(ctx, screening); err != nil {
		return nil, err
	}

	admCtx, stopAdmitter := context.WithCancel(ctx)
	defer stopAdmitter()
	adm := startScheduler(admCtx, admIn, project, log)

	seed := seedOrNow(cfg.Seed)
	callCtx, cutCalls := context.WithCancel(ctx)
	defer cutCalls()
	listenCtx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	lb := newFront(cfg.MaxConns, cfg.FrontWait)
	defer lb.close()
	s := &sim{cfg: cfg, screening: surgeScreening, opensAt: opensAt, base: be.url, stop: make(chan struct{}),
		callCtx: callCtx, recorder: newRecorder(), payments: pay, appCheck: ac,
		http: &http.Client{Transport: lb}, gauge: newListenerGauge()}
	if cfg.CDN {
		s.edge = &edgeCache{}
	}
	for _, r := range rows {
		for n := 1; n <= cfg.SeatsPerRow; n++ {
			s.hall = append(s.hall, fmt.Sprintf("%s%d", r, n))
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	us := make([]*user, users)
	for i, a := range accts {
		u := &user{i: i, acct: a, fs: pool.clients[i%len(pool.clients)], rng: rand.New(rand.NewPCG(seed, uint64(i)+2))}
		if i < cfg.Early { // before opensAt, leaving half a second for the join's read
			u.joinAt = opensAt.Add(-cfg.EarlySpan).Add(time.Duration(rng.Int64N(int64(cfg.EarlySpan - 500*time.Millisecond))))
		} else {
			u.joinAt = opensAt.Add(time.Duration(rng.Int64N(int64(cfg.LateSpan) + 1)))
		}
		us[i] = u
	}
	// Bots are scripts: they join in the early span, as soon as the page
	// opens, and then act as people do, without App Check tokens.
	for j, a := range botAccts {
		i := users + j
		u := &user{i: i, bot: true, acct: a, fs: pool.clients[i%len(pool.clients)], rng: rand.New(rand.NewPCG(seed, uint64(i)+2))}
		u.joinAt = opensAt.Add(-cfg.EarlySpan).Add(time.Duration(rng.Int64N(int64(cfg.EarlySpan - 500*time.Millisecond))))
		us = append(us, u)
	}

	// The end: the sale sold out (the admitter publishes it), everyone
	// gone, or the time limit.
	soldOut := make(chan struct{})
	saleLine := &latest[string]{changed: make(chan struct{}, 1)}
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	go func() {
		it := admin.Collection(sale.Sales).Doc(surgeScreening).Snapshots(watchCtx)
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				return
			}
			if !snap.Exists() {
				continue
			}
			st, _ := snap.Data()["state"].(string)
			left, _ := snap.Data()["seatsLeft"].(int64)
			saleLine.set(fmt.Sprintf("%s, %d seats left", st, left))
			if st == sale.StateSoldOut {
				close(soldOut)
				return
			}
		}
	}()
	everyoneGone := make(chan struct{})
	progress("surge: %d users join from %s, the sale opens at %s (in %.0f s); %d seats",
		users, opensAt.Add(-cfg.EarlySpan).Format("15:04:05"), opensAt.Format("15:04:05"), time.Until(opensAt).Seconds(), cfg.Seats)
	s.wg.Add(len(us))
	for _, u := range us {
		go s.run(listenCtx, u)
	}
	go func() { s.wg.Wait(); close(everyoneGone) }()

	var tick <-chan time.Time
	if cfg.Progress > 0 {
		t := time.NewTicker(cfg.Progress)
		defer t.Stop()
		tick = t.C
	}
	limit := time.NewTimer(time.Until(opensAt.Add(cfg.Limit)))
	defer limit.Stop()
	ended := "?"
	lastCalls := 0
wait:
	for {
		select {
		case <-soldOut:
			ended = "sold out"
			break wait
		case <-everyoneGone:
			ended = "everyone left"
			break wait
		case <-limit.C:
			ended = "time limit"
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick:
			calls := len(be.calls.all())
			progress("T%+5.0fs  joined %4d  waiting %4d  admitted %4d  shopping %3d  holds %4d  booked %4d/%d  calls %5d (+%d)  sale: %s",
				time.Since(opensAt).Seconds(), s.joined.Load(), s.waiting.Load(), countAdmitted(ctx, admin),
				s.inShop.Load(), s.holds.Load(), s.seatsBooked.Load(), cfg.Seats, calls, calls-lastCalls, orNone(saleLine.get()))
			lastCalls = calls
		}
	}
	end := time.Now()
	progress("surge: %s at T%+.1fs; letting calls in flight answer ...", ended, end.Sub(opensAt).Seconds())
	close(s.stop)
	select {
	case <-everyoneGone:
	case <-time.After(grace):
		progress("surge: calls still in flight after %s are cut", grace)
		cutCalls()
		<-everyoneGone
	}
	progress("surge: users gone after %.1f s", time.Since(end).Seconds())
	stopListening()
	stopAdmitter()
	adm.stop()
	progress("surge: admitter stopped after %.1f s", time.Since(end).Seconds())

	st, err := report.Read(ctx, admin, surgeScreening)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	progress("surge: state read after %.1f s", time.Since(end).Seconds())
	rep := buildReport(cfg, st, s, us, be, adm, pool, tap, hot, opensAt, end)
	rep.LeaseLosses = int(counted(ctx, metrics, telemetry.LockLeaseLost))
	prober.end()
	rep.Probe = prober.stats(opensAt, opensAt.Add(time.Duration(rep.BurstTo*float64(time.Second))))
	if pay != nil {
		pr := pay.audit(ctx, admin, surgeScreening, rep.SeatsSold)
		rep.Pay = &pr
	}
	rep.Ended = ended
	rep.Project = project
	rep.Seed = seed
	rep.judge(cfg.Goals)
	return rep, nil
}

// sandbox is where a surge runs: the Firestore and Auth emulators and a
// project of its own on them, with an admin client that is not counted.
type sandbox struct {
	emu     *emulators.Running
	project string
	admin   *firestore.Client
}

// openSandbox starts the emulators (or reuses those the environment names)
// and opens a new project, prefix and a random suffix.
func openSandbox(ctx context.Context, prefix string) (*sandbox, error) {
	emu, err := emulators.Start(ctx, emulators.Firestore, emulators.Auth)
	if err != nil {
		return nil, err
	}
	id, err := gonanoid.Generate("abcdefghijklmnopqrstuvwxyz0123456789", 10)
	if err != nil {
		emu.Stop()
		return nil, err
	}
	admin, err := firestore.NewClient(ctx, prefix+id)
	if err != nil {
		emu.Stop()
		return nil, err
	}
	return &sandbox{emu: emu, project: prefix + id, admin: admin}, nil
}

func (sb *sandbox) close() {
	sb.admin.Close()
	sb.emu.Stop()
}

// seedOrNow is the run's seed: the one asked for, or (0) the time.
func seedOrNow(seed uint64) uint64 {
	if seed == 0 {
		return uint64(time.Now().UnixNano())
	}
	return seed
}

// rowLabel is the label of row r: A..Z, then AA..AZ, BA...
func rowLabel(r int) string {
	if r < 26 {
		return string(rune('A' + r))
	}
	return string(rune('A'+r/26-1)) + string(rune('A'+r%26))
}

// countAdmitted counts the places admitted so far (progress only).
func countAdmitted(ctx context.Context, fs *firestore.Client) int64 {
	q := fs.Collection(sale.Queue).Where("screeningId", "==", surgeScreening).Where("status", "in", []string{
		sale.StatusAdmitted, sale.StatusDone, sale.StatusExpired})
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return -1
	}
	n, _ := countValue(res["n"])
	return n
}

func orNone(s string) string {
	if s == "" {
		return "not published yet"
	}
	return s
}

// counted sums the counter name over every attribute set, as the reader
// collects it now.
func counted(ctx context.Context, r *sdkmetric.ManualReader, name string) int64 {
	var rm metricdata.ResourceMetrics
	if err := r.Collect(ctx, &rm); err != nil {
		return -1
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range sum.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}
