// Command firelock-local runs the whole bundle on loopback: the Firestore
// emulator with firestore.rules, the Pub/Sub and Auth emulators (each only
// if its *_EMULATOR_HOST variable does not already name a running one), every
// function on one Functions Framework server (with their metrics at
// /metrics, in the Prometheus text format), the topic scheduled-jobs with
// a push subscription to RunScheduledJob, a demo screening, a demo sale (a
// screening whose waiting room opens two minutes after the start), a demo
// user, and a stand-in for Cloud Scheduler that publishes job messages on an
// interval,
// and the web app (web/: the seat map and the mutex page) on Vite, set up to
// talk to all of these. With -appcheck enforce or monitor (or
// FIRELOCK_APPCHECK so set), it also stands in for App Check: a key set and
// a token endpoint signed with a key made for the run (appcheck.go).
//
//	go run ./cmd/firelock-local [-port 8086] [-web dev|preview|off] [-web-port 5173]
//	    [-schedule '* * * * *'] [-tz UTC] [-appcheck enforce|monitor|off] [-max-in-flight 64]
//	    [-- command args...]
//
// Each HTTP function serves at most -max-in-flight requests at once and
// answers the rest 503 unavailable with Retry-After (docs/operating.md).
// Ctrl-C stops the server, the web app and every emulator it started. Given
// a command, it runs that once everything is up, with FIRELOCK_FUNCTIONS_URL,
// FIRELOCK_WEB_URL, GOOGLE_CLOUD_PROJECT and the emulators' *_EMULATOR_HOST
// variables exported, stops everything when the command ends, and exits with
// the command's code. That is how the browser tests and the web benchmark
// run against the local bundle.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	firebase "firebase.google.com/go/v4"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/claims"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/when"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/ticket"
)

