package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/firelock/firelock/report"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
)

// Report is what a surge measured and what the audit found. The JSON has
// the fields issue #22 asks for at the top level.
type Report struct {
	Date     string `json:"date"`
	Machine  string `json:"machine"`
	Go       string `json:"go"`
	Project  string `json:"project"`
	Seed     uint64 `json:"seed"`
	Admitter string `json:"admitter"` // how admitQueue ran
	Config   config `json:"config"`
	Ended    string `json:"ended"` // sold out, everyone left, time limit

	Users int `json:"users"` // people; -bots are counted apart (Bots)
	Seats int `json:"seats"`
	correctness
	report.Fairness
	report.Metering
	AdmitPerMinute int `json:"admitPerMinute"`
	MaxActive      int `json:"maxActive"`

	// Load.
	SellOutSeconds float64   `json:"sellOutSeconds"` // from opensAt to the last seat sold; -1: not sold out
	RunSeconds     float64   `json:"runSeconds"`     // from opensAt to the end
	BurstFrom      float64   `json:"burstFromSeconds"`
	BurstTo        float64   `json:"burstToSeconds"` // the burst: these seconds after opensAt
	Functions      []fnStats `json:"functions"`
	// Probe is the emulator's own commit latency (probe.go): the floor
	// under every function's and the lease's.
	Probe probeStats `json:"probe"`

	// The hottest documents, counted from every Commit's writes.
	HottestDoc             string      `json:"hottestDoc"`
	HottestDocWritesPer10s int         `json:"hottestDocWritesPer10s"`
	HottestByKind          []hotDoc    `json:"hottestByKind"`
	Collections            []collWrite `json:"collections"`

	// Robustness (issue #31): leases their holders lost (the admitter's
	// sale lease, the jobs' run leases: firelock.lock.lease.lost), and
	// confirmations refused as expired though sent with 2 s or more of
	// their hold left; ConfirmHold's p99 in the burst.
	LeaseLosses       int     `json:"leaseLosses"`
	ConfirmExpired    int     `json:"confirmExpired"`
	ConfirmBurstP99ms float64 `json:"confirmBurstP99Ms"`

	// Best available against seat picking (issue #39; best.go).
	Best bestFigures `json:"best"`
	// The priced surge (-pay, issue #37; pay.go): the money audit.
	Pay *payReport `json:"pay,omitempty"`
	// App Check and the bots (-appcheck, -bots; bots.go).
	Bots botFigures `json:"bots"`

	// Cost.
	ReadsPerSeatSold  float64       `json:"readsPerSeatSold"`
	WritesPerSeatSold float64       `json:"writesPerSeatSold"`
	CallsPerSeatSold  float64       `json:"callsPerSeatSold"`
	Cost              cost          `json:"cost"`
	Listeners         listenerReads `json:"listeners"`
	// The wait (issue #51, wait.go): listeners open at the peak, the
	// SaleState polls, and the reads by where they are billed.
	Wait waitFigures `json:"wait"`

	Answers  map[string]int `json:"answers"`  // every function answer, by function, status and code
	Outcomes map[string]int `json:"outcomes"` // how each user's surge ended
	Problems []string       `json:"problems,omitempty"`
	Failures []failure      `json:"failures"`

	// What the audit judged: what Firestore held at the end, what the
	// users were told, and when the surge ended.
	state *report.Sale
	told  clientRecords
	end   time.Time
}

// audit judges what Firestore holds (st) against what the users were told.
func (r *Report) audit(st *report.Sale, told clientRecords, end time.Time) {
	r.state, r.told, r.end = st, told, end
	r.correctness, r.Fairness, r.Metering = auditCorrectness(st, told), st.AuditFairness(), st.AuditMetering(end)
}

// fnStats is one function's load and cost per call, counted on its
// instance's Firestore client.
type fnStats struct {
	Name        string  `json:"name"`
	Calls       int     `json:"calls"`
	BurstCalls  int     `json:"burstCalls"`
	BurstP50ms  float64 `json:"burstP50Ms"`
	BurstP99ms  float64 `json:"burstP99Ms"`
	P50ms       float64 `json:"p50Ms"`
	P99ms       float64 `json:"p99Ms"`
	RPCsPerCall float64 `json:"rpcsPerCall"`
	ReadsPer    float64 `json:"readsPerCall"`
	WritesPer   float64 `json:"writesPerCall"`
	Reads       int     `json:"reads"`
	Writes      int     `json:"writes"`
}

