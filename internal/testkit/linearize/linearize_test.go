package linearize

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// A register per key: write(v) and read() -> v.
type regIn struct {
	Key   string
	Write bool
	Value int
}

type regOut struct{ Value int }

var register = Model[int, regIn, regOut]{
	Partition: func(in regIn) string { return in.Key },
	Init:      func() int { return 0 },
	Step: func(s int, in regIn, out regOut) (bool, int) {
		if in.Write {
			return true, in.Value
		}
		return out.Value == s, s
	},
	Unknown: func(s int, in regIn, _ regOut) int {
		if in.Write {
			return in.Value
		}
		return s
	},
}

func TestSequentialHistoryIsLinearizable(t *testing.T) {
	h := NewHistory[regIn, regOut]()
	h.Call(0, regIn{Key: "a", Write: true, Value: 1}).Return(regOut{})
	h.Call(1, regIn{Key: "b", Write: true, Value: 2}).Return(regOut{})
	h.Call(0, regIn{Key: "a"}).Return(regOut{Value: 1})
	h.Call(1, regIn{Key: "b"}).Return(regOut{Value: 2})
	res := Require(t, register, h, time.Second)
	if res.Operations != 4 || res.Partitions != 2 || res.Visualization != "" {
		t.Fatalf("result %v: want 4 operations in 2 partitions and no visualization", res)
	}
}

// A read that misses a write that returned before it began is caught,
// and the visualization is written.
func TestStaleReadIsCaughtAndVisualized(t *testing.T) {
	t.Setenv("FIRELOCK_ARTIFACTS", t.TempDir())
	h := NewHistory[regIn, regOut]()
	h.Call(0, regIn{Key: "a", Write: true, Value: 1}).Return(regOut{})
	h.Call(1, regIn{Key: "a"}).Return(regOut{Value: 0})
	res := Check(t, register, h, time.Second)
	if res.Verdict != porcupine.Illegal || res.Illegal != 1 {
		t.Fatalf("%v, want Illegal in 1 partition", res)
	}
	b, err := os.ReadFile(res.Visualization)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<html") {
		t.Fatalf("%s is not an HTML visualization", res.Visualization)
	}
	report, err := os.ReadFile(strings.TrimSuffix(res.Visualization, ".html") + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), `Partition "a" is not linearizable. Its longest linearization, 1 of 2 operations`) {
		t.Fatalf("report:\n%s", report)
	}
}

// An operation with an unknown outcome may have taken effect, at any time
// after its call, even after its client gave up, or never.
func TestUnknownOutcomeMayOrMayNotTakeEffect(t *testing.T) {
	for _, seen := range []int{0, 7} {
		h := NewHistory[regIn, regOut]()
		h.Call(0, regIn{Key: "a", Write: true, Value: 7}).Unknown(regOut{}, errors.New("deadline exceeded"))
		h.Call(1, regIn{Key: "a"}).Return(regOut{Value: 0})
		h.Call(1, regIn{Key: "a"}).Return(regOut{Value: seen})
		Require(t, register, h, time.Second)
	}
	// Once seen, it cannot be unseen.
	h := NewHistory[regIn, regOut]()
	h.Call(0, regIn{Key: "a", Write: true, Value: 7}).Unknown(regOut{}, nil)
	h.Call(1, regIn{Key: "a"}).Return(regOut{Value: 7})
	h.Call(1, regIn{Key: "a"}).Return(regOut{Value: 0})
	t.Setenv("FIRELOCK_ARTIFACTS", t.TempDir())
	if res := Check(t, register, h, time.Second); res.Verdict != porcupine.Illegal {
		t.Fatalf("a write seen and then unseen: %v, want Illegal", res)
	}
}

// A call that never returned counts as unknown.
func TestCallNeverReturnedIsUnknown(t *testing.T) {
	h := NewHistory[regIn, regOut]()
	h.Call(0, regIn{Key: "a", Write: true, Value: 3})
	h.Call(1, regIn{Key: "a"}).Return(regOut{Value: 3})
	if res := Require(t, register, h, time.Second); res.Unknown != 1 {
		t.Fatalf("%v: want the pending call counted unknown", res)
	}
}

func TestSeedAndDurationFromTheEnvironment(t *testing.T) {
	t.Setenv("FIRELOCK_SOAK", "")
	t.Setenv("FIRELOCK_SEED", "")
	if s := Seed(t, 1); s != 1 {
		t.Errorf("seed %d, want the fixed 1", s)
	}
	t.Setenv("FIRELOCK_SEED", "42")
	if s := Seed(t, 1); s != 42 {
		t.Errorf("seed %d, want 42 from FIRELOCK_SEED", s)
	}
	if d := Duration(t, 3*time.Second); d != 3*time.Second {
		t.Errorf("duration %v without FIRELOCK_SOAK, want the short one", d)
	}
	t.Setenv("FIRELOCK_SOAK", "2m")
	if d := Duration(t, 3*time.Second); d != 2*time.Minute {
		t.Errorf("duration %v, want FIRELOCK_SOAK's 2m", d)
	}
}
