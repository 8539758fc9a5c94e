package booking

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/firelock/firelock/internal/testkit/linearize"
)

// The seat map's sequential specification (CONTRACT §3 and §5), for
// checking recorded histories with internal/testkit/linearize: one small hall (a
// screening of hallSeats seats) per partition, its bookings and holds, and
// its tickets-sold counter.
//
//   - Book and Hold take all their seats or none, and only free ones: a
//     seat with no document, or one under a hold whose heldUntil has passed.
//     201 for the call that makes the document; 200 for a call of the same
//     user and requestId that finds it made, answering it as stored (the
//     call's own commit too, when its answer was lost: a call cannot tell
//     its own unheard commit from an earlier call's).
//   - A refusal changes nothing: seat_taken names exactly the requested
//     seats that are booked; seat_held (no seat booked) exactly those under
//     a live hold; seat_busy (it means "retry") may come at any time, but
//     never once the request's document exists.
//   - ExtendHold moves a live hold's end, once a call; ConfirmHold books a
//     live hold's seats; both answer hold_expired once less than
//     confirmMargin is left or the hold is released; ReleaseHold frees a held hold's seats that
//     still show it; CancelBooking frees a booking's seats. 404 for what was
//     never made.
//   - A read of the seat map shows each seat's document as the model has
//     it (whose it is, and a hold's heldUntil); the tickets-sold count is
//     the number of booked seats.
//
// Time is Firestore's: an operation that learns a server time (the create
// time of the document it made, which is its commit's time; a read's read
// time; an extension's read time, heldUntil − its length) is linearized at
// it, in the order of the server's clock; the state's Now is the latest
// such time so far, a lower bound of the server's clock there. A hold ends
// at its stored heldUntil on that clock, never the client's. An answer
// that says a hold has ended moves Now past its end.

// readSkew: the emulator stamps a commit before the commit shows, so a
// read stamped up to this long after a commit's time may not see it yet
// (seen: 3 µs and 109 µs, one run in five of TestSeatHistoryIsLinearizable).
// A read is placed at a server time in [its read time − readSkew, its read
// time]. Production Firestore has no such window (a read at T sees every
// commit stamped up to T); the model gives up 2 ms of strictness here.
const readSkew = 2 * time.Millisecond

// hallSeats is the size of a hall: seats A1..A5.
const hallSeats = 5

// seatSet is a set of a hall's seats, bit i for seat A(i+1).
type seatSet uint8

func (s seatSet) has(i int) bool { return s&(1<<i) != 0 }

// names are the seats' ids, as a Request takes them.
func (s seatSet) names() []string {
	var out []string
	for i := range hallSeats {
		if s.has(i) {
			out = append(out, fmt.Sprintf("A%d", i+1))
		}
	}
	return out
}

func (s seatSet) String() string { return strings.Join(s.names(), "+") }

// seatsNamed is the set of seat ids; ok false for an id outside the hall.
func seatsNamed(ids []string) (s seatSet, ok bool) {
	for _, id := range ids {
		var n int
		if _, err := fmt.Sscanf(id, "A%d", &n); err != nil || n < 1 || n > hallSeats {
			return 0, false
		}
		s |= 1 << (n - 1)
	}
	return s, true
}

// seatOp is what an operation does.
type seatOp uint8

const (
	opBook      seatOp = iota // Service.Book
	opHold                    // Service.Hold
	opExtend                  // Service.ExtendHold
	opConfirm                 // Service.ConfirmHold
	opRelease                 // Service.ReleaseHold
	opCancel                  // Service.Cancel
	opReadSeats               // a read of the hall's seat documents
	opCount                   // counter.Count of the hall's tickets-sold counter
)

var seatOpNames = [...]string{"book", "hold", "extend", "confirm", "release", "cancel", "read seats", "count"}

func (o seatOp) String() string { return seatOpNames[o] }

// claimKind is what kind of document a claim is.
type claimKind uint8

