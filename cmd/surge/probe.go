package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/report"
)

// probeEvery is how often the probe writes.
const probeEvery = 500 * time.Millisecond

// probe measures the emulator's own commit latency through the run: one
// document written every probeEvery (one write at a time) by a client on a
// connection of its own, straight to the emulator, outside the commit tap
// and the functions. What the functions' calls and the admitter's lease
// renewals take is bounded below by it: when the probe's commit takes 5 s,
// so does every commit queued beside it (issue #41).
type probe struct {
	mu      sync.Mutex
	samples []probeSample
	stop    func()
	done    chan struct{}
}

type probeSample struct {
	at   time.Time // sent
	took time.Duration
	err  bool
}

// startProbe writes surgeProbe/commit on client until stopped.
func startProbe(client *firestore.Client) *probe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &probe{stop: cancel, done: make(chan struct{})}
	ref := client.Collection("surgeProbe").Doc("commit")
	go func() {
		defer close(p.done)
		t := time.NewTicker(probeEvery)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wctx, wcancel := context.WithTimeout(ctx, time.Minute)
			at := time.Now()
			_, err := ref.Set(wctx, map[string]any{"n": n, "at": firestore.ServerTimestamp})
			took := time.Since(at)
			wcancel()
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.samples = append(p.samples, probeSample{at: at, took: took, err: err != nil})
			p.mu.Unlock()
		}
	}()
	return p
}

// end stops the probe and waits for its last write.
func (p *probe) end() {
	p.stop()
	<-p.done
}

// probeStats are the probe's commit latencies, in the burst and over the run.
type probeStats struct {
	Samples    int     `json:"samples"`
	Failed     int     `json:"failed"`
	BurstP50ms float64 `json:"burstP50Ms"`
	BurstP99ms float64 `json:"burstP99Ms"`
	P99ms      float64 `json:"p99Ms"`
	MaxMs      float64 `json:"maxMs"`
}

// stats sums the samples sent from opensAt on; the burst is [opensAt, burstTo).
func (p *probe) stats(opensAt, burstTo time.Time) probeStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all, burst []time.Duration
	var st probeStats
	for _, s := range p.samples {
		if s.at.Before(opensAt) {
			continue
		}
		st.Samples++
		if s.err {
			st.Failed++
		}
		all = append(all, s.took)
		if s.at.Before(burstTo) {
			burst = append(burst, s.took)
		}
	}
	slices.Sort(all)
	slices.Sort(burst)
	st.BurstP50ms, st.BurstP99ms = ms(report.Quantile(burst, 0.5)), ms(report.Quantile(burst, 0.99))
	st.P99ms = ms(report.Quantile(all, 0.99))
	if len(all) > 0 {
		st.MaxMs = ms(all[len(all)-1])
	}
	return st
}
