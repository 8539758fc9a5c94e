package payment_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/payment"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var mock *stripelocal.Mock

func TestMain(m *testing.M) {
	// The tests mostly wait (for holds to lapse, leases to end, Stripe's
	// retries), each on a project of its own: run them side by side, not
	// GOMAXPROCS at a time (2 on a small machine), unless -parallel says.
	flag.Parse()
	if !parallelSet() {
		flag.Set("test.parallel", "8")
	}
	os.Exit(func() int {
		var err error
		if mock, err = stripelocal.StartMock(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer mock.Stop()
		return firelocktest.Main(m)
	}())
}

// call is one HTTP request the Stripe client sent, as its transport saw it.
type call struct {
	Method, Path, Key string
	Status            int       // 0: no answer (an error)
	At                time.Time // when it was sent
}

// recorder records every request to Stripe (each attempt: stripe-go's own
// retries included) with its idempotency key: the counting interceptor.
type recorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	calls []call
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	c := call{Method: req.Method, Path: req.URL.Path, Key: req.Header.Get("Idempotency-Key"), At: time.Now()}
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		c.Status = resp.StatusCode
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) list() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// count is how many requests went to paths for which match is true.
func (r *recorder) count(match func(call) bool) int {
	n := 0
	for _, c := range r.list() {
		if match(c) {
			n++
		}
	}
	return n
}

func isCreate(c call) bool { return c.Method == "POST" && c.Path == "/v1/checkout/sessions" }
func isRefund(c call) bool { return c.Method == "POST" && c.Path == "/v1/refunds" }
func isExpire(c call) bool {
	return c.Method == "POST" && len(c.Path) > 6 && c.Path[len(c.Path)-7:] == "/expire"
}
func anyCall(c call) bool { return true }
func keyOf(key string) func(call) bool {
	return func(c call) bool { return c.Key == key }
}

// env is one test's payments on a fresh Firestore project, with a priced
// screening s1 (rows A to E of 10 seats; 12.50 EUR a seat, row A 20.00)
// quick (9.00 EUR, kept 3 s for paying, so that tests see holds lapse),
// and a free one free1.
type env struct {
	t        *testing.T
	fs       *firestore.Client
	bookings *booking.Service
	pay      *payment.Service
	stripe   *recorder
	secret   string
	reader   *metric.ManualReader
	// cfg and popts built pay (withGate builds it again).
	cfg   payment.Config
	popts []payment.Option
}

type envOption func(*payment.Config, *[]payment.Option)

// withReplay puts a replayer (Stripe's idempotency, which stripe-mock does
// not keep) between the Stripe client and stripe-mock, and a checkout page
// whose URLs name the session they pay.
func withReplay(r *replayer) envOption {
	return func(c *payment.Config, _ *[]payment.Option) {
		r.next = c.HTTPClient.Transport.(*recorder).next
		c.HTTPClient.Transport.(*recorder).next = r
		c.CheckoutPage = "http://checkout.test/pay"
	}
}

// replayer answers a POST that carries an Idempotency-Key seen before as
// Stripe does: with the first answer again, or, when the parameters
// differ, 400 idempotency_error. afterCreate, if set, runs once a session
// create's first answer is in, before the client has it: the moment
// Stripe has made the session.
type replayer struct {
	next        http.RoundTripper
	mu          sync.Mutex
	seen        map[string]replayed
	afterCreate func()
}

type replayed struct {
	body   string // the request's parameters
	status int
	header http.Header
	answer []byte
}

