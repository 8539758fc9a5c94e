// Command bench measures firelock against the patterns of its seed texts in
// one run on the same emulators, and prints a table and a JSON file.
//
//	go run ./cmd/bench [-duration 3s] [-concurrency 32] [-only lock] [-json bench-results.json]
//
// Every scenario runs a firelock variant and its baseline back to back; the
// ratio column is firelock/baseline (for throughput: higher is better; for
// latencies the ratio is also firelock/baseline, so lower is better).
// -only metrics runs the booking with and without a meter provider,
// alternating, and reports their throughput ratio (CONTRACT §9: metrics
// cost at most 3% of it).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"github.com/firelock/firelock/lock"
)

type config struct {
	duration    time.Duration
	concurrency int
	rounds      int
}

// result is one measured variant.
type result struct {
	Scenario string  `json:"scenario"`
	Variant  string  `json:"variant"` // "firelock" or "baseline: ..."
	Ops      int     `json:"ops"`
	Errors   int     `json:"errors"`
	OpsPerS  float64 `json:"opsPerSecond"`
	P50ms    float64 `json:"p50Ms"`
	P99ms    float64 `json:"p99Ms"`
	// RPCsPerOp is counted by an interceptor on the client (internal/testkit/rpcstats):
	// every RPC the variant sent, over its operations (failed ones included).
	// null for a peer in another process (seed 002 on Node), whose RPCs the
	// interceptor cannot see.
	RPCsPerOp *float64 `json:"rpcsPerOp"`
	Note      string   `json:"note,omitempty"`
}

// comparison is a scenario's firelock result against its baseline.
type comparison struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	Firelock float64 `json:"firelock"`
	Baseline float64 `json:"baseline"`
	Ratio    float64 `json:"ratio"` // firelock / baseline
	Better   string  `json:"better"`
}

type scenario struct {
	group string
	name  string
	run   func(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error)
}

var scenarios []scenario

// stats counts the RPCs of the running scenario's client; measure turns
// them into each variant's rpcsPerOp.
var stats = &rpcstats.Stats{}

