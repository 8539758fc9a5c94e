package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/sale"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// instance is one function as deployed: its own API on its own Firestore
// client, whose RPCs, reads and writes count into stats, and whose every
// written document goes to the hot-document tracker (rpcstats' OnWrite).
// The client dials the emulator at emulatorHost itself; the API is built
// while FIRESTORE_EMULATOR_HOST names the commit tap, so the lock package's
// own commit clients (the leases) go through the tap (see commitTap).
type instance struct {
	name  string
	stats *rpcstats.Stats
	fs    *firestore.Client
	api   *functions.API
}

func newInstance(ctx context.Context, name, project, emulatorHost string, hot *hotDocs, log *slog.Logger) (*instance, error) {
	stats := &rpcstats.Stats{OnWrite: hot.record}
	conn, err := grpc.NewClient(emulatorHost, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(emulatorOwner{}),
	}, stats.DialOptions()...)...)
	if err != nil {
		return nil, err
	}
	fs, err := firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
	if err != nil {
		conn.Close()
		return nil, err
	}
	api, err := functions.NewAPIWithLogger(ctx, fs, emulators.AuthProject, log)
	if err != nil {
		fs.Close()
		return nil, err
	}
	return &instance{name: name, stats: stats, fs: fs, api: api}, nil
}

// emulatorOwner authenticates as the emulator's admin, as a server's
// client does (the rules do not apply to it).
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (emulatorOwner) RequireTransportSecurity() bool { return false }

// call is one invocation of an HTTP function, timed on the server.
type call struct {
	fn     string
	at     time.Time
	took   time.Duration
	status int
}

type callLog struct {
	mu    sync.Mutex
	calls []call
}

func (l *callLog) add(c call) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

func (l *callLog) all() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]call(nil), l.calls...)
}

// backend is the functions on loopback, one instance each, as users call
// them over HTTP.
type backend struct {
	url       string
	srv       *httptest.Server
	instances []*instance
	calls     *callLog
	// inFlight caps the requests each function serves at once, as the
	// local run's server does (issue #41); nil: no cap.
	inFlight map[string]*functions.InFlight
}

func startBackend(ctx context.Context, project, emulatorHost string, maxInFlight int, hot *hotDocs, log *slog.Logger) (*backend, error) {
	b := &backend{calls: &callLog{}, inFlight: map[string]*functions.InFlight{}}
	mux := http.NewServeMux()
	for _, name := range functions.HTTPFunctions {
		in, err := newInstance(ctx, name, project, emulatorHost, hot, log)
		if err != nil {
			b.close()
			return nil, err
		}
		b.instances = append(b.instances, in)
		b.inFlight[name] = functions.NewInFlight(maxInFlight)
		h := b.inFlight[name].Wrap(in.api, handlerOf(in.api, name))
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			start := time.Now()
			h(rec, r)
			b.calls.add(call{fn: name, at: start, took: time.Since(start), status: rec.status})
		})
	}
	b.srv = httptest.NewServer(mux)
	b.url = b.srv.URL
	return b, nil
}

func handlerOf(api *functions.API, name string) http.HandlerFunc {
	switch name {
	case "BookSeats":
		return api.BookSeats
	case "CancelBooking":
		return api.CancelBooking
	case "HoldSeats":
		return api.HoldSeats
	case "ExtendHold":
		return api.ExtendHold
	case "ConfirmHold":
		return api.ConfirmHold
	case "ReleaseHold":
		return api.ReleaseHold
	case "JoinQueue":
		return api.JoinQueue
	case "OperateSale":
		return api.OperateSale
	case "CheckoutHold":
		return api.CheckoutHold
	case "StripeWebhook":
		return api.StripeWebhook
	case "CheckIn":
		return api.CheckIn
	case "TransferTicket":
		return api.TransferTicket
	case "TicketKeys":
		return api.TicketKeys
	case "SaleState":
		return api.SaleState
	}
	panic("surge: no handler for function " + name) // functions.HTTPFunctions names one this file does not know
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (b *backend) close() {
	if b.srv != nil {
		b.srv.Close()
	}
	for _, in := range b.instances {
		in.fs.Close()
	}
}

// scheduler stands in for Cloud Scheduler and Pub/Sub, as the local run's
// does: it publishes {"job": "admitQueue", "schedule": "* * * * *"} at the
// start and at every tick of the schedule, and delivers each message to
// RunScheduledJob on the admitter's instance, again after a failure, as
// Pub/Sub does. Each run admits until the next tick (CONTRACT §7), by
// Firestore's clock, under the sale's admitter lease.
type scheduler struct {
	in                    *instance
	log                   *slog.Logger
	source                string
	publishes, deliveries atomic.Int64
	wg                    sync.WaitGroup
	done                  chan struct{}
}

const (
	admitSchedule = "* * * * *"
	admitZone     = "UTC"
)

func startScheduler(ctx context.Context, in *instance, project string, log *slog.Logger) *scheduler {
	s := &scheduler{in: in, log: log, done: make(chan struct{}),
		source: "//pubsub.googleapis.com/projects/" + project + "/topics/scheduled-jobs"}
	go func() {
		defer close(s.done)
		defer s.wg.Wait()
		for at := time.Now(); ; {
			s.publish(ctx, at)
			at = at.Truncate(time.Minute).Add(time.Minute) // the next tick of "* * * * *"
			t := time.NewTimer(time.Until(at))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}()
	return s
}

// publish publishes the tick at and delivers it until a delivery succeeds.
func (s *scheduler) publish(ctx context.Context, at time.Time) {
	n := s.publishes.Add(1)
	data, _ := json.Marshal(jobs.Message{Job: sale.AdmitJob, Schedule: admitSchedule, TimeZone: admitZone})
	ev := event.New()
	ev.SetID(fmt.Sprintf("surge-%d", n))
	ev.SetSource(s.source)
	ev.SetType("google.cloud.pubsub.topic.v1.messagePublished")
	ev.SetTime(at)
	if err := ev.SetData(event.ApplicationJSON, map[string]any{
		"message": map[string]any{"data": data, "messageId": ev.ID(), "publishTime": at},
	}); err != nil {
		panic(err) // a map of plain values always marshals
	}
	s.wg.Go(func() {
		for ctx.Err() == nil {
			s.deliveries.Add(1)
			if err := s.in.api.RunScheduledJob(ctx, ev); err == nil || ctx.Err() != nil {
				return
			}
			select { // Pub/Sub's redelivery backoff, shortened
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
	})
}

// describe says how admitQueue ran.
func (s *scheduler) describe() string {
	return fmt.Sprintf("the job admitQueue on %q (%s), %d publishes, %d deliveries to RunScheduledJob",
		admitSchedule, admitZone, s.publishes.Load(), s.deliveries.Load())
}

// stop waits for the scheduler and its deliveries to end (their context
// cancelled).
func (s *scheduler) stop() {
	<-s.done
	s.in.fs.Close()
}

// lockedWriter serializes writes to a log shared by the instances.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