const (
	noClaim           claimKind = iota
	bookingClaim                // a booking made by Book
	holdClaim                   // a hold made by Hold
	confirmationClaim           // the booking ConfirmHold makes of hold N
)

// claimRef names a booking or hold of the history: requests are numbered
// as the test makes them, and a hold's confirmation takes its number.
type claimRef struct {
	Kind claimKind
	N    int
}

func (r claimRef) String() string {
	switch r.Kind {
	case bookingClaim:
		return fmt.Sprintf("b%d", r.N)
	case holdClaim:
		return fmt.Sprintf("h%d", r.N)
	case confirmationClaim:
		return fmt.Sprintf("c%d", r.N)
	}
	return "-"
}

func (r claimRef) booked() bool { return r.Kind == bookingClaim || r.Kind == confirmationClaim }

type seatIn struct {
	Op   seatOp
	Hall string // the screening: the partition
	// Claim is the request's own (book, hold), the hold's (extend,
	// confirm, release) or the booking's (cancel).
	Claim  claimRef
	Seats  seatSet       // book, hold
	Length time.Duration // hold, extend
}

// seatAnswer is how an operation ended, when it is known.
type seatAnswer uint8

const (
	answerDone     seatAnswer = iota // 200: the document as stored (a retry; an extension, release or cancellation); a read
	answerCreated                    // 201: this call made the document
	answerTaken                      // seat_taken
	answerHeld                       // seat_held
	answerBusy                       // seat_busy
	answerExpired                    // hold_expired
	answerNotFound                   // hold_not_found, booking_not_found
)

var seatAnswerNames = [...]string{"200", "201", "seat_taken", "seat_held", "seat_busy", "hold_expired", "not_found"}

func (a seatAnswer) String() string { return seatAnswerNames[a] }

type seatOut struct {
	Answer seatAnswer
	Seats  seatSet // the seats a 409 names
	Status string  // the document's status as answered
	Until  int64   // a hold's heldUntil as answered (Unix ns)
	// At is the server time the operation learnt (Unix ns): the create
	// time of the document it made (201), or a read's read time.
	At    int64
	Map   [hallSeats]seatView // a read: each seat's document
	Count int64               // a count
}

// seatView is a seat document: whose it is (none: no document), and a
// held seat's heldUntil.
type seatView struct {
	Claim claimRef
	Until int64
}

// claimState is a booking or hold the model knows was made.
type claimState struct {
	Status string // StatusHeld, StatusReleased, StatusOK (a hold: confirmed), StatusCanceled
	Until  int64  // a hold's heldUntil
	// UntilUnknown: the hold was made or extended with an unknown outcome;
	// its heldUntil is unknown until an answer shows it.
	UntilUnknown bool
}

// liveAt: a hold still holds its seats at server time t, as far as the
// model knows.
func (c claimState) liveAt(t int64) bool {
	return c.Status == StatusHeld && (c.UntilUnknown || t < c.Until)
}

// hallState is one hall: its seat documents and the claims made so far.
type hallState struct {
	Now   int64                   // the latest server time linearized so far
	Seats [hallSeats]claimRef     // whose each seat document is; none: no document
	Made  map[claimRef]claimState // never changed in place: copied on write
}

func (s hallState) with(r claimRef, c claimState) hallState {
	m := maps.Clone(s.Made)
	if m == nil {
		m = map[claimRef]claimState{}
	}
	m[r] = c
	s.Made = m
	return s
}

// booked is which of set are booked.
func (s hallState) booked(set seatSet) seatSet {
	var out seatSet
	for i := range hallSeats {
		if set.has(i) && s.Seats[i].booked() {
			out |= 1 << i
		}
	}
	return out
}

