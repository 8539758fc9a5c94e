package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/rpcstats"
	"github.com/firelock/firelock/sale"
)

// instance is one function as deployed: its own API on its own Firestore
// client, whose RPCs, reads and writes count into stats, and whose every
// written document goes to the hot-document tracker.
type instance struct {
	name  string
	stats *rpcstats.Stats
	fs    *firestore.Client
	api   *functions.API
}

func newInstance(ctx context.Context, name, project string, hot *hotDocs, log *slog.Logger) (*instance, error) {
	stats := &rpcstats.Stats{OnWrite: hot.record}
	fs, err := rpcstats.NewClient(ctx, project, stats)
	if err != nil {
		return nil, err
	}
	api, err := functions.NewAPI(ctx, fs, emulators.AuthProject)
	if err != nil {
		fs.Close()
		return nil, err
	}
	api.Log = log
	api.Sales = sale.New(fs, sale.WithLogger(log))
	return &instance{name: name, stats: stats, fs: fs, api: api}, nil
}

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
}

func startBackend(ctx context.Context, project string, hot *hotDocs, log *slog.Logger) (*backend, error) {
	b := &backend{calls: &callLog{}}
	mux := http.NewServeMux()
	for _, name := range functions.HTTPFunctions {
		in, err := newInstance(ctx, name, project, hot, log)
		if err != nil {
			b.close()
			return nil, err
		}
		b.instances = append(b.instances, in)
		h := handlerOf(in.api, name)
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

// admitter runs the job admitQueue for the whole surge, on an instance of
// its own (RunScheduledJob's), in one of two ways:
//
//   - job: as Cloud Scheduler and Pub/Sub would, CloudEvents of messages
//     {"job": "admitQueue", "seconds": N} delivered to RunScheduledJob one
//     after the other, each run admitting for N seconds;
//   - direct: sale.Admitter.Run(ctx, until) for the whole surge, what such a
//     run does inside.
//
// auto takes job when internal/jobs accepts the message's seconds (CONTRACT
// §7), and direct otherwise. A job run that returns long before its seconds
// (the body makes one pass: the Admitter's Job does not follow the run's end
// yet) switches to direct, so that the sale's lease is not taken and given
// up once a second, which would make it the hottest document of the run.
type admitter struct {
	in   *instance
	mode string
	runs int // job deliveries, or scheduler ticks a direct run stands for
	log  *slog.Logger
	done chan struct{}
	err  error
}

const admitJobSeconds = 60 // what a run every minute (deploy.sh) takes

// startAdmitter runs the admitter on in (RunScheduledJob's instance).
func startAdmitter(ctx context.Context, in *instance, mode, project string, log *slog.Logger) *admitter {
	a := &admitter{in: in, mode: mode, log: log, done: make(chan struct{})}
	if a.mode == "auto" {
		a.mode = "direct"
		if _, err := in.api.Jobs.Parse(admitMessage(admitJobSeconds)); err == nil {
			a.mode = "job"
		}
	}
	go func() {
		defer close(a.done)
		a.err = a.run(ctx, project)
	}()
	return a
}

func admitMessage(seconds int) []byte {
	b, _ := json.Marshal(map[string]any{"job": sale.AdmitJob, "seconds": seconds})
	return b
}

func (a *admitter) run(ctx context.Context, project string) error {
	if a.mode == "job" {
		source := "//pubsub.googleapis.com/projects/" + project + "/topics/scheduled-jobs"
		for ctx.Err() == nil {
			a.runs++
			start := time.Now()
			ev := event.New()
			ev.SetID(fmt.Sprintf("surge-%d", a.runs))
			ev.SetSource(source)
			ev.SetType("google.cloud.pubsub.topic.v1.messagePublished")
			ev.SetTime(start)
			if err := ev.SetData(event.ApplicationJSON, map[string]any{
				"message": map[string]any{"data": admitMessage(admitJobSeconds), "messageId": ev.ID(), "publishTime": start},
			}); err != nil {
				return err
			}
			err := a.in.api.RunScheduledJob(ctx, ev)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				a.log.Warn("surge: admitQueue delivery failed; delivering again", "error", err.Error())
				continue
			}
			if time.Since(start) < admitJobSeconds*time.Second/2 {
				a.log.Warn("surge: an admitQueue run returned before its seconds; admitting with sale.Admitter.Run from now on")
				a.mode = "direct (job runs made one pass)"
				break
			}
		}
	}
	adm, err := a.in.api.Sales.Admitter()
	if err != nil {
		return err
	}
	start := time.Now()
	err = adm.Run(ctx, time.Now().Add(24*time.Hour))
	a.runs += int(time.Since(start)/time.Minute) + 1 // a run a minute, as scheduled
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return nil
	}
	return err
}

// stop waits for the admitter to end (its context cancelled) and returns
// what stopped it, if not the cancellation.
func (a *admitter) stop() error {
	<-a.done
	a.in.fs.Close()
	return a.err
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