func (r *replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("Idempotency-Key")
	if req.Method != http.MethodPost || key == "" {
		return r.next.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if f, ok := req.Context().Value(cutAfterStripe{}).(func()); ok && req.URL.Path == "/v1/checkout/sessions" {
		defer f() // the caller goes away once Stripe has answered
	}
	r.mu.Lock()
	prev, ok := r.seen[key]
	r.mu.Unlock()
	if ok {
		if prev.body != string(body) {
			answer := []byte(`{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`)
			return &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(answer)), Request: req}, nil
		}
		return &http.Response{StatusCode: prev.status, Header: prev.header.Clone(), Body: io.NopCloser(bytes.NewReader(prev.answer)), Request: req}, nil
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if resp.StatusCode < 500 { // Stripe keeps an answer it made, not a failure to make one
		r.mu.Lock()
		if r.seen == nil {
			r.seen = map[string]replayed{}
		}
		r.seen[key] = replayed{body: string(body), status: resp.StatusCode, header: resp.Header.Clone(), answer: answer}
		hook := r.afterCreate
		if req.URL.Path == "/v1/checkout/sessions" {
			r.afterCreate = nil
		} else {
			hook = nil
		}
		r.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	return resp, nil
}

// cutAfterStripe is a context key: its value, a func(), runs once a
// session create sent with that context has Stripe's answer (the
// replayer's), before the client reads it: a caller that goes away then.
type cutAfterStripe struct{}

// withAPIURL points the Stripe client elsewhere (a fault proxy).
func withAPIURL(u string) envOption {
	return func(c *payment.Config, _ *[]payment.Option) { c.APIURL = u }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	return newEnvOn(t, firelocktest.NewClient(t), true, opts...)
}

// newEnvOn is an env on fs; seed writes the screenings.
func newEnvOn(t *testing.T, fs *firestore.Client, seed bool, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	if seed {
		rows := []string{"A", "B", "C", "D", "E"}
		if _, err := fs.Doc("screenings/s1").Set(ctx, map[string]any{
			"title": "Metropolis", "startsAt": time.Now().Add(24 * time.Hour), "rows": rows, "seatsPerRow": 10,
			"price": map[string]any{"amount": 1250, "currency": "eur", "rows": map[string]any{"A": 2000}},
		}); err != nil {
			t.Fatal(err)
		}
		// quick: holds are kept 3 s for paying, so tests see them lapse.
		if _, err := fs.Doc("screenings/quick").Set(ctx, map[string]any{
			"title": "Sunrise", "startsAt": time.Now().Add(24 * time.Hour), "rows": rows, "seatsPerRow": 10,
			"price": map[string]any{"amount": 900, "currency": "eur", "payHoldSeconds": 3},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Doc("screenings/free1").Set(ctx, map[string]any{
			"title": "Nosferatu", "startsAt": time.Now().Add(24 * time.Hour), "rows": rows, "seatsPerRow": 10,
		}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{next: http.DefaultTransport}
	e := &env{t: t, fs: fs, stripe: rec, secret: stripelocal.NewWebhookSecret(), reader: metric.NewManualReader()}
	cfg := payment.Config{SecretKey: "sk_test_firelock", WebhookSecret: e.secret, APIURL: mock.URL, HTTPClient: &http.Client{Transport: rec, Timeout: 3 * time.Second}}
	popts := []payment.Option{payment.WithMeterProvider(metric.NewMeterProvider(metric.WithReader(e.reader))),
		payment.WithEventOptions(jobs.WithLease(3 * time.Second)), payment.WithMinPayHold(time.Second)}
	for _, o := range opts {
		o(&cfg, &popts)
	}
	e.cfg, e.popts = cfg, popts
	ledger := payment.NewLedger(fs)
	e.bookings = booking.New(fs, booking.WithTill(ledger))
	t.Cleanup(e.bookings.Close)
	e.pay = payment.New(fs, e.bookings, ledger, cfg, popts...)
	return e
}

// withGate builds the env's bookings and payments again with g as
// booking's gate (a sale).
func (e *env) withGate(g booking.Gate) {
	ledger := payment.NewLedger(e.fs)
	e.bookings = booking.New(e.fs, booking.WithTill(ledger), booking.WithGate(g))
	e.t.Cleanup(e.bookings.Close)
	e.pay = payment.New(e.fs, e.bookings, ledger, e.cfg, e.popts...)
}

var reqN struct {
	sync.Mutex
	n int
}

func nextRequest() string {
	reqN.Lock()
	defer reqN.Unlock()
	reqN.n++
	return fmt.Sprintf("req-%d-%d", time.Now().UnixNano(), reqN.n)
}

// hold holds seats of s1 for uid for d (0: the default).
func (e *env) hold(uid string, d time.Duration, seats ...string) booking.Hold {
	e.t.Helper()
	return e.holdOf("s1", uid, d, seats...)
}

func (e *env) holdOf(screening, uid string, d time.Duration, seats ...string) booking.Hold {
	e.t.Helper()
	h, _, err := e.bookings.Hold(context.Background(), "exec-"+uid, booking.Request{UID: uid, ScreeningID: screening, Seats: seats, RequestID: nextRequest()}, d)
	if err != nil {
		e.t.Fatalf("hold %v for %s: %v", seats, uid, err)
	}
	return h
}

// checkout pays for uid's hold: its Checkout Session.
func (e *env) checkout(uid, holdID string) payment.Checkout {
	e.t.Helper()
	c, _, err := e.pay.Checkout(context.Background(), payment.CheckoutRequest{UID: uid, HoldID: holdID, Origin: "http://localhost:5173"})
	if err != nil {
		e.t.Fatalf("checkout of %s: %v", holdID, err)
	}
	return c
}

// record reads hold holdID's payment record.
func (e *env) record(holdID string) payment.Record {
	e.t.Helper()
	snap, err := e.fs.Collection(payment.Payments).Doc(holdID).Get(context.Background())
	if err != nil {
		e.t.Fatalf("payments/%s: %v", holdID, err)
	}
	var r payment.Record
	if err := snap.DataTo(&r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// session is what Stripe knows of hold holdID's session, from its record.
func (e *env) session(holdID string) stripelocal.Session {
	r := e.record(holdID)
	return stripelocal.Session{ID: r.SessionID, HoldID: holdID, ScreeningID: r.ScreeningID, UID: r.UID, Amount: r.Amount, Currency: r.Currency}
}

// deliver delivers one event of type t (id eventID; "" a fresh one) for the
// hold's session, signed now, as Stripe would.
func (e *env) deliver(t, eventID string, s stripelocal.Session) (payment.Receipt, error) {
	ev := stripelocal.Event(t, eventID, s)
	return e.pay.HandleWebhook(context.Background(), "exec-"+stripelocal.NewEventID(), ev, stripelocal.Sign(ev, e.secret, time.Now()))
}

// mustDeliver is deliver that fails the test on an error.
func (e *env) mustDeliver(t, eventID string, s stripelocal.Session) payment.Receipt {
	e.t.Helper()
	rc, err := e.deliver(t, eventID, s)
	if err != nil {
		e.t.Fatalf("deliver %s for %s: %v", t, s.HoldID, err)
	}
	return rc
}

// doc reads a document's data (nil: it does not exist).
func (e *env) doc(path string) map[string]any {
	e.t.Helper()
	snap, err := e.fs.Doc(path).Get(context.Background())
	if err != nil {
		return nil
	}
	return snap.Data()
}

// payments counts firelock.payments by outcome.
func (e *env) payments() map[string]int64 {
	e.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "firelock.payments" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value("firelock.outcome")
				out[v.AsString()] += dp.Value
			}
		}
	}
	return out
}

// parallelSet: -test.parallel was given on the command line.
func parallelSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	return set
}
