// Package linearize records what many concurrent clients asked of the real
// system and what they were told, and checks the whole history for
// linearizability against a short sequential specification, with Porcupine
// (github.com/anishathalye/porcupine), the way etcd's robustness tests do.
//
// A test records each operation from the client that makes it:
//
//	h := linearize.NewHistory[Input, Output]()
//	call := h.Call(client, Input{Key: "k", ...})
//	out, err := doIt(ctx)
//	if ambiguous(err) {
//		call.Unknown(Output{...}, err) // it may take effect later, or never
//	} else {
//		call.Return(Output{...})
//	}
//
// and then checks the history against a Model:
//
//	linearize.Require(t, model, h, time.Minute)
//
// # Unknown outcomes
//
// An operation whose outcome is unknown (a deadline, a dropped connection:
// the write may have landed unheard) is recorded with an open return, as
// etcd does: it may take effect at any moment after its call, even after
// the client gave up, or never. Porcupine may linearize it anywhere after
// its call, and Model.Unknown says what it does there: its effect where it
// can have taken effect, the state unchanged where it cannot. An unknown
// operation never makes a history illegal by itself; it can only explain
// what others saw.
//
// # Server time
//
// Call and return times are this process's monotonic clock: they order
// operations that did not overlap. Where the system answers with its own
// time (a commit time, a snapshot's read time, a lease's renewal time),
// put it in the output and let the model use it: Firestore decides expiry
// by its own clock, so a model must judge a lease's end by server times
// only, never by the client's. A model that keeps the latest server time it
// has linearized in its state, and refuses operations stamped earlier,
// orders the history by the server's clock as well.
//
// # Failures and replay
//
// A history that is not linearizable (or whose check timed out) fails the
// test with the path of Porcupine's HTML visualization, written to
// ArtifactDir: open it in a browser to see every operation per client, the
// longest linearizations found, and where each one got stuck. Seed gives a
// test's random choices a seed that a failure prints, and FIRELOCK_SEED
// replays (timing still varies from run to run). Duration lets one test
// serve both make test (seconds) and make soak (FIRELOCK_SOAK, minutes).
package linearize

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/firelock/firelock/internal/emulators"
)

// Model is a sequential specification of the system under test, over
// states S, inputs I and outputs O. Step and Unknown must be pure: they
// return a new state and never modify the one given (nor anything it
// shares, such as a map; prefer comparable values).
type Model[S, I, O any] struct {
	// Partition names the independent part of the system an operation
	// touches (a key): the history is linearizable if and only if each
	// part's is, and the parts are checked apart, which is far cheaper.
	// Nil: one part.
	Partition func(in I) string
	// Init is the state before any operation.
	Init func() S
	// Step says whether the operation in could have returned out in state
	// s, and the state after it.
	Step func(s S, in I, out O) (ok bool, next S)
	// Unknown is the state after an operation whose outcome is unknown
	// (History's Call.Unknown), if it took effect right after the
	// operations linearized before it; s unchanged where it cannot have
	// taken effect there. out holds what the client learnt all the same
	// (a read time from before the failure, say). It never refuses: an
	// operation that never took effect is linearized at the end.
	Unknown func(s S, in I, out O) S
	// Equal compares states; nil uses ==, which needs S comparable.
	Equal func(a, b S) bool
	// Hash, optional, speeds the search up: equal states, equal hashes.
	Hash func(s S) uint64
	// Describe and DescribeState, optional, label the visualization.
	Describe      func(in I, out O) string
	DescribeState func(s S) string
}

// outcome is what Porcupine holds as an operation's output.
type outcome[O any] struct {
	out     O
	unknown bool
	note    string // why it is unknown: the error, for the visualization
}