// freeFrom is the earliest server time, not before Now, from which every
// seat of set is free (no document, or a hold that has ended), and
// whether there is one (a booked seat stays taken). A hold whose end is
// unknown may have ended at any time.
func (s hallState) freeFrom(set seatSet) (int64, bool) {
	t := s.Now
	for i := range hallSeats {
		if !set.has(i) {
			continue
		}
		switch r := s.Seats[i]; r.Kind {
		case bookingClaim, confirmationClaim:
			return 0, false
		case holdClaim:
			if c := s.Made[r]; !c.UntilUnknown {
				t = max(t, c.Until)
			}
		}
	}
	return t, true
}

// take gives set's seats to r, made now with c.
func (s hallState) take(set seatSet, r claimRef, c claimState) hallState {
	for i := range hallSeats {
		if set.has(i) {
			s.Seats[i] = r
		}
	}
	return s.with(r, c)
}

// move gives every seat of from to to (none: frees them).
func (s hallState) move(from, to claimRef) hallState {
	for i, r := range s.Seats {
		if r == from {
			s.Seats[i] = to
		}
	}
	return s
}

// soldSeats is what the tickets-sold counter must count: the booked seats.
func (s hallState) soldSeats() int64 {
	return int64(bits.OnesCount8(uint8(s.booked(1<<hallSeats - 1))))
}

var seatModel = linearize.Model[hallState, seatIn, seatOut]{
	Partition: func(in seatIn) string { return in.Hall },
	Init:      func() hallState { return hallState{} },
	Step:      seatStep,
	Unknown:   seatUnknown,
	Equal: func(a, b hallState) bool {
		return a.Now == b.Now && a.Seats == b.Seats && maps.Equal(a.Made, b.Made)
	},
	Hash: func(s hallState) uint64 {
		h := uint64(s.Now)
		for _, r := range s.Seats {
			h = h*31 + uint64(r.Kind)<<32 + uint64(r.N)
		}
		return h
	},
	Describe:      describeSeatOp,
	DescribeState: describeHall,
}

