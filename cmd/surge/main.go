// Command surge is the surge test of the on-sale waiting room (CONTRACT §7,
// issue #22), on the emulators, in one command:
//
//	go run ./cmd/surge [-early 1000] [-late 1000] [-seats 200] [-json surge-results.json] ...
//
// It starts the Firestore (with firestore.rules) and Auth emulators, signs
// users up in the Auth emulator, serves the real HTTP functions on loopback
// (one instance per function, each on a Firestore client whose RPCs an
// interceptor counts, as deployed functions are separate services), puts a
// screening on sale, and publishes the job admitQueue every minute to
// RunScheduledJob, as Cloud Scheduler does. Users join the queue around the
// opening; while waiting they poll SaleState (CONTRACT §14) as the app
// does, read their place (a get) once, after the draw and when
// admittedThrough reaches it, and listen to it near the front (with
// -listen-wait: listen to sales/{id} and their place, as before issue
// #51); once admitted they listen to the seat map, under the rules. Each
// admitted user holds 1-4 free seats (on a 409, others; with -best, asks
// for 1-4 best available seats; -react-min/-react-max: after a person's
// pause), then confirms, walks away or releases. The run ends when the sale is sold out, everyone has
// left, or the time limit passes.
//
// Then an audit reads every booking, hold, seat and place and checks
// correctness (no seat sold twice, no lost hold, nobody past the seat cap, no
// hold without a live pass), fairness (early joiners drawn at random and all
// admitted before later joiners, later joiners in join order) and metering
// (admitPerMinute, maxActive, how fast the opening and ended passes are
// served), and reports the load, the hottest documents (every Commit's
// writes, counted by the interceptor) and the cost per seat sold. Every knob
// and every goal is a flag. The exit status is 1 when a check or a goal fails.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
)

// config is one surge: its users, hall, sale, behaviour and goals.
type config struct {
	Early     int           `json:"early"`     // users who join before opensAt
	EarlySpan time.Duration `json:"earlySpan"` // they join within this span before opensAt
	Late      int           `json:"late"`      // users who join from opensAt on
	LateSpan  time.Duration `json:"lateSpan"`  // they join within this span after opensAt

	Seats       int `json:"seats"` // the hall
	SeatsPerRow int `json:"seatsPerRow"`

	AdmitPerMinute  int `json:"admitPerMinute"`
	MaxActive       int `json:"maxActive"`
	PassSeconds     int `json:"passSeconds"`
	MaxSeatsPerUser int `json:"maxSeatsPerUser"`

	PickMin     int           `json:"pickMin"` // an admitted user holds PickMin..PickMax free seats
	PickMax     int           `json:"pickMax"`
	HoldTries   int           `json:"holdTries"` // holds tried (409: other seats) before giving up
	HoldSeconds int           `json:"holdSeconds"`
	Confirm     float64       `json:"confirm"` // share of holders who confirm; Walk walk away; the rest release
	Walk        float64       `json:"walk"`
	ThinkMin    time.Duration `json:"thinkMin"` // before confirming, walking away or releasing
	ThinkMax    time.Duration `json:"thinkMax"`
	// ReactMin..ReactMax: how long a shopper takes to act on what the
	// seat map shows (its first drawing, a seat come free, a refusal)
	// before asking HoldSeats, seeing the map as it is then. The default, 0
	// and 0, asks at once, within milliseconds of a seat coming free: a
	// crowd for it no person makes. 0.5-2 s, a person's pace, made fewer
	// refusals and longer shopping, and no fewer reads a seat sold
	// (docs/surge.md, issue #51); the default keeps the runs comparable.
	ReactMin time.Duration `json:"reactMin"`
	ReactMax time.Duration `json:"reactMax"`

	// Pay: the screening is priced and shoppers pay for their holds
	// (issue #37): PayWalk of them walk away from the checkout, PayLate pay
	// after the hold lapsed, and PayDuplicates of the payments are delivered
	// twice.
	Pay           bool    `json:"pay"`
	PayWalk       float64 `json:"payWalk"`
	PayLate       float64 `json:"payLate"`
	PayDuplicates float64 `json:"payDuplicates"`
	// Best: shoppers ask for best available (HoldSeats with count,
	// CONTRACT §11) instead of picking seats off the map (issue #39).
	Best bool `json:"best"`
	// AppCheck is the functions' App Check mode (CONTRACT §12): the
	// people's app sends a token signed by a key made for the run; Bots
	// scripted joiners send none (issue #40).
	AppCheck string `json:"appCheck"`
	Bots     int    `json:"bots"`
	// ListenWait: the waiting people listen to sales/{id} and their place
	// from the join on, as before issue #51; otherwise they poll SaleState
	// as the app does (CONTRACT §14, wait.go).
	ListenWait bool `json:"listenWait"`
	// CDN: a stand-in for Firebase Hosting's CDN answers the polls from
	// the function's last answer for its s-maxage, as deployed.
	CDN bool `json:"cdn"`

	Limit time.Duration `json:"limit"` // the sale runs at most this long after opensAt
	Seed  uint64        `json:"seed"`

	SignupConcurrency int           `json:"-"`
	Conns             int           `json:"-"` // gRPC connections the users' Firestore clients share
	Progress          time.Duration `json:"-"`

	// MaxConns bounds the users' HTTP connections to each function, as
	// its front end would (issue #41).
	MaxConns int `json:"maxConns"`
	// FrontWait is how long a call waits for one of them before the front
	// end answers 429 with Retry-After (0: as long as the call's minute).
	FrontWait time.Duration `json:"frontWait"`
	// MaxInFlight caps each function's requests in flight; past it they
	// are shed with 503 unavailable and Retry-After (0: no cap).
	MaxInFlight int `json:"maxInFlight"`

	Goals goals `json:"goals"`

	out  io.Writer // progress lines
	logw io.Writer // the functions' and the admitter's log
}