// porcupine turns the model into Porcupine's untyped one.
func (m Model[S, I, O]) porcupine() porcupine.Model {
	pm := porcupine.Model{
		Init: func() any { return m.Init() },
		Step: func(s, in, out any) (bool, any) {
			o := out.(outcome[O])
			if o.unknown {
				return true, m.Unknown(s.(S), in.(I), o.out)
			}
			return m.Step(s.(S), in.(I), o.out)
		},
		DescribeOperation: func(in, out any) string {
			o := out.(outcome[O])
			desc := fmt.Sprintf("%v -> %v", in, o.out)
			if m.Describe != nil {
				desc = m.Describe(in.(I), o.out)
			}
			if o.unknown {
				desc += " (unknown: " + o.note + ")"
			}
			return desc
		},
	}
	if m.Equal != nil {
		pm.Equal = func(a, b any) bool { return m.Equal(a.(S), b.(S)) }
	}
	if m.Hash != nil {
		pm.Hash = func(s any) uint64 { return m.Hash(s.(S)) }
	}
	if m.DescribeState != nil {
		pm.DescribeState = func(s any) string { return m.DescribeState(s.(S)) }
	}
	if m.Partition != nil {
		pm.Partition = func(ops []porcupine.Operation) [][]porcupine.Operation {
			parts := map[string][]porcupine.Operation{}
			for _, op := range ops {
				k := m.Partition(op.Input.(I))
				parts[k] = append(parts[k], op)
			}
			keys := slices.Sorted(maps.Keys(parts))
			out := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				out[i] = parts[k]
			}
			return out
		}
	}
	return pm
}

// History records operations of many concurrent clients. It is safe for
// concurrent use.
type History[I, O any] struct {
	start time.Time

	mu    sync.Mutex
	calls []*Call[I, O]
	notes []porcupine.Annotation
}

// NewHistory starts an empty history; its clock starts now.
func NewHistory[I, O any]() *History[I, O] {
	return &History[I, O]{start: time.Now()}
}

// Call is one operation, from its call until Return or Unknown.
type Call[I, O any] struct {
	h      *History[I, O]
	client int
	in     I
	called int64

	// under h.mu
	returned int64 // 0 until Return or Unknown
	out      outcome[O]
}

// at is t on the history's clock, in nanoseconds.
func (h *History[I, O]) at(t time.Time) int64 { return t.Sub(h.start).Nanoseconds() }

// Call records that client (numbered from 0; one row of the
// visualization) calls an operation with input in, now. Record it just
// before the request is sent.
func (h *History[I, O]) Call(client int, in I) *Call[I, O] {
	return h.CallAt(client, in, time.Now())
}

// CallAt records a call that began at began, learnt of only afterwards:
// a step inside another operation, such as one try of a call that tries
// again, whose own outcome then comes to light.
func (h *History[I, O]) CallAt(client int, in I, began time.Time) *Call[I, O] {
	c := &Call[I, O]{h: h, client: client, in: in, called: h.at(began)}
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	return c
}

// Return records the operation's known outcome, now: record it just after
// the answer came.
func (c *Call[I, O]) Return(out O) {
	c.finish(c.h.at(time.Now()), outcome[O]{out: out})
}

// Unknown records that the operation's outcome is unknown: it may take
// effect at any time after its call, or never. out holds whatever the
// client learnt all the same; cause is shown in the visualization.
func (c *Call[I, O]) Unknown(out O, cause error) {
	note := "no answer"
	if cause != nil {
		note = cause.Error()
	}
	c.finish(math.MaxInt64, outcome[O]{out: out, unknown: true, note: note})
}

func (c *Call[I, O]) finish(at int64, out outcome[O]) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if c.returned != 0 {
		panic("linearize: operation returned twice")
	}
	c.returned, c.out = max(at, c.called), out
}

// Annotate marks a span of the run in the visualization under tag (for
// example a fault the proxy injected), on the history's clock.
func (h *History[I, O]) Annotate(tag string, start, end time.Time, description string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, porcupine.Annotation{Tag: tag, Start: h.at(start), End: h.at(end), Description: description})
}