type hotDoc struct {
	Kind          string  `json:"kind"`
	Doc           string  `json:"doc"`
	WritesPer10s  int     `json:"writesPer10s"`      // most in any 10 s
	Writes        int     `json:"writes"`            // in the whole run
	WindowFromSec float64 `json:"windowFromSeconds"` // the busiest window starts this long after opensAt
}

type collWrite struct {
	Collection string `json:"collection"`
	Writes     int    `json:"writes"`
	MostPerSec int    `json:"mostPerSecond"` // most writes in any 1 s
	Docs       int    `json:"docs"`
}

type cost struct {
	ServerReads   int `json:"serverReads"`  // the functions' and the admitter's
	ServerWrites  int `json:"serverWrites"` // every write of every Commit sent (failed commits too)
	ServerRPCs    int `json:"serverRPCs"`
	ListenerReads int `json:"listenerReads"` // documents added or changed under the users' listeners (as Firestore bills them)
	// Resent: documents the emulator sent listeners again unchanged (it
	// resends a query's whole result set on every change); not billed by
	// Firestore, not in the reads.
	ListenerResent  int     `json:"listenerResent"`
	ServerResent    int     `json:"serverResent"`
	FunctionCalls   int     `json:"functionCalls"` // HTTP calls, plus admitQueue runs
	AdmitterRuns    int     `json:"admitterRuns"`  // deliveries of admitQueue to RunScheduledJob
	AdmitterReads   int     `json:"admitterReads"`
	AdmitterWrites  int     `json:"admitterWrites"`
	AdmitterRPCs    int     `json:"admitterRPCs"`
	AdmitterSeconds float64 `json:"admitterSeconds"`
	// AdmitterReadsBy splits AdmitterReads by the method that carried them.
	AdmitterReadsBy map[string]int `json:"admitterReadsBy"`
	AdmitterRPCsBy  map[string]int `json:"admitterRPCsBy"`
}

// listenerReads compares what a waiting user's listeners read (sales/{id}
// and the place) with what an admitted one's read (those and the seat map).
type listenerReads struct {
	WaitingUsers           int     `json:"waitingUsers"`
	WaitingReadsPerUser    float64 `json:"waitingReadsPerUser"`
	WaitingSecondsPerUser  float64 `json:"waitingSecondsPerUser"`
	WaitingReadsPerMinute  float64 `json:"waitingReadsPerMinute"`
	AdmittedUsers          int     `json:"admittedUsers"`
	AdmittedReadsPerUser   float64 `json:"admittedReadsPerUser"`
	AdmittedSecondsPerUser float64 `json:"admittedSecondsPerUser"`
	AdmittedReadsPerMinute float64 `json:"admittedReadsPerMinute"`
	Attributed             int     `json:"attributed"` // the sum over users, against the wire's count
	// CutByRules: seat-map listeners the emulator ended (permission
	// denied) on a change after the pass had ended or turned done.
	CutByRules int `json:"cutByRules"`
	// SeatMapPauses: seat-map listeners closed while the map showed
	// nothing free and SaleState no seat left, as the app's (issue #51);
	// SeatMapResumes: listened to again when a poll showed a seat left.
	SeatMapPauses  int `json:"seatMapPauses"`
	SeatMapResumes int `json:"seatMapResumes"`
}

