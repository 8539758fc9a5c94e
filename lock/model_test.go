package lock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/firelock/firelock/internal/testkit/linearize"
)

// The lock's sequential specification (CONTRACT §1), for checking recorded
// histories with internal/testkit/linearize: one lease document per key, and beside
// it a register written only through Guard.
//
// Time is Firestore's: every operation that learns a server time (a
// grant's commit time, a renewal's renewedAt, a read or Guard's read time,
// a guarded write's commit time) is linearized at it, in the order of the
// server's clock; the state's now is the latest such time so far, a lower
// bound of the server's clock at that point. A lease's end is renewedAt +
// leaseSeconds on that clock, never the client's.

// lockOp is what an operation does.
type lockOp uint8

const (
	opTry          lockOp = iota // TryAcquire
	opAcquire                    // Acquire (waits)
	opRenew                      // Lease.Renew
	opRelease                    // Lease.Release
	opWrite                      // a transaction that calls Guard, reads the register and writes it
	opReadLease                  // a plain read of the lease document
	opReadRegister               // a plain read of the register
	opRenewCall                  // Lease.Renew is called: recorded as an instant, just before the opRenew it starts
)

var opNames = [...]string{"try", "acquire", "renew", "release", "guarded write", "read lease", "read register", "renew call"}

func (o lockOp) String() string { return opNames[o] }

type lockIn struct {
	Op    lockOp
	Key   string
	Owner string // the Locker's owner (grants)
	Lease int    // the acquisition that renews, releases or writes: its grant's number
	Value int64  // what a guarded write writes
}

// answer is how an operation ended, when it is known.
type answer uint8

const (
	answerOK      answer = iota
	answerHeld           // ErrHeld
	answerNotHeld        // ErrNotHeld
	answerFailed         // failed before it could change anything (a guarded write whose transaction never committed)
)

type lockOut struct {
	Answer answer
	// A grant: the acquisition's number, and what the Lease says (server
	// times in Unix ns; Token in µs, as Lease.Token).
	Lease                   int
	Token                   int64
	AcquiredAt, RenewedAt   int64
	End                     int64 // RenewedAt + the lease's length
	Holder                  string
	At                      int64 // the server time it happened at: read time of a read or an ErrHeld, commit time of a guarded write
	Checked                 int64 // a guarded write: its Guard's read time
	Exists                  bool  // a read of the lease: is there a document
	Owner                   string
	ReadAcquiredAt, ReadEnd int64 // a read of the lease: the document's acquiredAt and lease end
	Value                   int64 // the register as read (a guarded write: as its transaction read it)
}

// grant is the lease document as the model knows it.
type grant struct {
	Lease int // the acquisition's number; 0 with Phantom
	// Phantom: a grant whose outcome is unknown, which may stand in the
	// document (and be deleted again by its settling) at any time; its
	// times are unknown.
	Phantom    bool
	Owner      string
	AcquiredAt int64
	Token      int64
	Length     int64 // the lease's length, ns
	End        int64 // renewedAt + length
	// EndUnknown: a renewal of unknown outcome may have moved the end
	// later than End.
	EndUnknown bool
	// Renewing: a Renew of this lease was called and has not answered;
	// RenewCalled is a lower bound of the server time it was called at.
	Renewing    bool
	RenewCalled int64
}

func (g grant) exists() bool { return g.Lease != 0 || g.Phantom }

// lockState is one key's lease document and register.
type lockState struct {
	Now        int64 // the latest server time linearized so far
	Doc        grant // the lease document; zero: none
	LastToken  int64 // the highest token granted so far
	Value      int64 // the register
	ValueToken int64 // the token of the grant under which the register was written
}

// liveAt: the document's lease, known to the model, may still run at
// server time t.
func (g grant) liveAt(t int64) bool { return g.EndUnknown || t < g.End }

var lockModel = linearize.Model[lockState, lockIn, lockOut]{
	Partition: func(in lockIn) string { return in.Key },
	Init:      func() lockState { return lockState{} },
	Step:      lockStep,
	Unknown:   lockUnknown,
	Describe:  describeLockOp,
	DescribeState: func(s lockState) string {
		d := "free"
		switch {
		case s.Doc.Phantom:
			d = fmt.Sprintf("maybe granted to %s (unknown outcome)", s.Doc.Owner)
		case s.Doc.exists():
			d = fmt.Sprintf("#%d of %s, token %d, ends %s", s.Doc.Lease, s.Doc.Owner, s.Doc.Token, clock(s.Doc.End))
			if s.Doc.EndUnknown {
				d += " or later"
			}
		}
		return fmt.Sprintf("%s; register %d (token %d); server time ≥ %s", d, s.Value, s.ValueToken, clock(s.Now))
	},
}