// operations is the history as Porcupine takes it. A call that never
// returned counts as unknown.
func (h *History[I, O]) operations() (ops []porcupine.Operation, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops = make([]porcupine.Operation, len(h.calls))
	for i, c := range h.calls {
		ret, out := c.returned, c.out
		if ret == 0 {
			ret, out = math.MaxInt64, outcome[O]{unknown: true, note: "never returned"}
		}
		if out.unknown {
			unknown++
		}
		ops[i] = porcupine.Operation{ClientId: c.client, Input: c.in, Call: c.called, Output: out, Return: ret}
	}
	return ops, unknown
}

// Result is what a check found.
type Result struct {
	// Verdict is porcupine.Ok, Illegal (not linearizable) or Unknown (the
	// check timed out).
	Verdict porcupine.CheckResult
	// Operations checked, of which Unknown had an unknown outcome, in
	// Partitions independent parts, of which Illegal were shown not
	// linearizable.
	Operations, Unknown, Partitions, Illegal int
	Took                                     time.Duration
	// Visualization is the HTML file written for a history that is not
	// shown linearizable; empty otherwise.
	Visualization string
}

func (r Result) String() string {
	s := fmt.Sprintf("%d operations (%d with unknown outcome) in %d partitions: %s in %v",
		r.Operations, r.Unknown, r.Partitions, r.Verdict, r.Took.Round(time.Millisecond))
	if r.Illegal > 0 {
		s += fmt.Sprintf(" (%d partitions not linearizable)", r.Illegal)
	}
	if r.Visualization != "" {
		s += "; visualization: " + r.Visualization + " (and a text report beside it)"
	}
	return s
}

// Check checks h against m for at most timeout. Unless the history is
// shown linearizable, it writes Porcupine's visualization of it to
// ArtifactDir and names the file in the result; beside it, with the
// extension .txt, a report of each partition that is not linearizable: its
// longest linearization, with the state after each step, and the
// operations none of which could come next.
func Check[S, I, O any](tb testing.TB, m Model[S, I, O], h *History[I, O], timeout time.Duration) Result {
	tb.Helper()
	ops, unknown := h.operations()
	pm := m.porcupine()
	start := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(pm, ops, timeout)
	res := Result{Verdict: verdict, Operations: len(ops), Unknown: unknown, Took: time.Since(start)}
	res.Partitions = len(info.PartialLinearizations())
	if verdict == porcupine.Ok {
		return res
	}
	parts := partitions(pm, ops)
	for i, longest := range info.PartialLinearizations() {
		if len(longestOf(longest)) < len(parts[i]) {
			res.Illegal++
		}
	}
	h.mu.Lock()
	info.AddAnnotations(h.notes)
	h.mu.Unlock()
	path := filepath.Join(ArtifactDir(tb), artifactName(tb.Name()))
	if err := porcupine.VisualizePath(pm, info, path+".html"); err != nil {
		tb.Errorf("linearize: write the visualization: %v", err)
		return res
	}
	if err := os.WriteFile(path+".txt", []byte(m.report(pm, parts, info)), 0o644); err != nil {
		tb.Errorf("linearize: write the report: %v", err)
	}
	res.Visualization = path + ".html"
	return res
}

// partitions splits ops as the checker does.
func partitions(pm porcupine.Model, ops []porcupine.Operation) [][]porcupine.Operation {
	if pm.Partition == nil {
		return [][]porcupine.Operation{ops}
	}
	return pm.Partition(ops)
}

// longestOf is the longest of a partition's partial linearizations.
func longestOf(linearizations [][]int) []int {
	if len(linearizations) == 0 {
		return nil
	}
	return slices.MaxFunc(linearizations, func(a, b []int) int { return cmp.Compare(len(a), len(b)) })
}