// goals are the thresholds a run is judged by besides the hard checks
// (correctness, the rate and maxActive, early before late).
type goals struct {
	HotWritesPer10s int     `json:"hotWritesPer10s"` // most writes to one document in any 10 s
	LateInversions  float64 `json:"lateInversions"`  // later joiners' pairs admitted out of join order
	// SpearmanSigmas bounds |ρ| of the early joiners' join order against
	// their admission order at this many standard errors (1/sqrt(n-1)) of
	// a random order: 4 fails a fair draw about once in 16,000 runs, and a
	// draw in join order (ρ = 1) from 18 admitted early joiners on.
	SpearmanSigmas float64       `json:"spearmanSigmas"`
	FirstAdmission time.Duration `json:"firstAdmission"` // from opensAt
	Refill         time.Duration `json:"refill"`         // from a pass ending to the next admission
	SoldOut        bool          `json:"soldOut"`        // the hall must sell out
	// ConfirmBurstP99: ConfirmHold's p99 in the burst; ReadsPerSeat: reads
	// (server and listeners) per seat sold (issue #31).
	ConfirmBurstP99 time.Duration `json:"confirmBurstP99"`
	ReadsPerSeat    float64       `json:"readsPerSeat"`
	// PeakListeners: the users' listeners open at once, at most
	// maxActive + 2 × admitPerMinute + this (issue #51: the passes, those
	// near the front, and operators); negative: not judged.
	PeakListenersSlack int `json:"peakListenersSlack"`
	// With -best (issue #39): HoldSeats' p99 in the burst, and the share of
	// the hall left as stranded single seats at the end.
	HoldBurstP99  time.Duration `json:"holdBurstP99"`
	StrandedShare float64       `json:"strandedShare"`
	// With -pay (issue #37): StripeWebhook's p99, and Stripe API calls per
	// seat sold (one session a hold, plus an expire per abandoned one).
	WebhookP99         time.Duration `json:"webhookP99"`
	StripeCallsPerSeat float64       `json:"stripeCallsPerSeat"`
}

