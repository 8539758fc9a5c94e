// Command firelock-local runs the whole bundle on loopback: the Firestore
// emulator with firestore.rules, the Pub/Sub and Auth emulators (each only
// if its *_EMULATOR_HOST variable does not already name a running one), every
// function on one Functions Framework server, the topic scheduled-jobs with
// a push subscription to RunScheduledJob, a demo screening, a demo user, and
// a stand-in for Cloud Scheduler that publishes job messages on an interval.
//
//	go run ./cmd/firelock-local [-port 8086] [-schedule '* * * * *'] [-tz UTC]
//
// Ctrl-C stops the server and every emulator it started.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	"github.com/adhocore/gronx"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/jobs"
	"github.com/firelock/firelock/internal/localrun"
	"github.com/firelock/firelock/lock"
)

func main() {
	port := flag.Int("port", 8086, "port of the functions server (0: a free one)")
	schedule := flag.String("schedule", "* * * * *", "cron schedule (5 fields) on which the Cloud Scheduler stand-in publishes each job (empty: never)")
	zone := flag.String("tz", "UTC", "IANA time zone of the schedule")
	jobsFlag := flag.String("jobs", "rollupCounters,sweepExpired", "jobs the stand-in publishes, comma-separated")
	origins := flag.String("allow-origins", "http://localhost:5173,http://127.0.0.1:5173", "browser origins the functions allow (CORS): the web app's dev server by default")
	flag.Parse()
	os.Setenv(functions.AllowedOriginsEnv, *origins)
	if *schedule != "" {
		if _, err := jobs.Slot(*schedule, *zone, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "firelock-local: -schedule/-tz:", err)
			os.Exit(2)
		}
	}
	if err := run(*port, scheduler{*schedule, *zone}, strings.Split(*jobsFlag, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "firelock-local:", err)
		os.Exit(1)
	}
}

// scheduler is the Cloud Scheduler stand-in's schedule: like Cloud
// Scheduler, it publishes {"job", "schedule", "timeZone"} at each tick.
type scheduler struct{ schedule, zone string }

// next is the time of the next tick after now (zero: never).
func (s scheduler) next(now time.Time) time.Time {
	if s.schedule == "" {
		return time.Time{}
	}
	loc, _ := time.LoadLocation(s.zone)
	t, err := gronx.NextTickAfter(s.schedule, now.In(loc), false)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s scheduler) message(job string) []byte {
	b, _ := json.Marshal(jobs.Message{Job: job, Schedule: s.schedule, TimeZone: s.zone})
	return b
}

func run(port int, sched scheduler, jobNames []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	project := emulators.AuthProject // one demo project for Firestore, Pub/Sub and Auth
	os.Setenv("GOOGLE_CLOUD_PROJECT", project)

	fmt.Println("starting emulators (Firestore with firestore.rules, Pub/Sub, Auth) ...")
	emu, err := emulators.Start(ctx, emulators.Firestore, emulators.PubSub, emulators.Auth)
	if err != nil {
		return err
	}
	defer emu.Stop()

	if port == 0 {
		if port, err = emulators.FreePort(); err != nil {
			return err
		}
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- localrun.Serve("127.0.0.1", fmt.Sprint(port)) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	select {
	case err := <-serveErr:
		return fmt.Errorf("functions server on %s: %w", base, err)
	case <-time.After(300 * time.Millisecond):
	}

	fs, err := firestore.NewClient(ctx, project)
	if err != nil {
		return err
	}
	defer fs.Close()
	if err := seedScreening(ctx, fs); err != nil {
		return err
	}
	token, uid, err := emulators.SignIn("demo@example.com", "demo-password")
	if err != nil {
		return err
	}

	ps, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return err
	}
	defer ps.Close()
	runID, err := lock.NewExecutionID()
	if err != nil {
		return err
	}
	runID = strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(runID))[:10]
	if err := localrun.Wire(ctx, ps, project, base, runID); err != nil {
		return err
	}
	pub := ps.Publisher(localrun.Topic)
	defer pub.Stop()

	printBanner(emu, base, project, token, uid, sched, jobNames)

	for {
		var tick <-chan time.Time
		if next := sched.next(time.Now()); !next.IsZero() {
			tick = time.After(time.Until(next)) // collected when unused (Go 1.23+)
		}
		select {
		case <-ctx.Done():
			fmt.Println("\nstopping ...")
			return nil
		case err := <-serveErr:
			return fmt.Errorf("functions server stopped: %w", err)
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

// seedScreening writes the demo screening (10 rows of 20 seats); rerunning
// against a persistent emulator leaves bookings alone.
func seedScreening(ctx context.Context, fs *firestore.Client) error {
	_, err := fs.Collection(booking.Screenings).Doc("demo").Set(ctx, booking.Screening{
		Title: "Metropolis (demo)", StartsAt: time.Now().Add(24 * time.Hour).Truncate(time.Hour),
		Rows: []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}, SeatsPerRow: 20,
	})
	if err != nil {
		return fmt.Errorf("seed the demo screening: %w", err)
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

func printBanner(emu *emulators.Running, base, project, token, uid string, sched scheduler, jobNames []string) {
	started := func(k emulators.Kind) string {
		if emu.Started(k) {
			return "started here"
		}
		return "already running"
	}
	fmt.Printf(`
firelock is running on loopback (project %s)

  Firestore emulator  %s  (%s; rules: firestore.rules)
  Pub/Sub emulator    %s  (%s; topic %s, push to RunScheduledJob)
  Auth emulator       %s  (%s)
  functions           %s
  scheduler stand-in  %s on %q (%s)

Demo user demo@example.com (uid %s); its ID token (valid 1h):

  export ID_TOKEN=%s

Book two seats of the demo screening:

  curl -s -X POST %s/BookSeats -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"screeningId": "demo", "seats": ["F12", "F13"], "requestId": "try-1"}'

Cancel it with the bookingId it returns:

  curl -s -X POST %s/CancelBooking -H "Authorization: Bearer $ID_TOKEN" \
    -H 'Content-Type: application/json' -d '{"bookingId": "<bookingId>"}'

Press Ctrl-C to stop everything.
`, project,
		emu.Host(emulators.Firestore), started(emulators.Firestore),
		emu.Host(emulators.PubSub), started(emulators.PubSub), localrun.Topic,
		emu.Host(emulators.Auth), started(emulators.Auth),
		functionURLs(base),
		strings.Join(jobNames, ", "), sched.schedule, sched.zone,
		uid, token, base, base)
}
