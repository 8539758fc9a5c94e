package door

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/firelock/firelock/internal/testkit/linearize"
)

// The door's sequential specification (CONTRACT §13), for checking
// recorded histories with internal/testkit/linearize: one ticket per
// partition, its check-in, its version and status, and the scans already
// applied (by nonce).
//
//   - A scan in of a ticket that is not in is admitted (the first entry, or
//     with reentry after an exit); of a ticket in, already_in naming the
//     gate it went in at (conflict for an offline upload); after an exit
//     without reentry, no_reentry. A scan out of a ticket in is exited with
//     reentry, no_reentry without; of a ticket not in, not_in.
//   - A cancelled ticket is cancelled, a code older than the ticket's
//     version reissued, whatever the check-in.
//   - A nonce applied before answers as it did then (already_in with the
//     gate it named then), and changes nothing, for the same scan (ticket,
//     gate, direction); for another, nonce_reused.
//   - A transfer of a ticket with a check-in is ticket_used, of a
//     cancelled one ticket_cancelled; else the version goes up by one. One
//     refused because it names an owner the ticket no longer has changes
//     nothing. A cancel (by the booker, alice) of a ticket with a
//     check-in, or transferred away (to bob: an even version, as the
//     workers pass tickets between alice and bob), is ticket_used; else it
//     is cancelled (again: harmless).
//   - A read of the check-in shows its state, seq and gate.
//
// Order is real time: Firestore's transactions are strictly serializable,
// so an operation that returned before another was called comes first.

type doorOp uint8

const (
	opScan doorOp = iota
	opRead
	opTransfer
	opCancel
)

var doorOpNames = [...]string{"scan", "read", "transfer", "cancel"}

func (o doorOp) String() string { return doorOpNames[o] }

type doorIn struct {
	Op      doorOp
	Ticket  string // the partition
	Reentry bool   // the ticket's door lets it out and in again
	// A scan's.
	Dir, Gate, Nonce string
	Offline          bool
	CodeVersion      int
}

type doorOut struct {
	Result  string // a scan's result or code, ok, ticket_used, ticket_cancelled, nonce_reused
	Gate    string // admitted, exited: the scan's gate; already_in: the entry's; a read: the check-in's
	State   string // a read: in, out or "" (no check-in)
	Seq     int    // a read
	Version int    // a transfer that was ok: the new version
}

// ticketState is one ticket at the door. It is comparable: Applied lists
// the scans applied, "nonce gate dir result answered-gate;" in nonce order.
type ticketState struct {
	State     string // "", in, out
	Seq       int
	Gate      string
	Version   int
	Cancelled bool
	Applied   string
}

type applied struct{ gate, dir, result, answered string }

func (s ticketState) applied(nonce string) (applied, bool) {
	for _, e := range strings.Split(s.Applied, ";") {
		f := strings.Split(e, " ")
		if len(f) == 5 && f[0] == nonce {
			return applied{f[1], f[2], f[3], f[4]}, true
		}
	}
	return applied{}, false
}

func (s ticketState) apply(nonce string, a applied) ticketState {
	entries := []string{}
	if s.Applied != "" {
		entries = strings.Split(strings.TrimSuffix(s.Applied, ";"), ";")
	}
	entries = append(entries, strings.Join([]string{nonce, a.gate, a.dir, a.result, a.answered}, " "))
	slices.Sort(entries)
	s.Applied = strings.Join(entries, ";") + ";"
	return s
}

// scanResult is what a fresh scan (its nonce not applied) answers in s,
// and the state after it.
func scanResult(s ticketState, in doorIn) (doorOut, ticketState) {
	switch {
	case s.Cancelled:
		return doorOut{Result: ResultCancelled}, s
	case in.CodeVersion < s.Version:
		return doorOut{Result: ResultReissued}, s
	case in.Dir == DirectionIn && s.State == StateIn:
		if in.Offline {
			return doorOut{Result: ResultConflict, Gate: s.Gate}, s
		}
		return doorOut{Result: ResultAlreadyIn, Gate: s.Gate}, s
	case in.Dir == DirectionOut && s.State != StateIn:
		return doorOut{Result: ResultNotIn}, s
	case s.State != "" && !in.Reentry:
		return doorOut{Result: ResultNoReentry}, s
	}
	next := s
	next.Seq++
	next.Gate = in.Gate
	if in.Dir == DirectionIn {
		next.State = StateIn
		return doorOut{Result: ResultAdmitted, Gate: in.Gate}, next
	}
	next.State = StateOut
	return doorOut{Result: ResultExited, Gate: in.Gate}, next
}