func defaults() config {
	return config{
		Early: 1000, EarlySpan: 30 * time.Second, Late: 1000, LateSpan: 30 * time.Second, AppCheck: "off", CDN: true,
		Seats: 200, SeatsPerRow: 20,
		AdmitPerMinute: 600, MaxActive: 100, PassSeconds: 30, MaxSeatsPerUser: 4,
		PickMin: 1, PickMax: 4, HoldTries: 8, HoldSeconds: 30, Confirm: 0.7, Walk: 0.2,
		ThinkMin: 2 * time.Second, ThinkMax: 8 * time.Second,
		PayWalk: 0.1, PayLate: 0.03, PayDuplicates: 0.05,
		Limit:             4 * time.Minute,
		SignupConcurrency: 16, Conns: 16, Progress: 3 * time.Second,
		// 128 connections and requests in flight per function: at the
		// defaults, 64 (firelock-local's cap) missed the refill and first
		// admission goals and once lost the lease on this 2-core machine,
		// 128 met every goal (docs/surge.md, issue #41).
		MaxConns: 2 * functions.DefaultMaxInFlight, MaxInFlight: 2 * functions.DefaultMaxInFlight,
		// Cloud Run holds a request that finds no instance free for up
		// to about 10 s, then answers 429 (docs/operating.md).
		FrontWait: 10 * time.Second,
		Goals: goals{HotWritesPer10s: 10, LateInversions: 0.01, SpearmanSigmas: 4,
			FirstAdmission: 2 * time.Second, Refill: 3 * time.Second, SoldOut: true, ConfirmBurstP99: 2 * time.Second, ReadsPerSeat: 100, PeakListenersSlack: 10,
			HoldBurstP99: time.Second, StrandedShare: 0.02, WebhookP99: time.Second, StripeCallsPerSeat: 1.2},
	}
}

