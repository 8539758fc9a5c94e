// Package stripelocal is Stripe on loopback, for the local run, the tests
// and the surge: stripe-mock (Stripe's own API mock, pinned as a Go tool
// in go.mod) for the API, Checkout Session events signed as Stripe signs
// them (stripe-go's webhook package), and a page that stands in for
// Stripe's hosted checkout page.
//
// stripe-mock is stateless: it validates each request against Stripe's
// OpenAPI spec and answers a fixture, with a fresh id per object, and it
// keeps nothing (no idempotency, no session state). So the events that
// tell the functions what happened are made here, from the payment
// records, as Stripe would make them from its own.
package stripelocal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/firelock/firelock/internal/emulators"
	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Mock is a running stripe-mock on loopback.
type Mock struct {
	// URL is its API's base URL (http://127.0.0.1:PORT): a Config.APIURL.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
}

var listening = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// StartMock builds stripe-mock (the version go.mod pins: `go tool -n
// stripe-mock` builds it once into the build cache) and starts it on a
// free loopback port. Stop it when done.
func StartMock(ctx context.Context) (*Mock, error) {
	root, err := emulators.ProjectRoot()
	if err != nil {
		return nil, err
	}
	build := exec.CommandContext(ctx, "go", "tool", "-n", "stripe-mock")
	build.Dir = root
	path, err := build.Output()
	if err != nil {
		return nil, fmt.Errorf("stripelocal: build stripe-mock (go tool -n stripe-mock): %w", err)
	}
	m := &Mock{done: make(chan struct{})}
	// HTTPS is on unless HTTP is named; bind both to loopback, free ports.
	m.cmd = exec.Command(strings.TrimSpace(string(path)), "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	// It dies with whoever started it, as the emulators do: a test binary
	// that panics (a timeout) leaves no stripe-mock behind.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	m.cmd.Stderr = &lockedWriter{m}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("stripelocal: start stripe-mock: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			m.mu.Lock()
			m.out.WriteString(line + "\n")
			m.mu.Unlock()
			if mm := listening.FindStringSubmatch(line); mm != nil {
				select {
				case addr <- mm[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { m.cmd.Wait(); close(m.done) }()
	select {
	case a := <-addr:
		m.URL = "http://" + a
		return m, nil
	case <-m.done:
		return nil, fmt.Errorf("stripelocal: stripe-mock exited: %s", m.output())
	case <-time.After(30 * time.Second):
		m.Stop()
		return nil, fmt.Errorf("stripelocal: stripe-mock did not listen within 30 s: %s", m.output())
	case <-ctx.Done():
		m.Stop()
		return nil, ctx.Err()
	}
}

// Stop ends stripe-mock.
func (m *Mock) Stop() {
	if m == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Kill()
	<-m.done
}

func (m *Mock) output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
}

type lockedWriter struct{ m *Mock }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.m.out.Write(b)
}

// NewWebhookSecret makes a fresh endpoint signing secret, shaped as
// Stripe's ("whsec_" and 32 random bytes), as `stripe listen` makes one
// per run.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// Session is what a Checkout Session event says of the session.
type Session struct {
	ID          string
	HoldID      string
	ScreeningID string
	UID         string
	Amount      int64
	Currency    string
}

// PaymentIntent is the payment intent a paid session carries: one per
// session, as at Stripe.
func (s Session) PaymentIntent() string {
	h := sha256.Sum256([]byte(s.ID))
	return "pi_" + hex.EncodeToString(h[:12])
}

// Event is a Checkout Session event of type t (e.g.
// "checkout.session.completed") with id eventID ("" for a fresh one), as
// Stripe sends it: an event object of stripe-go's pinned API version whose
// data.object is the session (paid, for completed and
// async_payment_succeeded).
func Event(t, eventID string, s Session) []byte {
	if eventID == "" {
		eventID = NewEventID()
	}
	obj := map[string]any{
		"id": s.ID, "object": "checkout.session", "mode": "payment", "client_reference_id": s.HoldID,
		"metadata":     map[string]string{"holdId": s.HoldID, "screeningId": s.ScreeningID, "uid": s.UID},
		"amount_total": s.Amount, "currency": s.Currency, "livemode": false,
	}
	switch t {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		obj["status"], obj["payment_status"], obj["payment_intent"] = "complete", "paid", s.PaymentIntent()
	case "checkout.session.async_payment_failed":
		obj["status"], obj["payment_status"], obj["payment_intent"] = "complete", "unpaid", s.PaymentIntent()
	default:
		obj["status"], obj["payment_status"] = "expired", "unpaid"
	}
	b, _ := json.Marshal(map[string]any{
		"id": eventID, "object": "event", "api_version": stripe.APIVersion, "created": time.Now().Unix(),
		"type": t, "livemode": false, "pending_webhooks": 1,
		"data": map[string]any{"object": obj},
	})
	return b
}

// NewEventID is a fresh event id ("evt_..."), as Stripe gives each event.
func NewEventID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "evt_" + hex.EncodeToString(b)
}

// Sign is the Stripe-Signature header of payload at time at, signed with
// the endpoint's secret by stripe-go's own test signer.
func Sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

// Deliver posts payload, signed now with secret, to a StripeWebhook URL, as
// Stripe delivers an event; it returns the status and the body.
func Deliver(ctx context.Context, client *http.Client, url, secret string, payload []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", Sign(payload, secret, time.Now()))
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body, nil
}