func main() {
	// The emulator's own speed is part of what this measures: its JVM
	// compiles as it would anywhere (tests run it lean).
	emulators.FullJIT = true
	var cfg config
	var only, jsonPath string
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "how long each throughput variant runs")
	flag.IntVar(&cfg.concurrency, "concurrency", 32, "workers in the contended scenarios")
	flag.IntVar(&cfg.rounds, "rounds", 20, "rounds of the race scenarios (the baseline runs at most 5)")
	flag.StringVar(&only, "only", "", "run only scenarios of this group (lock, counter, booking, optimistic, metrics)")
	flag.StringVar(&jsonPath, "json", "bench-results.json", "where to write the JSON results")
	cpuProfile := flag.String("cpuprofile", "", "write the bench process's CPU profile here (go tool pprof -top FILE)")
	mutexProfile := flag.String("mutexprofile", "", "write the bench process's mutex contention profile here")
	flag.Parse()
	stop, err := startProfiles(*cpuProfile, *mutexProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	err = run(cfg, only, jsonPath)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// startProfiles starts the profiles asked for; the returned func writes
// them. The client side shares the machine's cores with the emulator, so
// what the clients burn is what the emulator does not get.
func startProfiles(cpuPath, mutexPath string) (stop func(), err error) {
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			return nil, err
		}
	}
	if mutexPath != "" {
		runtime.SetMutexProfileFraction(5)
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if mutexPath != "" {
			if f, err := os.Create(mutexPath); err == nil {
				pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}

func run(cfg config, only, jsonPath string) error {
	ctx := context.Background()
	emu, err := emulators.Start(ctx, emulators.Firestore)
	if err != nil {
		return err
	}
	defer emu.Stop()

	if err := warmUp(ctx, cfg, only); err != nil {
		return err
	}
	var results []result
	var comps []comparison
	for _, s := range scenarios {
		if only != "" && s.group != only {
			continue
		}
		fmt.Fprintf(os.Stderr, "running %-40s ...", s.name)
		start := time.Now()
		stats = &rpcstats.Stats{}
		c, err := rpcstats.NewClient(ctx, fmt.Sprintf("demo-bench-%d", time.Now().UnixNano()), stats)
		if err != nil {
			return err
		}
		rs, comp, err := s.run(ctx, c, cfg)
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, " %5.1fs\n", time.Since(start).Seconds())
		results = append(results, rs...)
		comps = append(comps, comp...)
	}
	printTable(results, comps)
	out := map[string]any{
		"date":        time.Now().UTC().Format(time.RFC3339),
		"machine":     fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		"go":          runtime.Version(),
		"emulators":   emulatorVersions(),
		"duration":    cfg.duration.String(),
		"concurrency": cfg.concurrency,
		"results":     results,
		"comparisons": comps,
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nJSON written to %s\n", jsonPath)
	return nil
}

// warmUp runs every scenario once, briefly, unmeasured: the emulator is a
// JVM, and whichever scenario ran first would otherwise pay for its JIT.
func warmUp(ctx context.Context, cfg config, only string) error {
	fmt.Fprintf(os.Stderr, "warming up the emulator ...")
	c, err := firestore.NewClient(ctx, "demo-bench-warmup")
	if err != nil {
		return err
	}
	defer c.Close()
	short := cfg
	short.duration, short.rounds, short.concurrency = time.Second, 2, min(cfg.concurrency, 8)
	for _, s := range scenarios {
		if only != "" && s.group != only {
			continue
		}
		if _, _, err := s.run(ctx, c, short); err != nil {
			return fmt.Errorf("warm-up %s: %w", s.name, err)
		}
	}
	fmt.Fprintln(os.Stderr, " done")
	return nil
}

func printTable(results []result, comps []comparison) {
	fmt.Printf("\n%-34s %-34s %8s %6s %10s %9s %9s %8s\n", "scenario", "variant", "ops", "errs", "ops/s", "p50 ms", "p99 ms", "RPCs/op")
	for _, r := range results {
		rpcs := "n/a"
		if r.RPCsPerOp != nil {
			rpcs = fmt.Sprintf("%.2f", *r.RPCsPerOp)
		}
		fmt.Printf("%-34s %-34s %8d %6d %10.1f %9.2f %9.2f %8s\n", r.Scenario, r.Variant, r.Ops, r.Errors, r.OpsPerS, r.P50ms, r.P99ms, rpcs)
	}
	fmt.Printf("\n%-34s %-26s %11s %11s %8s  %s\n", "scenario", "metric", "firelock", "baseline", "ratio", "better")
	for _, c := range comps {
		fmt.Printf("%-34s %-26s %11.2f %11.2f %7.2fx  %s\n", c.Scenario, c.Metric, c.Firelock, c.Baseline, c.Ratio, c.Better)
	}
}

func emulatorVersions() map[string]string {
	out, err := exec.Command("gcloud", "version").Output()
	v := map[string]string{}
	if err != nil {
		return v
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.Contains(f[0], "emulator") {
			v[f[0]] = f[1]
		}
	}
	return v
}

// measure runs op on workers goroutines until d has passed and returns the
// op count, error count and latency quantiles. op's errors count as errors,
// not as a failed run; ok(err) marks an expected outcome (e.g. ErrHeld).
func measure(ctx context.Context, scenarioName, variant string, workers int, d time.Duration, op func(ctx context.Context, w, i int) error, ok func(error) bool) result {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	start := time.Now()
	before := stats.Snapshot()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; time.Now().Before(deadline); i++ {
				t := time.Now()
				err := op(ctx, w, i)
				if err != nil && (ok == nil || !ok(err)) {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	r := summarize(scenarioName, variant, lat, int(errs.Load()), time.Since(start))
	r.RPCsPerOp = rpcsPer(before, r.Ops+r.Errors)
	if e, ok := firstErr.Load().(string); ok {
		r.Note = "first error: " + e
	}
	return r
}

// rpcsPer is the RPCs counted since before, per one of n operations.
func rpcsPer(before rpcstats.Counts, n int) *float64 {
	per := float64(stats.Snapshot().Sub(before).Calls()) / float64(max(n, 1))
	return &per
}

// newLocker is lock.New whose commit client (grants, renewals, releases)
// counts into the scenario's stats like the Firestore client does, on a
// connection of its own: Close the Locker when the scenario is done.
func newLocker(c *firestore.Client, path string, opts ...lock.Option) (*lock.Locker, error) {
	counted, err := stats.ClientOptions()
	if err != nil {
		return nil, err
	}
	return lock.New(c, path, append(opts, lock.WithClientOptions(counted...))...)
}

func summarize(scenarioName, variant string, lat []time.Duration, errs int, elapsed time.Duration) result {
	slices.Sort(lat)
	r := result{Scenario: scenarioName, Variant: variant, Ops: len(lat), Errors: errs}
	if elapsed > 0 {
		r.OpsPerS = float64(len(lat)) / elapsed.Seconds()
	}
	r.P50ms = ms(quantile(lat, 0.50))
	r.P99ms = ms(quantile(lat, 0.99))
	return r
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