func main() {
	// The emulator's own speed is part of what this measures: its JVM
	// compiles as it would anywhere (tests run it lean).
	emulators.FullJIT = true
	cfg := defaults()
	var jsonPath, logPath string
	door := doorDefaults()
	var doorMode bool
	flag.BoolVar(&doorMode, "door", false, "the door's surge instead of the sale's (issue #49): booked tickets arrive at the gates, scanners write under the rules, some gates go offline")
	flag.IntVar(&door.Tickets, "tickets", door.Tickets, "with -door: tickets booked (through BookSeats) and presented")
	flag.IntVar(&door.Gates, "gates", door.Gates, "with -door: gates, one scanner each")
	flag.Float64Var(&door.Rate, "rate", door.Rate, "with -door: arrivals a second over every gate (screenshots included)")
	flag.Float64Var(&door.Screenshots, "screenshots", door.Screenshots, "with -door: share of tickets also presented as a screenshot at another gate")
	flag.DurationVar(&door.ScreenshotWithin, "screenshot-within", door.ScreenshotWithin, "with -door: a screenshot comes at most this long after the ticket")
	flag.IntVar(&door.OfflineGates, "offline-gates", door.OfflineGates, "with -door: gates that lose the network (the last ones)")
	flag.DurationVar(&door.OfflineFor, "offline-for", door.OfflineFor, "with -door: for this long, from a fifth of the arrivals' span")
	flag.IntVar(&door.SeatsPerBooking, "seats-per-booking", door.SeatsPerBooking, "with -door: seats each buyer books")
	flag.StringVar(&door.Online, "door-online", door.Online, "with -door: how online gates scan: "+onlineRules+" (the check-in and its scan in one batch under firestore.rules) or "+onlineCheckIn+" (the function CheckIn, as scan.html does while online)")
	flag.StringVar(&door.Plant, "door-plant", "", "with -door, a negative control: plant a bug the audit must catch ("+plantOverwrite+": gate A writes without the rules' precondition; "+plantDropConflicts+": offline gates drop refused entries)")
	flag.DurationVar(&door.ScanP99, "goal-scan-p99", door.ScanP99, "goal with -door: online gates' scan-to-verdict p99 within this")
	flag.IntVar(&cfg.Early, "early", cfg.Early, "users who join in the span before opensAt")
	flag.DurationVar(&cfg.EarlySpan, "early-span", cfg.EarlySpan, "the early joiners join within this span before opensAt")
	flag.IntVar(&cfg.Late, "late", cfg.Late, "users who join in the span after opensAt")
	flag.DurationVar(&cfg.LateSpan, "late-span", cfg.LateSpan, "the later joiners join within this span after opensAt")
	flag.IntVar(&cfg.Seats, "seats", cfg.Seats, "seats in the hall (a multiple of -seats-per-row)")
	flag.IntVar(&cfg.SeatsPerRow, "seats-per-row", cfg.SeatsPerRow, "seats in a row")
	flag.IntVar(&cfg.AdmitPerMinute, "admit-per-minute", cfg.AdmitPerMinute, "the sale's admitPerMinute")
	flag.IntVar(&cfg.MaxActive, "max-active", cfg.MaxActive, "the sale's maxActive")
	flag.IntVar(&cfg.PassSeconds, "pass-seconds", cfg.PassSeconds, "the sale's passSeconds (30 at least)")
	flag.IntVar(&cfg.MaxSeatsPerUser, "max-seats-per-user", cfg.MaxSeatsPerUser, "the sale's maxSeatsPerUser")
	flag.IntVar(&cfg.PickMin, "pick-min", cfg.PickMin, "an admitted user holds at least this many seats")
	flag.IntVar(&cfg.PickMax, "pick-max", cfg.PickMax, "and at most this many")
	flag.IntVar(&cfg.HoldTries, "hold-tries", cfg.HoldTries, "holds a user tries (after a 409, with other seats) before giving up")
	flag.IntVar(&cfg.HoldSeconds, "hold-seconds", cfg.HoldSeconds, "holdSeconds of each hold")
	flag.Float64Var(&cfg.Confirm, "confirm", cfg.Confirm, "share of holders who confirm")
	flag.Float64Var(&cfg.Walk, "walk", cfg.Walk, "share of holders who walk away (the hold lapses); the rest release")
	flag.DurationVar(&cfg.ThinkMin, "think-min", cfg.ThinkMin, "shortest think time after a hold")
	flag.DurationVar(&cfg.ThinkMax, "think-max", cfg.ThinkMax, "longest think time after a hold")
	flag.DurationVar(&cfg.ReactMin, "react-min", cfg.ReactMin, "shortest time a shopper takes to act on what the seat map shows (its first drawing, a seat come free, a refusal)")
	flag.DurationVar(&cfg.ReactMax, "react-max", cfg.ReactMax, "longest such time (0: at once)")
	flag.BoolVar(&cfg.Best, "best", cfg.Best, "shoppers ask for best available seats (HoldSeats with count, -pick-min..-pick-max together) instead of picking them")
	flag.BoolVar(&cfg.Pay, "pay", cfg.Pay, "the screening is priced: shoppers pay for their holds on the local checkout (stripe-mock, signed webhooks) instead of confirming")
	flag.Float64Var(&cfg.PayWalk, "pay-walk", cfg.PayWalk, "with -pay: share of payers who walk away from the checkout")
	flag.Float64Var(&cfg.PayLate, "pay-late", cfg.PayLate, "with -pay: share of payers who pay after their hold lapsed")
	flag.Float64Var(&cfg.PayDuplicates, "pay-duplicates", cfg.PayDuplicates, "with -pay: share of payments whose event is delivered twice, in parallel")
	flag.DurationVar(&cfg.Goals.WebhookP99, "goal-webhook-p99", cfg.Goals.WebhookP99, "goal with -pay: StripeWebhook's p99 within this")
	flag.Float64Var(&cfg.Goals.StripeCallsPerSeat, "goal-stripe-calls", cfg.Goals.StripeCallsPerSeat, "goal with -pay: Stripe API calls per seat sold")
	flag.StringVar(&cfg.AppCheck, "appcheck", cfg.AppCheck, "the functions' App Check mode: enforce, monitor or off (the people's app sends a token signed by a key made for the run)")
	flag.IntVar(&cfg.Bots, "bots", cfg.Bots, "scripted joiners without App Check tokens, with accounts of their own, joining in the early span (with -appcheck enforce: none may get a place)")
	flag.DurationVar(&cfg.Limit, "limit", cfg.Limit, "stop this long after opensAt if the sale has not sold out (default: 4m for each 200 seats, 2m more with -pay)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the users' random choices (0: from the clock)")
	flag.IntVar(&cfg.SignupConcurrency, "signup-concurrency", cfg.SignupConcurrency, "sign-ups in flight at once")
	flag.IntVar(&cfg.Conns, "conns", cfg.Conns, "gRPC connections the users' listeners share")
	flag.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns, "HTTP connections the users open to each function at most, as its front end would allow; the calls beyond wait for one (each connection costs two open files: both ends are in this process)")
	flag.DurationVar(&cfg.FrontWait, "front-wait", cfg.FrontWait, "how long a call waits for one of -max-conns before the front end answers 429 with Retry-After, which the users try again (0: up to the call's minute)")
	flag.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "requests each function serves at once; past it they answer 503 unavailable with Retry-After (0: no cap)")
	flag.DurationVar(&cfg.Progress, "progress", cfg.Progress, "how often to print a progress line (0: never)")
	flag.IntVar(&cfg.Goals.HotWritesPer10s, "goal-hot-writes", cfg.Goals.HotWritesPer10s, "goal: most writes to one document in any 10 s")
	flag.Float64Var(&cfg.Goals.LateInversions, "goal-late-inversions", cfg.Goals.LateInversions, "goal: share of later joiners' pairs admitted out of join order")
	flag.Float64Var(&cfg.Goals.SpearmanSigmas, "goal-spearman-sigmas", cfg.Goals.SpearmanSigmas, "goal: |ρ| of the early joiners within this many standard errors of 0")
	flag.DurationVar(&cfg.Goals.FirstAdmission, "goal-first-admission", cfg.Goals.FirstAdmission, "goal: first admission within this of opensAt")
	flag.DurationVar(&cfg.Goals.Refill, "goal-refill", cfg.Goals.Refill, "goal: an ended pass refilled within this")
	flag.BoolVar(&cfg.Goals.SoldOut, "goal-sold-out", cfg.Goals.SoldOut, "goal: the hall sells out")
	flag.DurationVar(&cfg.Goals.ConfirmBurstP99, "goal-confirm-p99", cfg.Goals.ConfirmBurstP99, "goal: ConfirmHold's p99 in the burst within this")
	flag.Float64Var(&cfg.Goals.ReadsPerSeat, "goal-reads-per-seat", cfg.Goals.ReadsPerSeat, "goal: reads (server and listeners) per seat sold")
	flag.DurationVar(&cfg.Goals.HoldBurstP99, "goal-hold-p99", cfg.Goals.HoldBurstP99, "goal with -best: HoldSeats' p99 in the burst within this")
	flag.Float64Var(&cfg.Goals.StrandedShare, "goal-stranded", cfg.Goals.StrandedShare, "goal with -best: at most this share of the hall left as stranded single seats at the end")
	flag.BoolVar(&cfg.ListenWait, "listen-wait", cfg.ListenWait, "the waiting people listen to sales/{id} and their place, as before issue #51, instead of polling SaleState as the app does (CONTRACT §14)")
	flag.BoolVar(&cfg.CDN, "cdn", cfg.CDN, "a stand-in for Firebase Hosting's CDN answers the SaleState polls for the function's s-maxage, as deployed (-cdn=false: every poll reaches the function)")
	flag.IntVar(&cfg.Goals.PeakListenersSlack, "goal-peak-listeners", cfg.Goals.PeakListenersSlack, "goal: the users' listeners open at the peak at most maxActive + 2 × admitPerMinute + this (negative: not judged)")
	flag.StringVar(&jsonPath, "json", "surge-results.json", "where to write the JSON report ('-': stdout, '': nowhere)")
	flag.StringVar(&logPath, "log", "surge-functions.log", "where the functions and the admitter log")
	flag.Parse()
	if doorMode {
		door.Seed = cfg.Seed
		os.Exit(mainDoor(door, jsonPath, logPath))
	}
	limitSet := false
	flag.Visit(func(f *flag.Flag) { limitSet = limitSet || f.Name == "limit" })
	if !limitSet && cfg.Seats > 200 {
		// Selling a bigger hall at the same rate takes longer: the
		// default leaves each 200 seats the defaults' 4 minutes.
		cfg.Limit = time.Duration((cfg.Seats+199)/200) * 4 * time.Minute
	}
	if !limitSet && cfg.Pay {
		// A checkout walked away from keeps its seats for the price's
		// payHoldSeconds (60 s here), and the last seats of a priced sale
		// wait for those: 235 s to sell out at 12:24, past 240 s at 14:54.
		cfg.Limit += 2 * time.Minute
	}

	mode, err := functions.ParseAppCheckMode(cfg.AppCheck)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge: -appcheck", err)
		os.Exit(2)
	}
	cfg.AppCheck = mode
	if err := cfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		os.Exit(2)
	}
	if raised, err := ensureDescriptors(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		os.Exit(2)
	} else if raised != "" {
		fmt.Fprintln(os.Stderr, raised)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		os.Exit(2)
	}
	defer logf.Close()
	cfg.out, cfg.logw = os.Stderr, logf

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		os.Exit(2)
	}
	if code := finish(rep, len(rep.Failures) > 0, jsonPath, logPath); code != 0 {
		os.Exit(code)
	}
}