// report describes, as text, each partition that could not be
// linearized: the longest linearization found, with the state after each
// step, and the operations, none of which could come next.
func (m Model[S, I, O]) report(pm porcupine.Model, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) string {
	describeState := func(s any) string { return fmt.Sprint(s) }
	if pm.DescribeState != nil {
		describeState = pm.DescribeState
	}
	at := func(t int64) string {
		if t == math.MaxInt64 {
			return "open"
		}
		return fmt.Sprintf("%.3fs", float64(t)/1e9)
	}
	var b strings.Builder
	// Porcupine numbers each part's operations in the order given.
	for i, longest := range info.PartialLinearizations() {
		best, part := longestOf(longest), parts[i]
		if len(best) == len(part) {
			continue
		}
		name := ""
		if m.Partition != nil {
			name = fmt.Sprintf(" %q", m.Partition(part[0].Input.(I)))
		}
		fmt.Fprintf(&b, "Partition%s is not linearizable. Its longest linearization, %d of %d operations:\n", name, len(best), len(part))
		state := pm.Init()
		placed := make([]bool, len(part))
		for j, id := range best {
			op := part[id]
			_, state = pm.Step(state, op.Input, op.Output)
			placed[id] = true
			fmt.Fprintf(&b, "%4d. client %d [%s, %s] %s\n      => %s\n", j+1, op.ClientId, at(op.Call), at(op.Return),
				pm.DescribeOperation(op.Input, op.Output), describeState(state))
		}
		fmt.Fprintf(&b, "None of these can come next:\n")
		var rest []porcupine.Operation
		for id, op := range part {
			if !placed[id] {
				rest = append(rest, op)
			}
		}
		slices.SortFunc(rest, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		for _, op := range rest {
			fmt.Fprintf(&b, "      client %d [%s, %s] %s\n", op.ClientId, at(op.Call), at(op.Return), pm.DescribeOperation(op.Input, op.Output))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Require is Check that fails tb unless the history is shown linearizable
// (a check that timed out fails too: it proved nothing).
func Require[S, I, O any](tb testing.TB, m Model[S, I, O], h *History[I, O], timeout time.Duration) Result {
	tb.Helper()
	res := Check(tb, m, h, timeout)
	switch res.Verdict {
	case porcupine.Ok:
	case porcupine.Illegal:
		tb.Errorf("history is not linearizable: %v", res)
	default:
		tb.Errorf("the check did not finish within %v (make the history shorter): %v", timeout, res)
	}
	return res
}

// ArtifactDir is where visualizations go: $FIRELOCK_ARTIFACTS/linearize if
// that is set, else test-results/linearize at the repository root
// (git-ignored). It is created if need be.
func ArtifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("FIRELOCK_ARTIFACTS")
	if dir == "" {
		root, err := emulators.ProjectRoot()
		if err != nil {
			tb.Fatal(err)
		}
		dir = filepath.Join(root, "test-results")
	}
	dir = filepath.Join(dir, "linearize")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// artifactName turns a test name into a file name.
func artifactName(test string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, test)
}

// Seed returns the seed for a test's random choices: $FIRELOCK_SEED if
// set; else in a soak ($FIRELOCK_SOAK set) a fresh one each run, to explore;
// else fixed (0: a fresh one too). It logs the seed, and repeats it with how
// to replay if the test fails.
func Seed(tb testing.TB, fixed uint64) uint64 {
	tb.Helper()
	seed := fixed
	if s := os.Getenv("FIRELOCK_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			tb.Fatalf("FIRELOCK_SEED=%q: %v", s, err)
		}
	} else if seed == 0 || os.Getenv("FIRELOCK_SOAK") != "" {
		seed = uint64(time.Now().UnixNano())
	}
	tb.Logf("seed %d", seed)
	replay := fmt.Sprintf("FIRELOCK_SEED=%d", seed)
	if soak := os.Getenv("FIRELOCK_SOAK"); soak != "" {
		replay += " FIRELOCK_SOAK=" + soak
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("replay: %s go test -run '^%s$' (the timing still varies)", replay, strings.Split(tb.Name(), "/")[0])
		}
	})
	return seed
}

// Duration is how long a test's workload runs: short, or $FIRELOCK_SOAK
// (a Go duration such as 5m) when set, as make soak sets it.
func Duration(tb testing.TB, short time.Duration) time.Duration {
	tb.Helper()
	s := os.Getenv("FIRELOCK_SOAK")
	if s == "" {
		return short
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		tb.Fatalf("FIRELOCK_SOAK=%q: %v", s, err)
	}
	return cmp.Or(d, short)
}