func main() {
	port := flag.Int("port", 8086, "port of the functions server (0: a free one)")
	schedule := flag.String("schedule", "* * * * *", "cron schedule (5 fields) on which the Cloud Scheduler stand-in publishes each job (empty: never)")
	zone := flag.String("tz", "UTC", "IANA time zone of the schedule")
	jobsFlag := flag.String("jobs", "rollupCounters,sweepExpired,admitQueue", "jobs the stand-in publishes, comma-separated")
	origins := flag.String("allow-origins", "", "browser origins the functions allow (CORS), comma-separated; default: the web app's")
	web := flag.String("web", webDev, "serve the web app: dev (Vite dev server), preview (build, then serve the build) or off")
	webPort := flag.Int("web-port", 5173, "port of the web app (0: a free one)")
	logFile := flag.String("log", "", "write the functions' log lines to this file instead of stdout")
	stripeMode := flag.String("stripe", stripeMock, "payments: mock (stripe-mock, a fresh webhook secret and the local checkout page) or env (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_URL as set: Stripe's test mode with `stripe listen`)")
	appCheck := flag.String("appcheck", "", "App Check on the sale's functions (CONTRACT §12): enforce, monitor or off; on, the run signs the tokens itself and the web app fetches them (default: FIRELOCK_APPCHECK, else off)")
	envFile := flag.String("env-file", ".firelock-local.env", "write the run's addresses and the demo user's ID token to this file as shell exports, for other terminals and the README's examples; removed on exit (empty: none)")
	maxInFlight := flag.Int("max-in-flight", functions.DefaultMaxInFlight, "requests each HTTP function serves at once; past it they answer 503 unavailable with Retry-After (0: no cap; a deployed function's cap is its --concurrency, see docs/operating.md)")
	flag.Parse()
	if *maxInFlight < 0 {
		fmt.Fprintf(os.Stderr, "firelock-local: -max-in-flight %d: want 0 (no cap) or more\n", *maxInFlight)
		os.Exit(2)
	}
	functions.LimitInFlight(*maxInFlight)
	if *stripeMode != stripeMock && *stripeMode != stripeEnv {
		fmt.Fprintf(os.Stderr, "firelock-local: -stripe %q: want mock or env\n", *stripeMode)
		os.Exit(2)
	}
	acMode, err := appCheckMode(*appCheck)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firelock-local:", err)
		os.Exit(2)
	}
	if *web != webDev && *web != webPreview && *web != webOff {
		fmt.Fprintf(os.Stderr, "firelock-local: -web %q: want dev, preview or off\n", *web)
		os.Exit(2)
	}
	if *schedule != "" {
		if _, err := jobs.Slot(*schedule, *zone, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "firelock-local: -schedule/-tz:", err)
			os.Exit(2)
		}
	}
	// The functions log to os.Stdout, read when their first request comes.
	stdout := os.Stdout
	if *logFile != "" {
		if err := os.MkdirAll(filepath.Dir(*logFile), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "firelock-local: -log:", err)
			os.Exit(2)
		}
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "firelock-local: -log:", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "firelock-local: the functions log to %s\n", *logFile) // f lives until os.Exit
		os.Stdout = f
	}
	giveBack := takeTerminal()
	code, err := run(config{
		stdout: stdout,
		port:   *port, web: *web, webPort: *webPort, origins: *origins,
		sched: scheduler{*schedule, *zone}, jobs: strings.Split(*jobsFlag, ","), command: flag.Args(),
		envFile: *envFile, stripe: *stripeMode, appCheck: acMode,
	})
	giveBack()
	if err != nil {
		fmt.Fprintln(os.Stderr, "firelock-local:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

type config struct {
	port, webPort int
	web, origins  string
	sched         scheduler
	jobs          []string
	command       []string // run once everything is up, then stop
	stdout        *os.File // the process's own stdout (os.Stdout may be the -log file)
	envFile       string   // the run's exports, for other shells ("": none)
	stripe        string   // stripeMock or stripeEnv
	appCheck      string   // functions.AppCheckEnforce, AppCheckMonitor or AppCheckOff
}

// scheduler is the Cloud Scheduler stand-in's schedule: like Cloud
// Scheduler, it publishes {"job", "schedule", "timeZone"} at each tick.
type scheduler struct{ schedule, zone string }

// next is the time of the next tick after now (zero: never), as the
// functions read ticks (jobs.NextSlot): through daylight saving's changes
// too.
func (s scheduler) next(now time.Time) time.Time {
	if s.schedule == "" {
		return time.Time{}
	}
	t, err := jobs.NextSlot(s.schedule, s.zone, now)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s scheduler) message(job string) []byte {
	b, _ := json.Marshal(jobs.Message{Job: job, Schedule: s.schedule, TimeZone: s.zone})
	return b
}

// run starts everything and blocks until Ctrl-C or SIGTERM (a stop the
// user asked for: 0), or until cfg.command ends (its exit code is
// returned).
func run(cfg config) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	project := emulators.AuthProject // one demo project for Firestore, Pub/Sub and Auth
	os.Setenv("GOOGLE_CLOUD_PROJECT", project)
	sched, jobNames := cfg.sched, cfg.jobs
	port, webPort := cfg.port, cfg.webPort
	var err error
	if port == 0 {
		if port, err = emulators.FreePort(); err != nil {
			return 0, err
		}
	}
	if webPort == 0 && cfg.web != webOff {
		if webPort, err = emulators.FreePort(); err != nil {
			return 0, err
		}
	}
	origins := cfg.origins
	if origins == "" {
		origins = fmt.Sprintf("http://localhost:%d,http://127.0.0.1:%d", webPort, webPort)
	}
	os.Setenv(functions.AllowedOriginsEnv, origins)

	fmt.Println("starting emulators (Firestore with firestore.rules, Pub/Sub, Auth) ...")
	emu, err := emulators.Start(ctx, emulators.Firestore, emulators.PubSub, emulators.Auth)
	if err != nil {
		return 0, err
	}
	defer emu.Stop()
	pay, err := startStripe(ctx, cfg.stripe)
	if err != nil {
		return 0, err
	}
	defer pay.stop()
	// The functions read FIRELOCK_APPCHECK on their first request: set it
	// to the run's mode, also when that is off and the environment says
	// otherwise.
	ac, err := startAppCheck(cfg.appCheck, project, strings.Split(origins, ","))
	if err != nil {
		return 0, err
	}
	defer ac.stop()
	os.Setenv(functions.AppCheckEnv, cfg.appCheck)
	for _, kv := range ac.env() {
		os.Setenv(kv[0], kv[1])
	}

	serveErr := make(chan error, 1)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := serveQuietly(ctx, port, serveErr); err != nil {
		return 0, fmt.Errorf("functions server on %s: %w", base, err)
	}

	keyEnv, err := ticketKeys()
	if err != nil {
		return 0, err
	}
	fs, err := firestore.NewClient(ctx, project)
	if err != nil {
		return 0, err
	}
	defer fs.Close()
	pay.servePage(fs, base)
	if err := seedScreening(ctx, fs); err != nil {
		return 0, err
	}
	opensAt, err := seedSale(ctx, fs)
	if err != nil {
		return 0, err
	}
	token, uid, err := demoAccount(ctx, project, demoOperator)
	if err != nil {
		return 0, err
	}
	scannerToken, _, err := demoAccount(ctx, project, demoScanner)
	if err != nil {
		return 0, err
	}

	ps, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return 0, err
	}
	defer ps.Close()
	runID, err := lock.NewExecutionID()
	if err != nil {
		return 0, err
	}
	runID = strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(runID))[:10]
	if err := Wire(ctx, ps, project, base, runID); err != nil {
		return 0, err
	}
	pub := ps.Publisher(Topic)
	defer pub.Stop()

	if cfg.envFile != "" {
		if err := writeEnvFile(cfg.envFile, emu, project, base, token, append(append(pay.env(), ac.env()...), keyEnv, [2]string{"SCANNER_TOKEN", scannerToken})...); err != nil {
			return 0, err
		}
		defer os.Remove(cfg.envFile)
	}

	var app *webApp
	webExited := make(<-chan error)
	if cfg.web != webOff {
		fmt.Printf("starting the web app (vite %s) ...\n", cfg.web)
		if app, err = startWeb(ctx, cfg.web, webPort, append(webEnv(emu, project, base), ac.webEnv()...)); err != nil {
			return 0, err
		}
		defer app.stop()
		webExited = app.Exited
	}

	commandDone := make(<-chan int)
	if len(cfg.command) > 0 {
		commandDone = runCommand(ctx, cfg.command, cfg.stdout, base, app)
	} else {
		printBanner(cfg.stdout, emu, base, app, project, token, uid, sched, jobNames, opensAt, cfg.envFile, pay, ac)
	}

	for {
		var tick <-chan time.Time
		if next := sched.next(time.Now()); !next.IsZero() {
			tick = time.After(time.Until(next)) // collected when unused (Go 1.23+)
		}
		select {
		case <-ctx.Done():
			fmt.Println("\nstopping ...")
			return 0, nil
		case code := <-commandDone:
			return code, nil
		case err := <-serveErr:
			return 0, fmt.Errorf("functions server stopped: %w", err)
		case err := <-webExited:
			return 0, fmt.Errorf("web app (vite) stopped: %v", err)
		case <-tick:
			for _, j := range jobNames {
				id, err := pub.Publish(ctx, &pubsub.Message{Data: sched.message(strings.TrimSpace(j))}).Get(ctx)
				if err != nil && !errors.Is(err, context.Canceled) {
					fmt.Fprintf(os.Stderr, "scheduler stand-in: publish %s: %v\n", j, err)
					continue
				}
				fmt.Printf("scheduler stand-in: published %s (message %s)\n", j, id)
			}
		}
	}
}