// lockStep is CONTRACT §1 for an operation whose outcome is known.
func lockStep(s lockState, in lockIn, out lockOut) (bool, lockState) {
	switch in.Op {
	case opTry, opAcquire:
		switch out.Answer {
		case answerOK:
			at := out.Token * 1000 // the grant commits at its token
			switch {
			case at < s.Now, out.Token <= s.LastToken, out.AcquiredAt > at:
				return false, s // tokens strictly increase, in the server's order
			case s.Doc.exists() && !s.Doc.Phantom && s.Doc.End > at:
				return false, s // a live lease is never taken over
			}
			s.Now, s.LastToken = at, out.Token
			s.Doc = grant{Lease: out.Lease, Owner: in.Owner, AcquiredAt: out.AcquiredAt, Token: out.Token,
				Length: out.End - out.RenewedAt, End: out.End}
			return true, s
		case answerHeld:
			if out.Holder == "" { // every try lost to a concurrent grant: names no one
				return true, s
			}
			if out.At < s.Now || !s.Doc.exists() || s.Doc.Owner != out.Holder {
				return false, s
			}
			if s.Doc.Phantom {
				s.Now = out.At
				return true, s
			}
			if unheardRenewal(s.Doc, out.End, out.At) {
				s.Doc.End = out.End
			}
			if !(s.Doc.liveAt(out.At) && (s.Doc.EndUnknown || out.End <= s.Doc.End)) {
				return false, s // ErrHeld only for a live lease, ending when it does
			}
			s.Now = out.At
			return true, s
		}
		return false, s
	case opRenew:
		switch out.Answer {
		case answerOK:
			if s.Doc.Lease != in.Lease || s.Doc.Phantom {
				return false, s // only the holder renews
			}
			// A renewal settled by reading back may report an earlier
			// renewal of its own that landed unheard: its time need not
			// be the latest.
			s.Now = max(s.Now, out.RenewedAt)
			s.Doc.End = max(s.Doc.End, out.End)
			s.Doc.Renewing = false
			return true, s
		case answerNotHeld:
			return s.Doc.Lease != in.Lease, s
		}
		return false, s
	case opRenewCall:
		if s.Doc.Lease == in.Lease && !s.Doc.Phantom {
			s.Doc.Renewing, s.Doc.RenewCalled = true, s.Now
		}
		return true, s
	case opRelease:
		switch out.Answer {
		case answerOK:
			// Only the holder's own grant is deleted. A release whose
			// answer was lost reports success also when its lease ended
			// and went meanwhile: nothing to delete then.
			if s.Doc.Lease == in.Lease {
				s.Doc = grant{}
			}
			return true, s
		case answerNotHeld:
			return s.Doc.Lease != in.Lease, s // and changes nothing
		}
		return false, s
	case opWrite:
		switch out.Answer {
		case answerOK:
			if out.At < s.Now || out.Checked > out.At {
				return false, s
			}
			ok, next := guardedWrite(s, in, out)
			if ok {
				next.Now = out.At
			}
			return ok, next
		case answerNotHeld, answerFailed:
			return true, s // never committed
		}
		return false, s
	case opReadLease:
		if out.At < s.Now {
			return false, s
		}
		s.Now = max(s.Now, out.At-int64(readSkew))
		switch {
		case !out.Exists:
			return !s.Doc.exists() || s.Doc.Phantom, s
		case s.Doc.Phantom:
			return out.Owner == s.Doc.Owner, s
		}
		if !s.Doc.exists() || out.Owner != s.Doc.Owner || out.ReadAcquiredAt != s.Doc.AcquiredAt {
			return false, s
		}
		if unheardRenewal(s.Doc, out.ReadEnd, out.At) {
			s.Doc.End = out.ReadEnd
		}
		return s.Doc.EndUnknown || out.ReadEnd <= s.Doc.End, s
	case opReadRegister:
		if out.At < s.Now || out.Value != s.Value {
			return false, s
		}
		s.Now = max(s.Now, out.At-int64(readSkew))
		return true, s
	}
	return false, s
}