// seatStep is CONTRACT §3 for an operation whose outcome is known.
func seatStep(s hallState, in seatIn, out seatOut) (bool, hallState) {
	c, made := s.Made[in.Claim]
	switch in.Op {
	case opBook, opHold:
		switch out.Answer {
		case answerCreated, answerDone:
			if made {
				if out.Answer == answerCreated || out.Status != c.Status {
					return false, s // 201 only for the call that made it
				}
				if in.Op == opHold && c.Status == StatusHeld {
					return seen(s, in.Claim, c, out.Until)
				}
				return true, s
			}
			// Made now, at its create time: by this call, which answers 200
			// when its own commit landed unheard (the client library sent it
			// again, or the answer was lost) and it found the document.
			if out.At < s.Now {
				return false, s
			}
			if free, ok := s.freeFrom(in.Seats); !ok || free > out.At {
				return false, s // a seat booked, or under a hold that had not ended
			}
			s.Now = out.At
			if in.Op == opBook {
				return out.Answer == answerCreated || out.Status == StatusOK, s.take(in.Seats, in.Claim, claimState{Status: StatusOK})
			}
			return out.Answer == answerCreated || out.Status == StatusHeld, s.take(in.Seats, in.Claim, claimState{Status: StatusHeld, Until: out.Until})
		case answerTaken:
			return !made && out.Seats != 0 && out.Seats == s.booked(in.Seats), s
		case answerHeld:
			return seatHeld(s, in, out, made)
		case answerBusy:
			return !made, s
		}
	case opExtend:
		switch out.Answer {
		case answerDone:
			// Extended at its read time, heldUntil − length, or after.
			at := max(s.Now, out.Until-int64(in.Length))
			if !made || out.Status != StatusHeld || !c.liveAt(at) {
				return false, s
			}
			s.Now = at
			c.Until, c.UntilUnknown = out.Until, false
			return true, s.with(in.Claim, c)
		case answerExpired:
			// Ended, or less than confirmMargin left by the answer's time.
			return made, ended(s, c, confirmMargin)
		case answerNotFound:
			return !made, s
		}
	case opConfirm:
		booking := claimRef{confirmationClaim, in.Claim.N}
		switch out.Answer {
		case answerCreated, answerDone:
			if made && c.Status == StatusOK {
				return out.Answer == answerDone && out.Status == s.Made[booking].Status, s
			}
			// Confirmed now, at the booking's create time: by this call (a
			// 200 when its own commit landed unheard). Such a call answers
			// the booking as it reads it after that commit, so cancelled if
			// a cancel came in between (ConfirmHold's doc).
			if !made || out.At < s.Now || !c.liveAt(out.At) || (out.Answer == answerDone && out.Status != StatusOK && out.Status != StatusCanceled) {
				return false, s
			}
			s.Now = out.At
			c.Status = StatusOK
			return true, s.move(in.Claim, booking).with(in.Claim, c).with(booking, claimState{Status: StatusOK})
		case answerExpired:
			// Ended, or less than confirmMargin left by the answer's time.
			return made && c.Status != StatusOK, ended(s, c, confirmMargin)
		case answerNotFound:
			return !made, s
		}
	case opRelease:
		switch out.Answer {
		case answerDone:
			if !made {
				return false, s
			}
			if c.Status != StatusHeld {
				return out.Status == c.Status, s // ended already: unchanged
			}
			c.Status = StatusReleased
			return out.Status == StatusReleased, s.move(in.Claim, claimRef{}).with(in.Claim, c)
		case answerNotFound:
			return !made, s
		}
	case opCancel:
		switch out.Answer {
		case answerDone:
			if !made || out.Status != StatusCanceled {
				return false, s
			}
			c.Status = StatusCanceled
			return true, s.move(in.Claim, claimRef{}).with(in.Claim, c)
		case answerNotFound:
			return !made, s
		}
	case opReadSeats:
		if out.At < s.Now {
			return false, s
		}
		s.Now = max(s.Now, out.At-int64(readSkew))
		for i, v := range out.Map {
			if v.Claim != s.Seats[i] {
				return false, s
			}
			if v.Claim.Kind == holdClaim {
				ok, next := seen(s, v.Claim, s.Made[v.Claim], v.Until)
				if !ok {
					return false, s
				}
				s = next
			}
		}
		return true, s
	case opCount:
		return out.Count == s.soldSeats(), s
	}
	return false, s
}

// seen: a held hold's heldUntil as an answer showed it; it settles an
// end the model did not know.
func seen(s hallState, r claimRef, c claimState, until int64) (bool, hallState) {
	switch {
	case c.UntilUnknown:
		c.Until, c.UntilUnknown = until, false
		return true, s.with(r, c)
	case c.Until != until:
		return false, s
	}
	return true, s
}

// seatHeld: seat_held, at some server time t not before Now, names
// exactly the requested seats under a live hold at t, and every other
// requested seat is free at t (none is booked: that answers seat_taken).
func seatHeld(s hallState, in seatIn, out seatOut, made bool) (bool, hallState) {
	if made || out.Seats == 0 || out.Seats&^in.Seats != 0 || s.booked(in.Seats) != 0 {
		return false, s
	}
	from, until := s.Now, int64(1<<63-1) // t lies in [from, until)
	for i := range hallSeats {
		if !in.Seats.has(i) {
			continue
		}
		r := s.Seats[i]
		c := s.Made[r]
		switch {
		case out.Seats.has(i) && r.Kind != holdClaim:
			return false, s
		case out.Seats.has(i) && !c.UntilUnknown:
			until = min(until, c.Until)
		case !out.Seats.has(i) && r.Kind == holdClaim && !c.UntilUnknown:
			from = max(from, c.Until)
		}
	}
	if from >= until {
		return false, s
	}
	s.Now = from
	return true, s
}