// check refuses configurations the run cannot carry out.
func (c config) check() error {
	switch {
	case c.Early < 0 || c.Late < 0 || c.Early+c.Late == 0:
		return fmt.Errorf("-early and -late: want some users")
	case c.SeatsPerRow < 1 || c.Seats < c.SeatsPerRow || c.Seats%c.SeatsPerRow != 0 || c.Seats/c.SeatsPerRow > 26*27:
		return fmt.Errorf("-seats %d: want a multiple of -seats-per-row %d, at most %d rows", c.Seats, c.SeatsPerRow, 26*27)
	case c.PickMin < 1 || c.PickMax < c.PickMin || c.PickMax > 10:
		return fmt.Errorf("-pick-min %d -pick-max %d: want 1 <= min <= max <= 10", c.PickMin, c.PickMax)
	case c.Confirm < 0 || c.Walk < 0 || c.Confirm+c.Walk > 1:
		return fmt.Errorf("-confirm %v -walk %v: want shares that add up to at most 1", c.Confirm, c.Walk)
	case c.ThinkMin < 0 || c.ThinkMax < c.ThinkMin:
		return fmt.Errorf("-think-min %v -think-max %v: want 0 <= min <= max", c.ThinkMin, c.ThinkMax)
	case c.ReactMin < 0 || c.ReactMax < c.ReactMin:
		return fmt.Errorf("-react-min %v -react-max %v: want 0 <= min <= max", c.ReactMin, c.ReactMax)
	case time.Duration(c.HoldSeconds)*time.Second < c.ThinkMax+2*time.Second:
		return fmt.Errorf("-hold-seconds %d: a hold must outlast -think-max %v by 2 s, or nobody confirms in time", c.HoldSeconds, c.ThinkMax)
	case c.Best && c.PickMax > c.MaxSeatsPerUser:
		return fmt.Errorf("-best -pick-max %d: more than -max-seats-per-user %d is a bad request, not a shopper", c.PickMax, c.MaxSeatsPerUser)
	case c.PayWalk < 0 || c.PayLate < 0 || c.PayWalk+c.PayLate > 1 || c.PayDuplicates < 0 || c.PayDuplicates > 1:
		return fmt.Errorf("-pay-walk %v -pay-late %v -pay-duplicates %v: want shares from 0 to 1, walk and late adding up to at most 1", c.PayWalk, c.PayLate, c.PayDuplicates)
	case c.HoldTries < 1 || c.SignupConcurrency < 1 || c.Conns < 1 || c.MaxConns < 1:
		return fmt.Errorf("-hold-tries, -signup-concurrency, -conns and -max-conns must be positive")
	case c.FrontWait < 0:
		return fmt.Errorf("-front-wait %v: want 0 (no limit) or more", c.FrontWait)
	case c.MaxInFlight < 0:
		return fmt.Errorf("-max-in-flight %d: want 0 (no cap) or more", c.MaxInFlight)
	case c.EarlySpan < time.Second || c.LateSpan < 0 || c.Limit <= 0:
		return fmt.Errorf("-early-span (1 s at least), -late-span and -limit must be positive")
	case c.AppCheck != functions.AppCheckEnforce && c.AppCheck != functions.AppCheckMonitor && c.AppCheck != functions.AppCheckOff:
		return fmt.Errorf("-appcheck %q: want enforce, monitor or off", c.AppCheck)
	case c.Bots < 0:
		return fmt.Errorf("-bots %d: want 0 or more", c.Bots)
	}
	return nil
}

// mainDoor runs the door's surge and answers the exit status.
func mainDoor(cfg doorConfig, jsonPath, logPath string) int {
	if err := cfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		return 2
	}
	logf, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		return 2
	}
	defer logf.Close()
	cfg.out, cfg.logw = os.Stderr, logf
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := runDoor(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge:", err)
		return 2
	}
	return finish(rep, len(rep.Failures) > 0, jsonPath, logPath)
}

// finish prints a surge's report, writes its JSON where -json says (-:
// after the text), and answers the exit status: 1 if a check or goal was
// missed, 2 if the JSON could not be written.
func finish(rep interface{ print(io.Writer) }, failed bool, jsonPath, logPath string) int {
	rep.print(os.Stdout)
	if jsonPath != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if jsonPath == "-" {
			os.Stdout.Write(append(b, '\n'))
		} else if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "surge:", err)
			return 2
		} else {
			fmt.Printf("\nJSON written to %s; the functions' log to %s\n", jsonPath, logPath)
		}
	}
	if failed {
		return 1
	}
	return 0
}