// unheardRenewal: a read at server time at that shows the holder's lease
// ending at end, later than any renewal the model has placed, may be a
// renewal of the holder's own whose answer is still to come. Renew writes
// again, on the update time it reads back, when its first attempt failed
// ambiguously or on a conflict; the first may have landed all the same,
// so one Renew can move the end twice, and a reader can see the first
// move before the Renew's answer names the second. So only while a Renew
// of this lease is in flight, and stamped by the server between its call
// and the read; nothing else moves a lease's end.
func unheardRenewal(g grant, end, at int64) bool {
	stamped := end - g.Length
	return g.Renewing && end > g.End && stamped <= at && stamped >= g.RenewCalled
}

// guardedWrite applies a guarded write that committed: only the latest
// grant's holder writes, while its lease was live when Guard read it, and
// never under a token older than the register's.
func guardedWrite(s lockState, in lockIn, out lockOut) (bool, lockState) {
	if s.Doc.Lease != in.Lease || s.Doc.Phantom || !s.Doc.liveAt(out.Checked) ||
		out.Value != s.Value || s.ValueToken > s.Doc.Token {
		return false, s
	}
	s.Value, s.ValueToken = in.Value, s.Doc.Token
	return true, s
}

// lockUnknown is the state after an operation whose outcome is unknown,
// if it took effect at this point; s unchanged where it cannot have.
func lockUnknown(s lockState, in lockIn, out lockOut) lockState {
	switch in.Op {
	case opTry, opAcquire:
		// A grant may have landed (and been deleted again by its
		// settling, or not): only once the lease before it had ended.
		if s.Doc.exists() && !s.Doc.Phantom {
			s.Now = max(s.Now, s.Doc.End)
		}
		s.Doc = grant{Phantom: true, Owner: in.Owner}
	case opRenew:
		if s.Doc.Lease == in.Lease && !s.Doc.Phantom {
			s.Doc.EndUnknown = true
		}
	case opRelease:
		if s.Doc.Lease == in.Lease && !s.Doc.Phantom {
			s.Doc = grant{}
		}
	case opWrite:
		// It committed, if at all, after its Guard read at Checked, under
		// the same conditions as a write known to have committed.
		if out.Checked != 0 {
			if ok, next := guardedWrite(s, in, out); ok {
				next.Now = max(s.Now, out.Checked)
				return next
			}
		}
	}
	return s
}

// readSkew: the emulator stamps a commit before the commit shows, so a
// read stamped up to this long after a commit's time may not see it yet
// (a CI run, 2026-11-26: a read of the lease stamped 0.6 ms after a
// concurrent grant's commit time, its token, showed no lease). A read is
// placed at a server time in [its read time − readSkew, its read time], as
// in booking's seat model. Production Firestore has no such window.
const readSkew = 2 * time.Millisecond

func describeLockOp(in lockIn, out lockOut) string {
	var did string
	switch in.Op {
	case opTry, opAcquire:
		did = fmt.Sprintf("%s %s as %s", in.Op, in.Key, short(in.Owner))
	case opWrite:
		did = fmt.Sprintf("#%d guarded write %d", in.Lease, in.Value)
	case opReadLease, opReadRegister:
		did = in.Op.String()
	case opRenewCall:
		return fmt.Sprintf("#%d %s", in.Lease, in.Op)
	default:
		did = fmt.Sprintf("#%d %s", in.Lease, in.Op)
	}
	var got string
	switch out.Answer {
	case answerHeld:
		got = "ErrHeld"
		if out.Holder != "" {
			got += fmt.Sprintf(" by %s until %s at %s", short(out.Holder), clock(out.End), clock(out.At))
		}
	case answerNotHeld:
		got = "ErrNotHeld"
	case answerFailed:
		got = "failed"
	default:
		switch {
		case in.Op == opRelease:
			got = "ok"
		case out == lockOut{}: // an unknown outcome, with nothing learnt
			got = "?"
		case in.Op == opTry, in.Op == opAcquire:
			got = fmt.Sprintf("#%d token %d until %s", out.Lease, out.Token, clock(out.End))
		case in.Op == opRenew:
			got = "renewed until " + clock(out.End)
		case in.Op == opWrite:
			got = fmt.Sprintf("read %d, checked at %s, committed at %s", out.Value, clock(out.Checked), clock(out.At))
		case in.Op == opReadLease:
			got = "none"
			if out.Exists {
				got = fmt.Sprintf("%s acquired %s until %s", short(out.Owner), clock(out.ReadAcquiredAt), clock(out.ReadEnd))
			}
			got += " at " + clock(out.At)
		case in.Op == opReadRegister:
			got = fmt.Sprintf("%d at %s", out.Value, clock(out.At))
		}
	}
	return did + " -> " + got
}