// waitFigures are the waiting room's load (CONTRACT §14, issue #51).
type waitFigures struct {
	Mode string `json:"mode"` // "poll" (SaleState, as the app) or "listen" (-listen-wait)
	// The users' listeners open at once at the peak (sale, place, seat
	// map), when (seconds after opensAt), and the bound judged.
	PeakListeners       int            `json:"peakListeners"`
	PeakListenersAt     float64        `json:"peakListenersAtSeconds"`
	PeakListenersByKind map[string]int `json:"peakListenersByKind"`
	PeakListenersBound  int            `json:"peakListenersBound"` // maxActive + 2 × admitPerMinute + slack
	// SaleState polls: every call, its 200s, its 304s (If-None-Match
	// matched), and the rest (429s of the front end, errors).
	StateCalls       int `json:"stateCalls"`
	StateOK          int `json:"stateOk"`
	StateNotModified int `json:"stateNotModified"`
	StateOther       int `json:"stateOther"`
	// StateCDNHits: polls the CDN stand-in answered (-cdn); the rest
	// reached the function.
	StateCDNHits int `json:"stateCdnHits"`
	// The SaleState instance's reads of sales/{id} (and of the screening
	// before the first publication); StateCacheHits: calls answered from
	// its cache without a read.
	StateFunctionReads int `json:"stateFunctionReads"`
	StateCacheHits     int `json:"stateCacheHits"`
	// Reads by where they are billed: the SaleState function's, the
	// places' gets, the users' listeners' deliveries, and the other
	// functions' and the admitter's.
	ReadsStateFunction     int `json:"readsStateFunction"`
	ReadsPlaceGets         int `json:"readsPlaceGets"`
	ReadsListenerDelivered int `json:"readsListenerDeliveries"`
	ReadsOtherServer       int `json:"readsOtherServer"`
}

// failure is a check or a goal the run missed. Kind: correctness,
// fairness, metering (hard limits and order: never allowed), or goal
// (timing and hot documents: targets, judged on the emulator).
type failure struct {
	Kind string `json:"kind"`
	What string `json:"what"`
}