// ended is the state after an answer that hold c had ended, or had less
// than margin left: a hold still held was judged at a server time past
// its end − margin.
func ended(s hallState, c claimState, margin time.Duration) hallState {
	if c.Status == StatusHeld && !c.UntilUnknown {
		s.Now = max(s.Now, c.Until-int64(margin))
	}
	return s
}

// seatUnknown is the state after an operation whose outcome is unknown,
// if it took effect at this point; s unchanged where it cannot have.
func seatUnknown(s hallState, in seatIn, _ seatOut) hallState {
	c, made := s.Made[in.Claim]
	switch in.Op {
	case opBook, opHold:
		free, ok := s.freeFrom(in.Seats)
		if made || !ok {
			return s
		}
		s.Now = free // once the seats' holds had ended
		if in.Op == opBook {
			return s.take(in.Seats, in.Claim, claimState{Status: StatusOK})
		}
		return s.take(in.Seats, in.Claim, claimState{Status: StatusHeld, UntilUnknown: true})
	case opExtend:
		if made && c.liveAt(s.Now) {
			c.UntilUnknown = true
			return s.with(in.Claim, c)
		}
	case opConfirm:
		if made && c.liveAt(s.Now) {
			booking := claimRef{confirmationClaim, in.Claim.N}
			c.Status = StatusOK
			return s.move(in.Claim, booking).with(in.Claim, c).with(booking, claimState{Status: StatusOK})
		}
	case opRelease:
		if made && c.Status == StatusHeld {
			c.Status = StatusReleased
			return s.move(in.Claim, claimRef{}).with(in.Claim, c)
		}
	case opCancel:
		if made && c.Status == StatusOK {
			c.Status = StatusCanceled
			return s.move(in.Claim, claimRef{}).with(in.Claim, c)
		}
	}
	return s
}

func describeSeatOp(in seatIn, out seatOut) string {
	var did string
	switch in.Op {
	case opBook, opHold:
		did = fmt.Sprintf("%s %s as %v", in.Op, in.Seats, in.Claim)
	case opReadSeats, opCount:
		did = in.Op.String()
	default:
		did = fmt.Sprintf("%s %v", in.Op, in.Claim)
	}
	var got string
	switch out.Answer {
	case answerCreated:
		got = "201 at " + timeOfDay(out.At)
		if in.Op == opHold {
			got += " until " + timeOfDay(out.Until)
		}
	case answerDone:
		switch {
		case in.Op == opReadSeats:
			views := make([]string, hallSeats)
			for i, v := range out.Map {
				views[i] = v.Claim.String()
				if v.Claim.Kind == holdClaim {
					views[i] += " until " + timeOfDay(v.Until)
				}
			}
			got = strings.Join(views, ", ") + " at " + timeOfDay(out.At)
		case in.Op == opCount:
			got = fmt.Sprint(out.Count)
		case out == seatOut{}:
			got = "?" // an unknown outcome, with nothing learnt
		default:
			got = "200 " + out.Status
			if out.Status == StatusHeld {
				got += " until " + timeOfDay(out.Until)
			}
		}
	case answerTaken, answerHeld, answerBusy:
		got = fmt.Sprintf("%s %s", out.Answer, out.Seats)
	default:
		got = out.Answer.String()
	}
	return did + " -> " + got
}

func describeHall(s hallState) string {
	seats := make([]string, hallSeats)
	for i, r := range s.Seats {
		seats[i] = fmt.Sprintf("A%d %v", i+1, r)
		if c := s.Made[r]; r.Kind == holdClaim {
			switch {
			case c.UntilUnknown:
				seats[i] += " until ?"
			default:
				seats[i] += " until " + timeOfDay(c.Until)
			}
		}
	}
	return fmt.Sprintf("%s; sold %d; server time ≥ %s", strings.Join(seats, ", "), s.soldSeats(), timeOfDay(s.Now))
}

// timeOfDay shows a server time (Unix ns) as a time of day, to the µs.
func timeOfDay(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000000")
}

