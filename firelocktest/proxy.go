// The fault proxy: a fault-injecting TCP proxy between a test's clients and
// an emulator. It drops answers after the server processed the request,
// delays them, or resets connections. It is Shopify's toxiproxy, run
// in-process, with the few faults firelock's tests use named plainly.
//
// Faults apply to open connections and new ones alike until Heal. gRPC
// clients see a dropped answer as a deadline or an unavailable server, and
// a reset as an unavailable server: the ambiguous outcomes a Cloud Function
// meets when its network or its instance fails mid-call.

package firelocktest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy forwards a loopback port to an upstream host:port (the emulator),
// with the faults switched on injected into what passes. Its methods are
// safe for concurrent use.
type Proxy struct {
	// Addr is the proxy's host:port: point clients here instead of upstream.
	Addr string

	p      *toxiproxy.Proxy
	mu     sync.Mutex
	active map[string]bool
	faults int
}

// NewProxy runs a proxy to upstream until tb ends: for the Firestore
// emulator, upstream is os.Getenv("FIRESTORE_EMULATOR_HOST"). Reach it with
// NewClientVia(tb, p.Addr, project), and give the options that returns to
// lock.WithClientOptions so the lock's commits pass the proxy too. No
// fault is on until one of its methods switches it on.
func NewProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "fault-"+strings.ReplaceAll(tb.Name(), "/", "-"), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		tb.Fatalf("firelocktest: start a proxy to %s: %v", upstream, err)
	}
	fp := &Proxy{Addr: p.Listen, p: p, active: map[string]bool{}}
	tb.Cleanup(p.Stop)
	return fp
}

// DropAnswers swallows every byte the server sends from now on (its
// requests still reach it and are processed) and closes each connection
// after closeAfter: a write lands, and its caller cannot know.
func (p *Proxy) DropAnswers(closeAfter time.Duration) error {
	return p.add("drop", "timeout", "downstream", fmt.Sprintf(`{"timeout": %d}`, closeAfter.Milliseconds()))
}

// Delay holds every answer back by d.
func (p *Proxy) Delay(d time.Duration) error {
	return p.add("delay", "latency", "downstream", fmt.Sprintf(`{"latency": %d}`, d.Milliseconds()))
}

// DelayRequests holds every request back by d on its way to the server
// (its answer follows it): a request its client gave up on may still reach
// the server, and be processed, after the client's deadline.
func (p *Proxy) DelayRequests(d time.Duration) error {
	return p.add("delay-requests", "latency", "upstream", fmt.Sprintf(`{"latency": %d}`, d.Milliseconds()))
}

// Blackhole swallows every byte in both directions and keeps connections
// open: a request is never answered, and may never reach the server, as
// behind a half-open connection or a lost stream. Bytes swallowed stay
// lost after Heal: a call sent meanwhile is never answered at all, so only
// a deadline ends it.
func (p *Proxy) Blackhole() error {
	if err := p.add("blackhole-up", "timeout", "upstream", `{"timeout": 0}`); err != nil {
		return err
	}
	return p.add("blackhole-down", "timeout", "downstream", `{"timeout": 0}`)
}

// Reset resets (TCP RST) every connection as soon as it sends anything, so
// requests may or may not have reached the server.
func (p *Proxy) Reset() error {
	return p.add("reset", "reset_peer", "upstream", `{"timeout": 0}`)
}

// Heal removes every fault. Bytes already swallowed stay lost.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.active {
		p.p.Toxics.RemoveToxic(context.Background(), name)
		delete(p.active, name)
	}
}

// Faults is how many faults were switched on so far.
func (p *Proxy) Faults() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

func (p *Proxy) add(name, kind, stream, attrs string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active[name] {
		return nil
	}
	body := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "toxicity": 1.0, "attributes": %s}`, name, kind, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("firelocktest: fault %s: %w", name, err)
	}
	p.active[name] = true
	p.faults++
	return nil
}