func buildReport(cfg config, st *report.Sale, s *sim, us []*user, be *backend, adm *scheduler, pool *listenerPool, tap *commitTap, hot *hotDocs, opensAt, end time.Time) *Report {
	r := &Report{
		Date: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Go: runtime.Version(), Admitter: adm.describe(), Config: cfg, Users: len(us) - cfg.Bots, Seats: len(st.Hall),
		AdmitPerMinute: st.AdmitPerMinute, MaxActive: st.MaxActive, RunSeconds: report.Seconds(end.Sub(opensAt)),
		SellOutSeconds: -1, Answers: s.tally, Outcomes: map[string]int{}, Problems: s.errors,
	}
	r.audit(st, s.records, end)
	if last := st.LastSale(); !last.IsZero() {
		r.SellOutSeconds = report.Seconds(last.Sub(opensAt))
	}

	// Load: the burst is the opening and the later joiners' span.
	burstTo := opensAt.Add(max(cfg.LateSpan, 30*time.Second))
	r.BurstTo = report.Seconds(burstTo.Sub(opensAt))
	byFn := map[string][]call{}
	for _, c := range be.calls.all() {
		byFn[c.fn] = append(byFn[c.fn], c)
	}
	var c cost
	for _, in := range be.instances {
		calls := byFn[in.name]
		n := in.stats.Snapshot()
		c.ServerReads += n.Reads
		c.ServerWrites += n.Writes
		c.ServerRPCs += n.Calls()
		c.ServerResent += n.Resent
		c.FunctionCalls += len(calls)
		if len(calls) == 0 {
			continue
		}
		var all, burst []time.Duration
		for _, call := range calls {
			all = append(all, call.took)
			if !call.at.Before(opensAt) && call.at.Before(burstTo) {
				burst = append(burst, call.took)
			}
		}
		slices.Sort(all)
		slices.Sort(burst)
		per := func(v int) float64 { return math.Round(float64(v)/float64(len(calls))*100) / 100 }
		r.Functions = append(r.Functions, fnStats{Name: in.name, Calls: len(calls), BurstCalls: len(burst),
			BurstP50ms: ms(report.Quantile(burst, 0.5)), BurstP99ms: ms(report.Quantile(burst, 0.99)),
			P50ms: ms(report.Quantile(all, 0.5)), P99ms: ms(report.Quantile(all, 0.99)),
			RPCsPerCall: per(n.Calls()), ReadsPer: per(n.Reads), WritesPer: per(n.Writes), Reads: n.Reads, Writes: n.Writes})
	}
	r.ConfirmExpired = int(s.confirmExpired.Load())
	for _, f := range r.Functions {
		if f.Name == "ConfirmHold" {
			r.ConfirmBurstP99ms = f.BurstP99ms
		}
	}
	an := adm.in.stats.Snapshot()
	// The leases' writes (the tap's) are the admitter's: its lease on the
	// sale, and in job mode the runs' leases.
	leases := int(tap.writes.Load())
	c.AdmitterRuns, c.AdmitterReads, c.AdmitterWrites, c.AdmitterRPCs = int(adm.deliveries.Load()), an.Reads, an.Writes+leases, an.Calls()
	c.AdmitterSeconds = report.Seconds(end.Sub(opensAt.Add(-cfg.EarlySpan)))
	c.AdmitterReadsBy, c.AdmitterRPCsBy = an.ReadsBy, an.RPCs
	c.ServerReads += an.Reads
	c.ServerWrites += an.Writes + leases
	c.ServerRPCs += an.Calls()
	c.FunctionCalls += int(adm.deliveries.Load())
	ln := pool.stats.Snapshot()
	c.ListenerReads, c.ListenerResent = ln.Reads, ln.Resent
	c.ServerResent += an.Resent
	r.Cost = c
	r.Best = bestFiguresOf(cfg, st, s, r, end)
	var bots []string
	for _, u := range us {
		if u.bot {
			bots = append(bots, u.acct.uid)
		}
	}
	r.Bots = botFiguresOf(st, bots)
	if sold := float64(r.SeatsSold); sold > 0 {
		round := func(v float64) float64 { return math.Round(v*100) / 100 }
		r.ReadsPerSeatSold = round(float64(c.ServerReads+c.ListenerReads) / sold)
		r.WritesPerSeatSold = round(float64(c.ServerWrites) / sold)
		r.CallsPerSeatSold = round(float64(c.FunctionCalls) / sold)
	}

	// The hottest documents, of all and of each kind, and each
	// collection's writes.
	writes := hot.snapshot()
	kinds := map[string]hotDoc{}
	colls := map[string]*struct {
		times []time.Time
		docs  int
	}{}
	for _, doc := range slices.Sorted(maps.Keys(writes)) {
		ts := writes[doc]
		n, from := report.MaxInWindow(ts, 10*time.Second)
		h := hotDoc{Kind: kindOf(doc), Doc: doc, WritesPer10s: n, Writes: len(ts), WindowFromSec: report.Seconds(from.Sub(opensAt))}
		if k, ok := kinds[h.Kind]; !ok || n > k.WritesPer10s {
			kinds[h.Kind] = h
		}
		if n > r.HottestDocWritesPer10s {
			r.HottestDoc, r.HottestDocWritesPer10s = doc, n
		}
		cw := colls[collectionOf(doc)]
		if cw == nil {
			cw = &struct {
				times []time.Time
				docs  int
			}{}
			colls[collectionOf(doc)] = cw
		}
		cw.times = append(cw.times, ts...)
		cw.docs++
	}
	r.HottestByKind = slices.SortedFunc(maps.Values(kinds), func(a, b hotDoc) int {
		return cmp.Or(cmp.Compare(b.WritesPer10s, a.WritesPer10s), cmp.Compare(a.Kind, b.Kind))
	})
	for name, cw := range colls {
		slices.SortFunc(cw.times, time.Time.Compare)
		most, _ := report.MaxInWindow(cw.times, time.Second)
		r.Collections = append(r.Collections, collWrite{Collection: name, Writes: len(cw.times), MostPerSec: most, Docs: cw.docs})
	}
	slices.SortFunc(r.Collections, func(a, b collWrite) int { return cmp.Compare(b.Writes, a.Writes) })

	// Listener reads: waiting against admitted.
	var l listenerReads
	var wr, ws, ar, as float64
	for _, u := range us {
		r.Outcomes[u.outcome]++
		l.Attributed += int(u.waitingReads.Load() + u.admittedReads.Load())
		if !u.waitingFrom.IsZero() {
			l.WaitingUsers++
			wr += float64(u.waitingReads.Load())
			until := u.admittedFrom
			if until.IsZero() {
				until = u.goneAt
			}
			ws += until.Sub(u.waitingFrom).Seconds()
		}
		if !u.admittedFrom.IsZero() {
			l.AdmittedUsers++
			ar += float64(u.admittedReads.Load())
			as += u.goneAt.Sub(u.admittedFrom).Seconds()
		}
	}
	round := func(v float64) float64 { return math.Round(v*100) / 100 }
	if l.WaitingUsers > 0 {
		l.WaitingReadsPerUser, l.WaitingSecondsPerUser = round(wr/float64(l.WaitingUsers)), round(ws/float64(l.WaitingUsers))
	}
	if ws > 0 {
		l.WaitingReadsPerMinute = round(wr / ws * 60)
	}
	if l.AdmittedUsers > 0 {
		l.AdmittedReadsPerUser, l.AdmittedSecondsPerUser = round(ar/float64(l.AdmittedUsers)), round(as/float64(l.AdmittedUsers))
	}
	if as > 0 {
		l.AdmittedReadsPerMinute = round(ar / as * 60)
	}
	l.CutByRules = int(s.seatMapCut.Load())
	l.SeatMapPauses, l.SeatMapResumes = int(s.seatMapPauses.Load()), int(s.seatMapResumes.Load())
	r.Listeners = l

	w := waitFigures{Mode: "poll", StateCalls: int(s.states.calls.Load()), StateOK: int(s.states.ok.Load()),
		StateNotModified: int(s.states.notModified.Load()), StateOther: int(s.states.other.Load()), StateCDNHits: int(s.states.edge.Load())}
	if cfg.ListenWait {
		w.Mode = "listen"
	}
	s.gauge.mu.Lock()
	w.PeakListeners, w.PeakListenersByKind = s.gauge.peak, maps.Clone(s.gauge.peakBy)
	if !s.gauge.peakAt.IsZero() {
		w.PeakListenersAt = report.Seconds(s.gauge.peakAt.Sub(opensAt))
	}
	s.gauge.mu.Unlock()
	w.PeakListenersBound = st.MaxActive + 2*st.AdmitPerMinute + cfg.Goals.PeakListenersSlack
	for _, in := range be.instances {
		if in.name == "SaleState" {
			w.StateFunctionReads = in.stats.Snapshot().Reads
		}
	}
	w.StateCacheHits = max(0, len(byFn["SaleState"])-w.StateFunctionReads)
	w.ReadsStateFunction = w.StateFunctionReads
	w.ReadsPlaceGets = ln.ReadsBy["BatchGetDocuments"]
	w.ReadsListenerDelivered = ln.ReadsBy["Listen"]
	w.ReadsOtherServer = c.ServerReads - w.StateFunctionReads
	r.Wait = w
	return r
}