// seedScreening writes the demo screenings: demo (10 rows of 20 seats,
// priced: 12.50 EUR a seat, 15.00 in rows A and B), and matinee (free, the
// same hall), each with a door open now at gates A and B (CONTRACT §13);
// rerunning against a persistent emulator leaves bookings alone.
func seedScreening(ctx context.Context, fs *firestore.Client) error {
	starts := time.Now().Add(24 * time.Hour).Truncate(time.Hour)
	rows := []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}
	door := map[string]any{"opensAt": time.Now().Truncate(time.Second), "gates": []string{"A", "B"}, "reentry": false}
	for id, doc := range map[string]map[string]any{
		"demo": {"title": "Metropolis (demo)", "startsAt": starts, "rows": rows, "seatsPerRow": 20,
			"price": map[string]any{"amount": 1250, "currency": "eur", "rows": map[string]any{"A": 1500, "B": 1500}}, "door": door},
		"matinee": {"title": "The General (free matinee)", "startsAt": starts.Add(-4 * time.Hour), "rows": rows, "seatsPerRow": 20, "door": door},
	} {
		if _, err := fs.Collection(booking.Screenings).Doc(id).Set(ctx, doc); err != nil {
			return fmt.Errorf("seed the demo screening %s: %w", id, err)
		}
	}
	return nil
}

// account is a demo account of the local run, with the custom claim of
// its role.
type account struct{ email, password, claim string }

var (
	// demoOperator is the demo user: an operator of sales (CONTRACT §8).
	demoOperator = account{"demo@example.com", "demo-password", claims.Operator}
	// demoScanner checks tickets in at the door (CONTRACT §13).
	demoScanner = account{"scanner@example.com", "scanner-password", claims.Scanner}
)

// demoAccount signs up a, gives it its role's custom claim and returns a
// fresh ID token, which carries the claim.
func demoAccount(ctx context.Context, project string, a account) (token, uid string, err error) {
	if _, _, err := emulators.SignIn(a.email, a.password); err != nil {
		return "", "", err
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		return "", "", err
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		return "", "", err
	}
	if _, err := claims.Grant(ctx, ac, a.email, a.claim); err != nil {
		return "", "", err
	}
	return emulators.SignIn(a.email, a.password)
}