// clock shows a server time (Unix ns) as a time of day, to the µs.
func clock(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000000")
}

func short(owner string) string { return owner[:min(len(owner), 6)] }

// modelOp is one operation of a hand-written history.
type modelOp struct {
	client  int
	in      lockIn
	out     lockOut
	unknown bool
}

// checkModel checks ops, one after another in real time, against the model.
func checkModel(t *testing.T, ops ...modelOp) porcupine.CheckResult {
	t.Helper()
	t.Setenv("FIRELOCK_ARTIFACTS", t.TempDir())
	h := linearize.NewHistory[lockIn, lockOut]()
	for _, op := range ops {
		c := h.Call(op.client, op.in)
		if op.unknown {
			c.Unknown(op.out, errors.New("deadline exceeded"))
		} else {
			c.Return(op.out)
		}
	}
	return linearize.Check(t, lockModel, h, 10*time.Second).Verdict
}

// The model on hand-written histories: server times in seconds, leases of
// 10 s, grants #1 (owner a) and #2 (owner b).
func TestLockModel(t *testing.T) {
	s := func(sec float64) int64 { return int64(sec * 1e9) }
	grantOf := func(n int, owner string, at float64) modelOp {
		return modelOp{client: n, in: lockIn{Op: opTry, Key: "k", Owner: owner},
			out: lockOut{Lease: n, Token: s(at) / 1000, AcquiredAt: s(at), RenewedAt: s(at), End: s(at + 10)}}
	}
	heldBy := func(owner string, at, until float64) modelOp {
		return modelOp{client: 9, in: lockIn{Op: opTry, Key: "k", Owner: "c"},
			out: lockOut{Answer: answerHeld, Holder: owner, At: s(at), End: s(until)}}
	}
	write := func(n int, value int64, checked, at float64, read int64) modelOp {
		return modelOp{client: n, in: lockIn{Op: opWrite, Key: "k", Lease: n, Value: value},
			out: lockOut{Checked: s(checked), At: s(at), Value: read}}
	}
	renew := func(n int, at float64) modelOp {
		return modelOp{client: n, in: lockIn{Op: opRenew, Key: "k", Lease: n}, out: lockOut{RenewedAt: s(at), End: s(at + 10)}}
	}
	renewCall := func(n int) modelOp { return modelOp{client: n, in: lockIn{Op: opRenewCall, Key: "k", Lease: n}} }
	release := func(n int, a answer) modelOp {
		return modelOp{client: n, in: lockIn{Op: opRelease, Key: "k", Lease: n}, out: lockOut{Answer: a}}
	}
	readNone := func(at float64) modelOp {
		return modelOp{client: 8, in: lockIn{Op: opReadLease, Key: "k"}, out: lockOut{At: s(at)}}
	}
	readRegister := func(at float64, value int64) modelOp {
		return modelOp{client: 8, in: lockIn{Op: opReadRegister, Key: "k"}, out: lockOut{At: s(at), Value: value}}
	}
	unknown := func(op modelOp) modelOp { op.unknown = true; op.out = lockOut{}; return op }
	// A guarded write whose commit's answer was lost: its Guard's read is known.
	unknownWrite := func(n int, value int64, checked float64, read int64) modelOp {
		op := write(n, value, checked, 0, read)
		op.unknown = true
		return op
	}

	cases := []struct {
		name string
		ops  []modelOp
		want porcupine.CheckResult
	}{
		{"grant, held, guarded write, renew, release, grant", []modelOp{
			grantOf(1, "a", 1), heldBy("a", 2, 11), write(1, 7, 3, 3.1, 0), renew(1, 4), heldBy("a", 12, 14),
			release(1, answerOK), readNone(13), grantOf(2, "b", 15)}, porcupine.Ok},
		{"takeover after the end", []modelOp{grantOf(1, "a", 1), grantOf(2, "b", 11)}, porcupine.Ok},
		{"takeover of a live lease", []modelOp{grantOf(1, "a", 1), grantOf(2, "b", 10.9)}, porcupine.Illegal},
		{"a renewed lease is live past its first end", []modelOp{grantOf(1, "a", 1), renew(1, 5), grantOf(2, "b", 12)}, porcupine.Illegal},
		{"tokens must increase", []modelOp{grantOf(2, "b", 20), grantOf(1, "a", 19)}, porcupine.Illegal},
		{"ErrHeld for a free key", []modelOp{heldBy("a", 1, 2)}, porcupine.Illegal},
		{"ErrHeld for an ended lease", []modelOp{grantOf(1, "a", 1), heldBy("a", 11, 11)}, porcupine.Illegal},
		{"a stale holder's guarded write after a takeover", []modelOp{
			grantOf(1, "a", 1), grantOf(2, "b", 12), write(1, 7, 13, 13.1, 0)}, porcupine.Illegal},
		{"a guarded write checked after the lease ended", []modelOp{grantOf(1, "a", 1), write(1, 7, 11.5, 11.6, 0)}, porcupine.Illegal},
		{"a guarded write that read a stale register", []modelOp{
			grantOf(1, "a", 1), write(1, 7, 2, 2.1, 0), write(1, 8, 3, 3.1, 0)}, porcupine.Illegal},
		{"a stale release succeeds but deletes nothing", []modelOp{
			grantOf(1, "a", 1), grantOf(2, "b", 12), release(1, answerOK), heldBy("b", 13, 22)}, porcupine.Ok},
		{"a read within readSkew after a grant's commit may miss it", []modelOp{
			grantOf(1, "a", 1), release(1, answerOK), readNone(12.0006), grantOf(2, "b", 12)}, porcupine.Ok},
		{"but not a read later than that", []modelOp{
			grantOf(1, "a", 1), release(1, answerOK), readNone(12.003), grantOf(2, "b", 12)}, porcupine.Illegal},
		{"a stale release that deleted the new grant", []modelOp{
			grantOf(1, "a", 1), grantOf(2, "b", 12), release(1, answerOK), readNone(13)}, porcupine.Illegal},
		{"ErrNotHeld from the holder", []modelOp{grantOf(1, "a", 1), release(1, answerNotHeld)}, porcupine.Illegal},
		{"a grant of unknown outcome may hold the key", []modelOp{unknown(grantOf(1, "a", 1)), heldBy("a", 2, 12)}, porcupine.Ok},
		{"or not", []modelOp{unknown(grantOf(1, "a", 1)), grantOf(2, "b", 2)}, porcupine.Ok},
		{"a grant of unknown outcome cannot excuse a takeover of a live lease", []modelOp{
			grantOf(1, "a", 1), unknown(grantOf(3, "c", 2)), grantOf(2, "b", 5)}, porcupine.Illegal},
		{"a renewal of unknown outcome may have moved the end", []modelOp{
			grantOf(1, "a", 1), unknown(renew(1, 5)), heldBy("a", 12, 15)}, porcupine.Ok},
		{"a renewal that landed unheard shows before its Renew's answer", []modelOp{
			grantOf(1, "a", 1), renewCall(1), heldBy("a", 5, 14.5), renew(1, 6), heldBy("a", 7, 16)}, porcupine.Ok},
		{"a renewal stamped before its Renew was called", []modelOp{
			grantOf(1, "a", 1), heldBy("a", 3, 11), renewCall(1), heldBy("a", 5, 12.5), renew(1, 6)}, porcupine.Illegal},
		{"a lease end no renewal could have stamped yet", []modelOp{grantOf(1, "a", 1), heldBy("a", 3, 14)}, porcupine.Illegal},
		{"a lease end moved with no renewal called", []modelOp{grantOf(1, "a", 1), heldBy("a", 5, 14.5)}, porcupine.Illegal},
		{"a lease end moved after the last renewal answered", []modelOp{
			grantOf(1, "a", 1), renew(1, 4), heldBy("a", 15, 16)}, porcupine.Illegal},
		{"a register read sees the latest guarded write", []modelOp{
			grantOf(1, "a", 1), write(1, 7, 2, 2.1, 0), readRegister(3, 0)}, porcupine.Illegal},
		{"a guarded write of unknown outcome may have committed", []modelOp{
			grantOf(1, "a", 1), unknownWrite(1, 7, 2, 0), readRegister(3, 7)}, porcupine.Ok},
		{"or not", []modelOp{grantOf(1, "a", 1), unknownWrite(1, 7, 2, 0), readRegister(3, 0)}, porcupine.Ok},
		{"but not after a takeover", []modelOp{
			grantOf(1, "a", 1), grantOf(2, "b", 12), unknownWrite(1, 7, 13, 0), readRegister(14, 7)}, porcupine.Illegal},
		{"a release of unknown outcome may have freed the key", []modelOp{
			grantOf(1, "a", 1), unknown(release(1, answerOK)), grantOf(2, "b", 2)}, porcupine.Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkModel(t, c.ops...); got != c.want {
				t.Errorf("%v, want %v", got, c.want)
			}
		})
	}
}