// judge lists every check and goal the run missed.
func (r *Report) judge(g goals) {
	add := func(kind, format string, args ...any) {
		r.Failures = append(r.Failures, failure{kind, fmt.Sprintf(format, args...)})
	}
	if g.SoldOut && r.SeatsSold != r.Seats {
		add("correctness", "%d of %d seats sold (the run ended: %s)", r.SeatsSold, r.Seats, r.Ended)
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.DoubleBooked, "seats double-booked"}, {r.LostHolds, "holds lost"}, {r.LostBookings, "confirmations lost"},
		{r.OverCap, "users past the seat cap"}, {r.WithoutPass, "holds or bookings without a live pass"},
		{r.AdmittedTwice, "admissions beyond the places admitted"},
		{int(r.TicketsCounted) - (r.SeatsSold + r.DoubleBooked), "tickets counted beyond the seats booked (negative: fewer)"},
	} {
		if c.n != 0 {
			add("correctness", "%d %s", c.n, c.what)
		}
	}
	if r.CounterShards < r.CounterShardsNeeded {
		add("correctness", "the tickets-sold counter has %d shards, the sale's rate needs %d", r.CounterShards, r.CounterShardsNeeded)
	}
	if !r.EarlyBeforeLate {
		add("fairness", "early joiners were not all admitted before the first later joiner")
	}
	if r.Skipped > 0 {
		add("fairness", "%d places still wait behind someone admitted", r.Skipped)
	}
	if b := report.SpearmanBound(r.EarlyAdmitted, g.SpearmanSigmas); math.Abs(float64(r.EarlySpearman)) > b {
		add("fairness", "early joiners' ρ(join, admission) = %.3f, beyond ±%.3f", r.EarlySpearman, b)
	}
	if b := report.SpearmanBound(r.EarlyJoiners-r.Unranked, g.SpearmanSigmas); math.Abs(float64(r.EarlyLineSpearman)) > b {
		add("fairness", "early joiners' ρ(join, line) = %.3f, beyond ±%.3f", r.EarlyLineSpearman, b)
	}
	if r.LateInversions > g.LateInversions {
		add("fairness", "%.2f%% of the later joiners' pairs admitted out of join order (goal %.2f%%)", 100*r.LateInversions, 100*g.LateInversions)
	}
	if r.MaxAdmittedPerMinute > r.AdmitPerMinute {
		add("metering", "%d admitted in 60 s, admitPerMinute is %d", r.MaxAdmittedPerMinute, r.AdmitPerMinute)
	}
	if r.MaxLivePasses > r.MaxActive {
		add("metering", "%d passes live at once, maxActive is %d", r.MaxLivePasses, r.MaxActive)
	}
	if r.Admitted == 0 {
		add("metering", "nobody was admitted")
	} else if r.FirstAdmission > g.FirstAdmission.Seconds() {
		add("goal", "first admission %.2f s after opensAt (goal %s)", r.FirstAdmission, g.FirstAdmission)
	}
	if r.RefillMax > g.Refill.Seconds() {
		add("goal", "an ended pass refilled after %.2f s (goal %s)", r.RefillMax, g.Refill)
	}
	// Every kind's hottest document over the goal is flagged (the sale's
	// own state, saleStates/{id}, as much as a seat), not only the hottest
	// of all: one kind over the goal must not hide another.
	for _, h := range r.HottestByKind {
		if h.WritesPer10s > g.HotWritesPer10s {
			add("goal", "%s took %d writes in 10 s (goal %d): the %s", h.Doc, h.WritesPer10s, g.HotWritesPer10s, h.Kind)
		}
	}
	if len(r.Problems) > 0 {
		add("correctness", "%d users met errors (see problems), e.g. %s", len(r.Problems), r.Problems[0])
	}
	// Robustness: the system's own slowness cost a buyer their seats, or
	// a holder its lease.
	if r.ConfirmExpired > 0 {
		add("robustness", "%d confirmations answered hold_expired though sent with %s or more of the hold left", r.ConfirmExpired, confirmEntitled)
	}
	if r.LeaseLosses != 0 {
		add("robustness", "%d leases lost by their holders", r.LeaseLosses)
	}
	if g.ConfirmBurstP99 > 0 && r.ConfirmBurstP99ms > ms(g.ConfirmBurstP99) {
		add("goal", "ConfirmHold's burst p99 %.0f ms (goal %s)", r.ConfirmBurstP99ms, g.ConfirmBurstP99)
	}
	if g.ReadsPerSeat > 0 && r.ReadsPerSeatSold > g.ReadsPerSeat {
		add("goal", "%.0f reads per seat sold (goal %.0f)", r.ReadsPerSeatSold, g.ReadsPerSeat)
	}
	if w := r.Wait; g.PeakListenersSlack >= 0 && w.PeakListeners > w.PeakListenersBound {
		add("goal", "%d listeners open at the peak, %.0f s after opensAt (goal <= maxActive + 2 × admitPerMinute + %d = %d)",
			w.PeakListeners, w.PeakListenersAt, g.PeakListenersSlack, w.PeakListenersBound)
	}
	r.judgeBest(g, add)
	r.judgePay(g, add)
	r.judgeBots(add)
}