// ticketKeys makes the run's ticket key (CONTRACT §13), one for the whole
// run, unless FIRELOCK_TICKET_KEY names one already, and sets it for the
// functions of this process; the env file carries it to other processes
// (cmd/firelock, cmd/surge), which sign or verify codes with it.
func ticketKeys() ([2]string, error) {
	if v := os.Getenv(ticket.KeyEnv); v != "" {
		if _, err := ticket.ParseKeys([]byte(v)); err != nil {
			return [2]string{}, fmt.Errorf("%s: %w", ticket.KeyEnv, err)
		}
		return [2]string{ticket.KeyEnv, v}, nil
	}
	keys, err := ticket.GenerateKeys("")
	if err != nil {
		return [2]string{}, err
	}
	b, err := json.Marshal(keys.Secret())
	if err != nil {
		return [2]string{}, err
	}
	os.Setenv(ticket.KeyEnv, string(b))
	return [2]string{ticket.KeyEnv, string(b)}, nil
}

// DemoSale is the screening of the demo sale.
const DemoSale = "onsale"

// seedSale writes the demo sale: a small hall whose waiting room opens two
// minutes from now, one pass at a time, so two browser windows show the
// whole flow (both join, one is admitted, books, and the other gets in).
// It returns the opening.
func seedSale(ctx context.Context, fs *firestore.Client) (time.Time, error) {
	opensAt := time.Now().Add(2 * time.Minute).Truncate(time.Second)
	_, err := fs.Collection(booking.Screenings).Doc(DemoSale).Set(ctx, map[string]any{
		"title": "Nosferatu (demo sale)", "startsAt": time.Now().Add(24 * time.Hour).Truncate(time.Hour),
		"rows": []string{"A", "B", "C", "D", "E"}, "seatsPerRow": 8,
		"price": map[string]any{"amount": 900, "currency": "eur"},
		"sale":  map[string]any{"opensAt": opensAt, "admitPerMinute": 10, "maxActive": 1, "passSeconds": 180, "maxSeatsPerUser": 4},
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("seed the demo sale: %w", err)
	}
	return opensAt, nil
}

// writeEnvFile writes the run's addresses as shell exports, so that another
// terminal (and the README's examples) reach this run after
// `. ./.firelock-local.env`: URL (the functions), ID_TOKEN (the demo user's),
// the emulator hosts and the project, which the Firebase SDKs, gcloud and
// cmd/firelock read. It refuses to replace the file of another run that is
// still alive.
func writeEnvFile(path string, emu *emulators.Running, project, base, token string, more ...[2]string) error {
	if b, err := os.ReadFile(path); err == nil {
		var pid int
		if _, err := fmt.Sscanf(string(b), "# firelock-local pid %d", &pid); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("%s belongs to another firelock-local (pid %d) that is still running: stop it, or give this one -env-file", path, pid)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# firelock-local pid %d: written when it started, removed when it stops\n", os.Getpid())
	for _, kv := range [][2]string{
		{"URL", base},
		{"ID_TOKEN", token},
		{"FIRESTORE_EMULATOR_HOST", emu.Host(emulators.Firestore)},
		{"PUBSUB_EMULATOR_HOST", emu.Host(emulators.PubSub)},
		{"FIREBASE_AUTH_EMULATOR_HOST", emu.Host(emulators.Auth)},
		{"GOOGLE_CLOUD_PROJECT", project},
	} {
		fmt.Fprintf(&b, "export %s='%s'\n", kv[0], kv[1])
	}
	for _, kv := range more {
		fmt.Fprintf(&b, "export %s='%s'\n", kv[0], kv[1])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("-env-file: %w", err)
	}
	return nil
}

// functionURLs lists where every function answers on the local server.
func functionURLs(base string) string {
	var urls []string
	for _, fn := range append(slices.Clone(functions.HTTPFunctions), "RunScheduledJob") {
		urls = append(urls, base+"/"+fn)
	}
	return strings.Join(urls, "\n                      ")
}

// runCommand runs argv with the run's addresses exported; the channel gets
// its exit code.
func runCommand(ctx context.Context, argv []string, stdout *os.File, functionsURL string, app *webApp) <-chan int {
	done := make(chan int, 1)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, os.Stderr
	cmd.Env = append(os.Environ(), "FIRELOCK_FUNCTIONS_URL="+functionsURL)
	if app != nil {
		cmd.Env = append(cmd.Env, "FIRELOCK_WEB_URL="+app.URL)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	go func() {
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			done <- 0
		case errors.As(err, &exit) && exit.ExitCode() >= 0:
			done <- exit.ExitCode()
		default:
			fmt.Fprintf(os.Stderr, "firelock-local: %s: %v\n", argv[0], err)
			done <- 1
		}
	}()
	return done
}

func printBanner(out *os.File, emu *emulators.Running, base string, app *webApp, project, token, uid string, sched scheduler, jobNames []string, opensAt time.Time, envFile string, pay *stripeRun, ac *appCheckRun) {
	envName := envFile
	if envName == "" {
		envName = ".firelock-local.env   (not written: -env-file is empty)"
	}
	webLine, saleLine, consoleLine := "off (-web off)", "screening "+DemoSale, "off (-web off); make bin/firelock && bin/firelock sale status "+DemoSale
	if app != nil {
		webLine = app.URL + "/?screening=demo   (mutex page: " + app.URL + "/critical.html?id=demo)"
		saleLine = app.URL + "/?screening=" + DemoSale
		consoleLine = app.URL + "/operate.html?screening=" + DemoSale + "   (sign in as the demo user: an operator)"
	}
	saleLine += fmt.Sprintf("   (opens %s; one pass at a time)", when.Clock(opensAt.Local()))
	returnURL := "http://127.0.0.1:5173/?screening=demo"
	if app != nil {
		returnURL = app.URL + "/?screening=demo"
	}
	started := func(k emulators.Kind) string {
		if emu.Started(k) {
			return "started here"
		}
		return "already running"
	}
	fmt.Fprintf(out, `
firelock is running on loopback (project %s)

  web app             %s
  demo sale           %s
  sale console        %s
  Firestore emulator  %s  (%s; rules: firestore.rules)
  Pub/Sub emulator    %s  (%s; topic %s, push to RunScheduledJob)
  Auth emulator       %s  (%s)
  functions           %s
  metrics             %s%s   (Prometheus text format, CONTRACT §9)
  scheduler stand-in  %s on %q (%s)
%s%s
Demo user demo@example.com, password demo-password (uid %s), an operator of sales; its ID token (valid 1h):

  export ID_TOKEN=%s

In another terminal, in this directory, this sets URL, ID_TOKEN, the emulator hosts
and the project for the commands below, the README's examples and cmd/firelock:

  . ./%s

Book two seats of the free matinee:

  curl -sS --fail-with-body -X POST "$URL/BookSeats" -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"screeningId": "matinee", "seats": ["F12", "F13"], "requestId": "try-1"}'

The demo screening is priced: hold seats, then pay for the hold (CheckoutHold
answers a checkoutUrl: open it, and press Pay):

  curl -sS --fail-with-body -X POST "$URL/HoldSeats" -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' -d '{"screeningId": "demo", "seats": ["C7"], "requestId": "try-2"}'
  curl -sS --fail-with-body -X POST "$URL/CheckoutHold" -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' -d '{"holdId": "<holdId>", "returnUrl": "%s"}'

Cancel it with the bookingId it returns:

  curl -sS --fail-with-body -X POST "$URL/CancelBooking" -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' -d '{"bookingId": "<bookingId>"}'

Join the demo sale's waiting room (admitQueue admits at the opening):

  curl -sS --fail-with-body -X POST "$URL/JoinQueue" -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' -d '{"screeningId": "%s"}'

The door (CONTRACT §13): every booked seat is a ticket (tickets/{id}, its code in
"code"), and the demo and matinee doors are open at gates A and B. The demo scanner,
%s, password %s (the claim scanner: true; the env file's SCANNER_TOKEN
is its ID token), checks a code in:

  curl -sS --fail-with-body -X POST "$URL/CheckIn" -H "Authorization: Bearer $SCANNER_TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"screeningId": "matinee", "gate": "A", "code": "FLT1...", "nonce": "a-fresh-nonce-0001"}'

The public keys of the codes: $URL/TicketKeys

Press Ctrl-C to stop everything.
`, project, webLine, saleLine, consoleLine,
		emu.Host(emulators.Firestore), started(emulators.Firestore),
		emu.Host(emulators.PubSub), started(emulators.PubSub), Topic,
		emu.Host(emulators.Auth), started(emulators.Auth),
		functionURLs(base),
		base, MetricsPath,
		strings.Join(jobNames, ", "), sched.schedule, sched.zone, pay.banner(), ac.banner(),
		uid, token, envName, returnURL, DemoSale, demoScanner.email, demoScanner.password)
}