// seatModelOp is one operation of a hand-written history.
type seatModelOp struct {
	client  int
	in      seatIn
	out     seatOut
	unknown bool
	// overlapsNext: it returns after the next operation is called.
	overlapsNext bool
}

// The model on hand-written histories, one operation after another in
// real time: server times in seconds, holds of 5 s.
func TestSeatModel(t *testing.T) {
	s := func(sec float64) int64 { return int64((1000 + sec) * 1e9) }
	const a1, a2 = seatSet(1), seatSet(2)
	b := func(n int) claimRef { return claimRef{bookingClaim, n} }
	h := func(n int) claimRef { return claimRef{holdClaim, n} }
	c := func(n int) claimRef { return claimRef{confirmationClaim, n} }
	book := func(n int, seats seatSet, out seatOut) seatModelOp {
		return seatModelOp{in: seatIn{Op: opBook, Hall: "h", Claim: b(n), Seats: seats}, out: out}
	}
	hold := func(n int, seats seatSet, out seatOut) seatModelOp {
		return seatModelOp{in: seatIn{Op: opHold, Hall: "h", Claim: h(n), Seats: seats, Length: holdLength}, out: out}
	}
	on := func(op seatOp, r claimRef, out seatOut) seatModelOp {
		return seatModelOp{in: seatIn{Op: op, Hall: "h", Claim: r, Length: holdLength}, out: out}
	}
	created := func(at float64) seatOut { return seatOut{Answer: answerCreated, At: s(at)} }
	held := func(at, until float64) seatOut { return seatOut{Answer: answerCreated, At: s(at), Until: s(until)} }
	again := func(status string, at float64) seatOut { return seatOut{Status: status, At: s(at)} }
	refused := func(a seatAnswer, seats seatSet) seatOut { return seatOut{Answer: a, Seats: seats} }
	extended := func(until float64) seatOut { return seatOut{Status: StatusHeld, Until: s(until)} }
	read := func(at float64, seats ...seatView) seatModelOp {
		op := seatModelOp{client: 9, in: seatIn{Op: opReadSeats, Hall: "h"}, out: seatOut{At: s(at)}}
		copy(op.out.Map[:], seats)
		return op
	}
	count := func(n int64) seatModelOp {
		return seatModelOp{client: 9, in: seatIn{Op: opCount, Hall: "h"}, out: seatOut{Count: n}}
	}
	bookedBy := func(r claimRef) seatView { return seatView{Claim: r} }
	heldBy := func(r claimRef, until float64) seatView { return seatView{Claim: r, Until: s(until)} }
	unknown := func(op seatModelOp) seatModelOp { op.unknown, op.out = true, seatOut{}; return op }
	overlap := func(op seatModelOp) seatModelOp { op.overlapsNext = true; return op }

	cases := []struct {
		name string
		ops  []seatModelOp
		want porcupine.CheckResult
	}{
		{"book, read, count, retry, cancel", []seatModelOp{
			book(1, a1|a2, created(1)), read(2, bookedBy(b(1)), bookedBy(b(1))), count(2),
			book(1, a1|a2, again(StatusOK, 1)), on(opCancel, b(1), again(StatusCanceled, 0)), read(3), count(0),
			book(1, a1|a2, again(StatusCanceled, 1))}, porcupine.Ok},
		{"a seat in two bookings", []seatModelOp{book(1, a1, created(1)), book(2, a1|a2, created(2))}, porcupine.Illegal},
		{"201 twice for one request", []seatModelOp{book(1, a1, created(1)), book(1, a1, created(1))}, porcupine.Illegal},
		{"200 for a call whose own commit landed unheard", []seatModelOp{book(1, a1, again(StatusOK, 1)), read(2, bookedBy(b(1)))}, porcupine.Ok},
		{"but not over a booked seat", []seatModelOp{book(1, a1, created(1)), book(2, a1, again(StatusOK, 2))}, porcupine.Illegal},
		{"seat_taken names the booked seats", []seatModelOp{book(1, a1, created(1)), book(2, a1|a2, refused(answerTaken, a1))}, porcupine.Ok},
		{"seat_taken for a free seat", []seatModelOp{book(1, a1, created(1)), book(2, a1|a2, refused(answerTaken, a1|a2))}, porcupine.Illegal},
		{"seat_taken for a retry of a booking made", []seatModelOp{book(1, a1, created(1)), book(1, a1, refused(answerTaken, a1))}, porcupine.Illegal},
		{"seat_busy at any time", []seatModelOp{book(1, a1, refused(answerBusy, a1)), book(1, a1, created(1))}, porcupine.Ok},
		{"but not once the request is made", []seatModelOp{book(1, a1, created(1)), book(1, a1, refused(answerBusy, a1))}, porcupine.Illegal},
		{"a live hold is seat_held", []seatModelOp{hold(1, a1, held(1, 6)), book(2, a1, refused(answerHeld, a1)), read(5.9, heldBy(h(1), 6))}, porcupine.Ok},
		{"seat_held for a hold that had ended", []seatModelOp{hold(1, a1, held(1, 6)), read(6.1, heldBy(h(1), 6)), book(2, a1, refused(answerHeld, a1))}, porcupine.Illegal},
		{"a live hold is never lost", []seatModelOp{hold(1, a1, held(1, 6)), book(2, a1, created(5.9))}, porcupine.Illegal},
		{"an ended hold's seat is free", []seatModelOp{hold(1, a1, held(1, 6)), book(2, a1, created(6)), read(7, bookedBy(b(2)))}, porcupine.Ok},
		{"a read shows the hold's end", []seatModelOp{hold(1, a1, held(1, 6)), read(2, heldBy(h(1), 7))}, porcupine.Illegal},
		{"server times only increase", []seatModelOp{read(5), book(1, a1, created(4))}, porcupine.Illegal},
		{"a read within readSkew after a commit may miss it", []seatModelOp{overlap(book(1, a1, created(1))), read(1.001), read(1.0015, bookedBy(b(1)))}, porcupine.Ok},
		{"but not one further", []seatModelOp{overlap(book(1, a1, created(1))), read(1.003)}, porcupine.Illegal},
		{"confirm before the end", []seatModelOp{
			hold(1, a1|a2, held(1, 6)), on(opConfirm, h(1), created(4)), read(5, bookedBy(c(1)), bookedBy(c(1))), count(2),
			on(opConfirm, h(1), again(StatusOK, 4)), on(opCancel, c(1), again(StatusCanceled, 0)), count(0),
			on(opConfirm, h(1), again(StatusCanceled, 4))}, porcupine.Ok},
		{"a confirm whose own commit landed unheard answers the booking as stored: cancelled since", []seatModelOp{
			hold(1, a1, held(1, 6)), overlap(on(opConfirm, h(1), again(StatusCanceled, 2))), on(opCancel, c(1), again(StatusCanceled, 0)), read(3), count(0)}, porcupine.Ok},
		{"a confirm committed after the end", []seatModelOp{hold(1, a1, held(1, 6)), on(opConfirm, h(1), created(6.2))}, porcupine.Illegal},
		{"hold_expired with less than the margin left", []seatModelOp{hold(1, a1, held(1, 6)), on(opConfirm, h(1), refused(answerExpired, 0)), read(5.5, heldBy(h(1), 6))}, porcupine.Ok},
		{"hold_expired with more left", []seatModelOp{hold(1, a1, held(1, 6)), on(opConfirm, h(1), refused(answerExpired, 0)), read(4.5, heldBy(h(1), 6))}, porcupine.Illegal},
		{"hold_expired for a confirmed hold", []seatModelOp{hold(1, a1, held(1, 6)), on(opConfirm, h(1), created(2)), on(opConfirm, h(1), refused(answerExpired, 0))}, porcupine.Illegal},
		{"extend a live hold", []seatModelOp{hold(1, a1, held(1, 6)), on(opExtend, h(1), extended(9)), book(2, a1, refused(answerHeld, a1)), read(8.9, heldBy(h(1), 9))}, porcupine.Ok},
		{"extend an ended hold", []seatModelOp{hold(1, a1, held(1, 6)), on(opExtend, h(1), extended(11.5))}, porcupine.Illegal},
		{"an extension's hold_expired with less than the margin left", []seatModelOp{hold(1, a1, held(1, 6)), on(opExtend, h(1), refused(answerExpired, 0)), read(5.5, heldBy(h(1), 6))}, porcupine.Ok},
		{"an extension's hold_expired with more left", []seatModelOp{hold(1, a1, held(1, 6)), on(opExtend, h(1), refused(answerExpired, 0)), read(4.5, heldBy(h(1), 6))}, porcupine.Illegal},
		{"an extension seen ended and then revived", []seatModelOp{
			hold(1, a1, held(1, 6)), read(6.2, heldBy(h(1), 6)), on(opExtend, h(1), extended(10.9)), read(6.3, heldBy(h(1), 10.9))}, porcupine.Illegal},
		{"release frees the seats, once", []seatModelOp{
			hold(1, a1, held(1, 6)), on(opRelease, h(1), again(StatusReleased, 0)), read(2), on(opRelease, h(1), again(StatusReleased, 0)),
			on(opConfirm, h(1), refused(answerExpired, 0)), hold(2, a1, held(3, 8))}, porcupine.Ok},
		{"a released hold's seat still held", []seatModelOp{hold(1, a1, held(1, 6)), on(opRelease, h(1), again(StatusReleased, 0)), book(2, a1, refused(answerHeld, a1))}, porcupine.Illegal},
		{"not found only for what was never made", []seatModelOp{
			on(opConfirm, h(1), refused(answerNotFound, 0)), on(opCancel, b(2), refused(answerNotFound, 0)), hold(1, a1, held(1, 6)), on(opExtend, h(1), refused(answerNotFound, 0))}, porcupine.Illegal},
		{"the count is the booked seats", []seatModelOp{book(1, a1|a2, created(1)), count(1)}, porcupine.Illegal},
		{"a booking of unknown outcome may have landed", []seatModelOp{unknown(book(1, a1, created(1))), read(2, bookedBy(b(1))), count(1)}, porcupine.Ok},
		{"or not", []seatModelOp{unknown(book(1, a1, created(1))), read(2), book(2, a1, created(3))}, porcupine.Ok},
		{"but cannot explain a seat in two bookings", []seatModelOp{book(2, a1, created(1)), unknown(book(1, a1, created(2))), read(3, bookedBy(b(1)))}, porcupine.Illegal},
		{"a hold of unknown outcome ends as a read shows", []seatModelOp{
			unknown(hold(1, a1, held(1, 6))), read(2, heldBy(h(1), 6)), book(2, a1, created(5.5))}, porcupine.Illegal},
		{"a confirm of unknown outcome may have booked", []seatModelOp{hold(1, a1, held(1, 6)), unknown(on(opConfirm, h(1), seatOut{})), read(7, bookedBy(c(1)))}, porcupine.Ok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FIRELOCK_ARTIFACTS", t.TempDir())
			hist := linearize.NewHistory[seatIn, seatOut]()
			var pending func()
			for _, op := range tc.ops {
				call := hist.Call(op.client, op.in)
				end := func() {
					if op.unknown {
						call.Unknown(op.out, errors.New("deadline exceeded"))
					} else {
						call.Return(op.out)
					}
				}
				if op.overlapsNext {
					pending = end
					continue
				}
				end()
				if pending != nil {
					pending()
					pending = nil
				}
			}
			if got := linearize.Check(t, seatModel, hist, 10*time.Second).Verdict; got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}