// reaction says how soon the shoppers act on what the map shows.
func (c config) reaction() string {
	if c.ReactMax == 0 {
		return "at once"
	}
	return fmt.Sprintf("in %v-%v", c.ReactMin, c.ReactMax)
}

// print writes the report as text.
func (r *Report) print(w io.Writer) {
	p := linesTo(w)
	ok := okOrFail
	p("\nsurge: %d users (%d early, %d later), %d seats, admitPerMinute %d, maxActive %d, passSeconds %d, maxSeatsPerUser %d; shoppers act %s; admitQueue: %s; ended: %s after %.1f s",
		r.Users, r.Config.Early, r.Config.Late, r.Seats, r.AdmitPerMinute, r.MaxActive, r.Config.PassSeconds, r.Config.MaxSeatsPerUser, r.Config.reaction(), r.Admitter, r.Ended, r.RunSeconds)
	p("\ncorrectness  (sold/double-booked/lost holds/over cap/without pass)  %d/%d  %d/%d/%d/%d  %s",
		r.SeatsSold, r.Seats, r.DoubleBooked, r.LostHolds, r.OverCap, r.WithoutPass,
		ok(r.SeatsSold == r.Seats && r.DoubleBooked+r.LostHolds+r.OverCap+r.WithoutPass == 0))
	p("  lost confirmations %d, admissions beyond places admitted %d; tickets-sold counter %d on %d shards (the rate needs %d)",
		r.LostBookings, r.AdmittedTwice, r.TicketsCounted, r.CounterShards, r.CounterShardsNeeded)
	for _, e := range r.correctness.Examples {
		p("  ! %s", e)
	}
	p("\nfairness")
	p("  early joiners admitted before the first later joiner  %-5v  (%d of %d early admitted, %d of %d later)  %s",
		r.EarlyBeforeLate, r.EarlyAdmitted, r.EarlyJoiners, r.LateAdmitted, r.LateJoiners, ok(r.EarlyBeforeLate))
	p("  Spearman ρ, early joiners' join order vs admission order  %+.3f over %d admitted; vs place in line %+.3f over %d (near 0 expected)",
		r.EarlySpearman, r.EarlyAdmitted, r.EarlyLineSpearman, r.EarlyJoiners-r.Unranked)
	p("  later joiners' pairs admitted out of join order  %.2f%% of %d pairs  (goal <= %.2f%%)  %s",
		100*r.LateInversions, r.LatePairs, 100*r.Config.Goals.LateInversions, ok(r.LateInversions <= r.Config.Goals.LateInversions))
	p("  places skipped (still waiting behind an admitted one)  %d", r.Skipped)
	for _, e := range r.Fairness.Examples {
		p("  ! %s", e)
	}
	p("\nmetering")
	p("  most admitted in any 60 s  %d  (admitPerMinute %d)  %s", r.MaxAdmittedPerMinute, r.AdmitPerMinute, ok(r.MaxAdmittedPerMinute <= r.AdmitPerMinute))
	p("  most passes live at once   %d  (maxActive %d)  %s", r.MaxLivePasses, r.MaxActive, ok(r.MaxLivePasses <= r.MaxActive))
	p("  opensAt to the first admission  %.2f s;  a full house's ended pass to the next admission  p50 %.2f s, max %.2f s over %d",
		r.FirstAdmission, r.RefillP50, r.RefillMax, r.Refills)
	p("  %d admitted in all", r.Admitted)
	p("\nrobustness  leases lost %d  %s;  confirmations expired though sent with %s left %d  %s;  ConfirmHold burst p99 %.0f ms",
		r.LeaseLosses, ok(r.LeaseLosses == 0), confirmEntitled, r.ConfirmExpired, ok(r.ConfirmExpired == 0), r.ConfirmBurstP99ms)
	p("\nload  (burst: %.0f-%.0f s after opensAt)   sold out %.1f s after opensAt", r.BurstFrom, r.BurstTo, r.SellOutSeconds)
	p("  %-14s %7s %7s %10s %10s %9s %9s %8s %8s %8s", "function", "calls", "burst", "burst p50", "burst p99", "p50 ms", "p99 ms", "RPCs", "reads", "writes")
	for _, f := range r.Functions {
		p("  %-14s %7d %7d %10.1f %10.1f %9.1f %9.1f %8.2f %8.2f %8.2f", f.Name, f.Calls, f.BurstCalls, f.BurstP50ms, f.BurstP99ms, f.P50ms, f.P99ms, f.RPCsPerCall, f.ReadsPer, f.WritesPer)
	}
	p("  the emulator's own commit (a probe: one write every %v, on a connection of its own)  burst p50 %.0f ms, p99 %.0f ms;  the run's p99 %.0f ms, slowest %.0f ms over %d writes (%d failed)",
		probeEvery, r.Probe.BurstP50ms, r.Probe.BurstP99ms, r.Probe.P99ms, r.Probe.MaxMs, r.Probe.Samples, r.Probe.Failed)
	r.printBest(p)
	r.printPay(p)
	r.printBots(p)
	p("\nhottest documents  (most writes in any 10 s; goal <= %d)", r.Config.Goals.HotWritesPer10s)
	for _, h := range r.HottestByKind {
		p("  %3d  %-42s %s  (%d writes in all)  %s", h.WritesPer10s, h.Kind, h.Doc, h.Writes, ok(h.WritesPer10s <= r.Config.Goals.HotWritesPer10s))
	}
	p("  collections (writes, most in any 1 s, documents):")
	for _, c := range r.Collections {
		p("    %-14s %6d %5d/s %6d", c.Collection, c.Writes, c.MostPerSec, c.Docs)
	}
	p("\ncost  per seat sold: %.1f reads, %.1f writes, %.2f function calls", r.ReadsPerSeatSold, r.WritesPerSeatSold, r.CallsPerSeatSold)
	p("  server %d reads, %d writes, %d RPCs; listeners %d reads; %d function calls (%d admitQueue runs)",
		r.Cost.ServerReads, r.Cost.ServerWrites, r.Cost.ServerRPCs, r.Cost.ListenerReads, r.Cost.FunctionCalls, r.Cost.AdmitterRuns)
	p("  not counted: %d documents the emulator resent unchanged to the users' listeners, %d to the server's (Firestore sends and bills changes only)",
		r.Cost.ListenerResent, r.Cost.ServerResent)
	p("  admitter: %d reads, %d writes, %d RPCs over %.0f s", r.Cost.AdmitterReads, r.Cost.AdmitterWrites, r.Cost.AdmitterRPCs, r.Cost.AdmitterSeconds)
	p("    reads by method: %s;  RPCs: %s", countsLine(r.Cost.AdmitterReadsBy), countsLine(r.Cost.AdmitterRPCsBy))
	l := r.Listeners
	p("  listener reads of a waiting user  %.1f over %.0f s (%.2f a minute); of an admitted one  %.1f over %.0f s (%.2f a minute)",
		l.WaitingReadsPerUser, l.WaitingSecondsPerUser, l.WaitingReadsPerMinute, l.AdmittedReadsPerUser, l.AdmittedSecondsPerUser, l.AdmittedReadsPerMinute)
	p("  seat-map listeners the rules ended after the pass: %d", l.CutByRules)
	p("  seat-map listeners paused while nothing was free and SaleState said no seat left: %d; listened to again: %d", l.SeatMapPauses, l.SeatMapResumes)
	wf := r.Wait
	p("\nwaiting  (%s)  listeners open at the peak  %d  %.0f s after opensAt (%s)  (goal <= %d)  %s",
		wf.Mode, wf.PeakListeners, wf.PeakListenersAt, countsLine(wf.PeakListenersByKind), wf.PeakListenersBound, ok(wf.PeakListeners <= wf.PeakListenersBound))
	p("  SaleState polls %d: %d answered 200, %d 304 (not modified), %d other; %d answered by the CDN stand-in, %d reached the function, which read sales/{id} %d times (%d calls from its cache)",
		wf.StateCalls, wf.StateOK, wf.StateNotModified, wf.StateOther, wf.StateCDNHits, wf.StateCalls-wf.StateCDNHits, wf.StateFunctionReads, wf.StateCacheHits)
	p("  reads by where billed: SaleState function %d, places' gets %d, listeners' deliveries %d, other functions and the admitter %d",
		wf.ReadsStateFunction, wf.ReadsPlaceGets, wf.ReadsListenerDelivered, wf.ReadsOtherServer)
	p("\nusers' outcomes: %s", countsLine(r.Outcomes))
	p("answers: %s", countsLine(r.Answers))
	for _, e := range r.Problems {
		p("  ! %s", e)
	}
	printOutcome(p, r.Failures, "\nPASS: every check and goal met", "\nFAIL:", "  %-11s %s")
}

// linesTo is how a report prints: a line a call.
func linesTo(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// okOrFail marks a check in a report.
func okOrFail(good bool) string {
	if good {
		return "ok"
	}
	return "FAIL"
}

// printOutcome ends a report: pass when nothing failed, else fail and a
// line a failure (its kind and what, as row formats them).
func printOutcome(p func(format string, args ...any), failures []failure, pass, fail, row string) {
	if len(failures) == 0 {
		p(pass)
		return
	}
	p(fail)
	for _, f := range failures {
		p(row, f.Kind, f.What)
	}
}

func countsLine(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// countValue reads a count aggregation's result.
func countValue(v any) (int64, bool) {
	pv, ok := v.(*pb.Value)
	return pv.GetIntegerValue(), ok
}