func doorStep(s ticketState, in doorIn, out doorOut) (bool, ticketState) {
	switch in.Op {
	case opRead:
		return out.State == s.State && out.Seq == s.Seq && (s.State == "" || out.Gate == s.Gate), s
	case opTransfer:
		switch {
		case out.Result == "forbidden":
			// The worker named an owner the ticket no longer has (after
			// a transfer whose outcome it did not learn): refused before
			// anything else, it changed nothing.
			return true, s
		case s.State != "":
			return out.Result == "ticket_used", s
		case s.Cancelled:
			return out.Result == "ticket_cancelled", s
		}
		next := s
		next.Version++
		return out.Result == "ok" && out.Version == next.Version, next
	case opCancel:
		if s.State != "" || s.Version%2 == 0 {
			return out.Result == "ticket_used", s
		}
		next := s
		next.Cancelled = true
		return out.Result == "ok", next
	}
	if a, ok := s.applied(in.Nonce); ok {
		if a.gate != in.Gate || a.dir != in.Dir {
			return out.Result == "nonce_reused", s
		}
		return out.Result == a.result && out.Gate == a.answered, s
	}
	want, next := scanResult(s, in)
	if out != want {
		return false, s
	}
	return true, next.apply(in.Nonce, applied{in.Gate, in.Dir, want.Result, want.Gate})
}

// doorUnknown: an operation whose outcome is unknown takes effect here as
// if it succeeded (a transfer or a cancel that would be refused, or a scan
// of a nonce applied, changes nothing).
func doorUnknown(s ticketState, in doorIn, _ doorOut) ticketState {
	switch in.Op {
	case opRead:
		return s
	case opTransfer:
		if s.State == "" && !s.Cancelled {
			s.Version++
		}
		return s
	case opCancel:
		if s.State == "" && s.Version%2 == 1 {
			s.Cancelled = true
		}
		return s
	}
	if _, ok := s.applied(in.Nonce); ok {
		return s
	}
	out, next := scanResult(s, in)
	return next.apply(in.Nonce, applied{in.Gate, in.Dir, out.Result, out.Gate})
}

var doorModel = linearize.Model[ticketState, doorIn, doorOut]{
	Partition: func(in doorIn) string { return in.Ticket },
	Init:      func() ticketState { return ticketState{Version: 1} },
	Step:      doorStep,
	Unknown:   doorUnknown,
	Describe: func(in doorIn, out doorOut) string {
		switch in.Op {
		case opScan:
			off := ""
			if in.Offline {
				off = " offline"
			}
			return fmt.Sprintf("scan %s at %s (v%d, %s%s) -> %s %s", in.Dir, in.Gate, in.CodeVersion, in.Nonce, off, out.Result, out.Gate)
		case opRead:
			return fmt.Sprintf("read -> %q seq %d at %s", out.State, out.Seq, out.Gate)
		case opTransfer:
			return fmt.Sprintf("transfer -> %s v%d", out.Result, out.Version)
		}
		return fmt.Sprintf("%s -> %s", in.Op, out.Result)
	},
	DescribeState: func(s ticketState) string {
		return fmt.Sprintf("%q seq %d at %s, v%d, cancelled %v", s.State, s.Seq, s.Gate, s.Version, s.Cancelled)
	},
}

// The model says what the door must: a second entry is already_in, a
// retry answers as before, an exit without reentry is refused; and it
// refuses a history where one ticket got in twice.
func TestDoorModel(t *testing.T) {
	scan := func(dir, gate, nonce string, reentry bool) doorIn {
		return doorIn{Op: opScan, Ticket: "t", Reentry: reentry, Dir: dir, Gate: gate, Nonce: nonce, CodeVersion: 1}
	}
	legal := []struct {
		in  doorIn
		out doorOut
	}{
		{scan("in", "A", "n1", false), doorOut{Result: "admitted", Gate: "A"}},
		{scan("in", "B", "n2", false), doorOut{Result: "already_in", Gate: "A"}},
		{scan("in", "A", "n1", false), doorOut{Result: "admitted", Gate: "A"}},
		{scan("in", "B", "n1", false), doorOut{Result: "nonce_reused"}},
		{scan("out", "A", "n3", false), doorOut{Result: "no_reentry"}},
		{doorIn{Op: opTransfer, Ticket: "t"}, doorOut{Result: "ticket_used"}},
		{doorIn{Op: opRead, Ticket: "t"}, doorOut{State: "in", Seq: 1, Gate: "A"}},
	}
	s := doorModel.Init()
	for i, c := range legal {
		ok, next := doorStep(s, c.in, c.out)
		if !ok {
			t.Fatalf("step %d %s refused in %s", i, doorModel.Describe(c.in, c.out), doorModel.DescribeState(s))
		}
		s = next
	}
	if ok, _ := doorStep(s, scan("in", "B", "n9", false), doorOut{Result: "admitted", Gate: "B"}); ok {
		t.Fatal("the model let a ticket that is in be admitted again")
	}
	s = doorModel.Init()
	_, s = doorStep(s, doorIn{Op: opTransfer, Ticket: "t"}, doorOut{Result: "ok", Version: 2})
	if ok, _ := doorStep(s, scan("in", "A", "n1", false), doorOut{Result: "admitted", Gate: "A"}); ok {
		t.Fatal("the model admitted the old code of a transferred ticket")
	}
}
