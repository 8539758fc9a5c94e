// Package report reads what Firestore holds of a sale and judges it:
// fairness (early joiners drawn at random and all admitted before later
// ones, later joiners in join order), metering (the rate and maxActive,
// first admission and refills), and the figures operators read after a
// sale (CONTRACT §8: sold, conversion, passes that expired unused, time in
// line). cmd/surge audits its surges with it, and `firelock sale report`
// writes it as a page and as CSV.
package report

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/counter"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// MaxExamples bounds the examples a verdict lists.
const MaxExamples = 10

func nan() float64 { return math.NaN() }

// Sale is what Firestore holds of a sale at the end, as the audit
// reads it: every place, hold, booking and seat of the screening.
type Sale struct {
	ScreeningID     string
	StartsAt        time.Time
	OpensAt         time.Time
	AdmitPerMinute  int
	MaxActive       int
	PassSeconds     int
	MaxSeatsPerUser int
	Hall            []string // every seat id
	Places          []Place
	Holds           []Hold
	Bookings        []Booking
	Seats           map[string]Seat
	// Log is the operators' log, oldest first: pauses, configuration
	// changes, revokes and the close.
	Log []LogEntry
	// AdmissionsRecorded is what the admitter counted (saleStates/{id}.admitted).
	AdmissionsRecorded int64
	// The tickets-sold counter: its shards (0: none) and its count.
	CounterShards  int
	TicketsCounted int64
	// Payments are the screening's payment records (CONTRACT §10; none
	// on a free screening).
	Payments []Payment
}

// Payment is a payment record, payments/{holdId}, as the report reads it.
type Payment struct {
	HoldID, Status, Currency string
	Amount                   int64
	LateAccepted             bool
	RefundReason             string
	// PaidAt and RefundedAt: when the money came in and went back.
	PaidAt, RefundedAt *time.Time
}

type Place struct {
	ID, UID, Status, Order        string
	Email                         string
	JoinedAt                      time.Time
	AdmittedAt, PassUntil, DoneAt *time.Time
	// RevokedAt: an operator revoked the place then (a waiting place left
	// the line; a pass ended).
	RevokedAt *time.Time
	// AppCheck is what App Check made of the join (CONTRACT §12): valid,
	// missing, invalid, or "" when it was off.
	AppCheck string
}

// Revoked says whether an operator revoked the place. Places revoked
// before revokedAt was recorded show as an expired place that was never
// admitted.
func (p Place) Revoked() bool {
	return p.RevokedAt != nil || (p.Status == sale.StatusExpired && p.AdmittedAt == nil)
}

// LeftLine is when a place left the line other than by admission: its
// revoke (zero: it did not).
func (p Place) LeftLine() time.Time {
	switch {
	case p.AdmittedAt != nil && (p.RevokedAt == nil || !p.RevokedAt.Before(*p.AdmittedAt)):
		return time.Time{}
	case p.RevokedAt != nil:
		return *p.RevokedAt
	case p.Revoked():
		return p.JoinedAt // unknown: as early as it could have been
	}
	return time.Time{}
}

// Name is how a report names the place's person: email, else uid.
func (p Place) Name() string {
	if p.Email != "" {
		return p.Email
	}
	return "uid " + p.UID
}

type Hold struct {
	ID, UID, Status, BookingID string
	Seats                      []string
	CreatedAt, HeldUntil       time.Time
	Updated                    time.Time // the last write: a release's commit time
}

type Booking struct {
	ID, UID, Status, HoldID string
	Seats                   []string
	CreatedAt, Updated      time.Time // Updated: a cancellation's commit time
}

type Seat struct {
	Status, BookingID, HoldID string
	HeldUntil                 time.Time
}

// Read reads the sale of screening id as Firestore holds it. Errors:
// sale.ErrNoSale for a screening without a sale, NotFound (gRPC) for no
// screening.
func Read(ctx context.Context, fs *firestore.Client, id string) (*Sale, error) {
	scr, err := fs.Collection(booking.Screenings).Doc(id).Get(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := booking.DecodeScreening(scr) // read seat by seat below: a layout that is no hall is refused, not allocated
	if err != nil {
		return nil, err
	}
	cfg, _ := scr.Data()["sale"].(map[string]any)
	if cfg == nil {
		return nil, fmt.Errorf("%w: screening %q", sale.ErrNoSale, id)
	}
	st := &Sale{ScreeningID: id, Seats: map[string]Seat{}, StartsAt: sc.StartsAt}
	st.OpensAt, _ = cfg["opensAt"].(time.Time)
	for name, dst := range map[string]*int{"admitPerMinute": &st.AdmitPerMinute, "maxActive": &st.MaxActive,
		"passSeconds": &st.PassSeconds, "maxSeatsPerUser": &st.MaxSeatsPerUser} {
		n, _ := cfg[name].(int64)
		*dst = int(n)
	}
	for _, r := range sc.Rows {
		for n := 1; n <= sc.SeatsPerRow; n++ {
			st.Hall = append(st.Hall, fmt.Sprintf("%s%d", r, n))
		}
	}

	places, err := fs.Collection(sale.Queue).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range places {
		var p struct {
			UID        string     `firestore:"uid"`
			Status     string     `firestore:"status"`
			Order      string     `firestore:"order"`
			Email      string     `firestore:"email"`
			JoinedAt   time.Time  `firestore:"joinedAt"`
			AdmittedAt *time.Time `firestore:"admittedAt"`
			PassUntil  *time.Time `firestore:"passUntil"`
			DoneAt     *time.Time `firestore:"doneAt"`
			RevokedAt  *time.Time `firestore:"revokedAt"`
			AppCheck   string     `firestore:"appCheck"`
		}
		if err := s.DataTo(&p); err != nil {
			return nil, fmt.Errorf("place %s: %w", s.Ref.ID, err)
		}
		st.Places = append(st.Places, Place{ID: s.Ref.ID, UID: p.UID, Status: p.Status, Order: p.Order, Email: p.Email,
			JoinedAt: p.JoinedAt, AdmittedAt: p.AdmittedAt, PassUntil: p.PassUntil, DoneAt: p.DoneAt, RevokedAt: p.RevokedAt, AppCheck: p.AppCheck})
	}

	holds, err := fs.Collection(booking.Holds).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range holds {
		var h booking.Hold
		if err := s.DataTo(&h); err != nil {
			return nil, fmt.Errorf("hold %s: %w", s.Ref.ID, err)
		}
		st.Holds = append(st.Holds, Hold{ID: s.Ref.ID, UID: h.UID, Status: h.Status, BookingID: h.BookingID,
			Seats: h.Seats, CreatedAt: h.CreatedAt, HeldUntil: h.HeldUntil, Updated: s.UpdateTime})
	}

	bookings, err := fs.Collection(booking.Bookings).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range bookings {
		var b booking.Booking
		if err := s.DataTo(&b); err != nil {
			return nil, fmt.Errorf("booking %s: %w", s.Ref.ID, err)
		}
		st.Bookings = append(st.Bookings, Booking{ID: s.Ref.ID, UID: b.UID, Status: b.Status, HoldID: b.HoldID,
			Seats: b.Seats, CreatedAt: b.CreatedAt, Updated: s.UpdateTime})
	}

	seats, err := scr.Ref.Collection("seats").Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range seats {
		d := s.Data()
		var sd Seat
		sd.Status, _ = d["status"].(string)
		sd.BookingID, _ = d["bookingId"].(string)
		sd.HoldID, _ = d["holdId"].(string)
		sd.HeldUntil, _ = d["heldUntil"].(time.Time)
		st.Seats[s.Ref.ID] = sd
	}

	pays, err := fs.Collection(payment.Payments).Where("screeningId", "==", id).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	for _, s := range pays {
		var r payment.Record
		if err := s.DataTo(&r); err != nil {
			return nil, fmt.Errorf("payment %s: %w", s.Ref.ID, err)
		}
		st.Payments = append(st.Payments, Payment{HoldID: s.Ref.ID, Status: r.Status, Currency: r.Currency, Amount: r.Amount,
			LateAccepted: r.LateAccepted, RefundReason: r.RefundReason, PaidAt: r.PaidAt, RefundedAt: r.RefundedAt})
	}

	if st.Log, err = ReadLog(ctx, fs, id); err != nil {
		return nil, err
	}
	if s, err := fs.Collection(sale.States).Doc(id).Get(ctx); err == nil {
		st.AdmissionsRecorded, _ = s.Data()["admitted"].(int64)
	}
	switch c, err := counter.Open(ctx, fs, booking.CounterID(id)); {
	case errors.Is(err, counter.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		st.CounterShards = c.NumShards()
		if st.TicketsCounted, err = c.Count(ctx); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Interval is seats held from Start until End (zero: still held).
type Interval struct {
	Seats      int
	Start, End time.Time
}

// MostAtOnce sweeps intervals: the most seats held at once, and when.
func MostAtOnce(ivs []Interval) (int, time.Time) {
	type ev struct {
		at time.Time
		n  int
	}
	var evs []ev
	for _, c := range ivs {
		evs = append(evs, ev{c.Start, c.Seats})
		if !c.End.IsZero() {
			evs = append(evs, ev{c.End, -c.Seats})
		}
	}
	// Ends before starts at the same instant: [start, end).
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.n, b.n)) })
	n, most, at := 0, 0, time.Time{}
	for _, e := range evs {
		n += e.n
		if n > most {
			most, at = n, e.at
		}
	}
	return most, at
}

// DoneCommit is when a done place's pass ended: the commit of the booking
// that made it done. doneAt is that booking's deciding read, earlier; the
// booking's commit, conditioned on the place as read, is the first of the
// user's to commit at or after it.
func DoneCommit(p Place, bookings []Booking) time.Time {
	if p.DoneAt == nil {
		return time.Time{}
	}
	var first time.Time
	for _, b := range bookings {
		if b.UID == p.UID && !b.CreatedAt.Before(*p.DoneAt) && (first.IsZero() || b.CreatedAt.Before(first)) {
			first = b.CreatedAt
		}
	}
	if first.IsZero() {
		return *p.DoneAt
	}
	return first
}

// Fairness is the audit's verdict on who was admitted when.
type Fairness struct {
	EarlyJoiners  int `json:"earlyJoiners"`
	LateJoiners   int `json:"lateJoiners"`
	EarlyAdmitted int `json:"earlyAdmitted"`
	LateAdmitted  int `json:"lateAdmitted"`
	// EarlyBeforeLate: every early joiner still in line when the first
	// later joiner was admitted had been admitted before (true, and
	// vacuous, when no later joiner was admitted). An early joiner revoked
	// before then had left the line.
	EarlyBeforeLate bool `json:"earlyBeforeLate"`
	// EarlySpearman: ρ of join order against admission order over the
	// admitted early joiners, with its 95% confidence interval
	// (EarlySpearmanLow, EarlySpearmanHigh); EarlyLineSpearman over every
	// early joiner, against their place in the line (order), admitted or
	// not. NaN (null in JSON) below MinSpearmanPairs pairs.
	EarlySpearman     Maybe   `json:"earlySpearman"`
	EarlySpearmanLow  Maybe   `json:"earlySpearmanLow"`
	EarlySpearmanHigh Maybe   `json:"earlySpearmanHigh"`
	EarlyLineSpearman Maybe   `json:"earlyLineSpearman"`
	LatePairs         int     `json:"latePairs"`
	LateInverted      int     `json:"lateInverted"`
	LateInversions    float64 `json:"lateInversions"` // LateInverted / LatePairs
	// Skipped: places still waiting at the end whose order sorts before an
	// admitted place's (admission passed them by).
	Skipped  int      `json:"skipped"`
	Unranked int      `json:"unranked"` // early joiners without an order at the end
	Examples []string `json:"fairnessExamples,omitempty"`
}

// MinSpearmanPairs is the fewest pairs a report judges ρ over. Below it
// the statistic swings over most of [-1, 1] by chance alone: with 5 pairs
// a fair draw gives |ρ| ≥ 0.9 one time in twelve.
const MinSpearmanPairs = 10

// SpearmanInterval is the 95% confidence interval of Spearman's ρ over n
// pairs: Fisher's z-transform with the variance 1.06/(n-3) of Fieller,
// Hartley and Pearson (1957). NaNs below MinSpearmanPairs.
func SpearmanInterval(rho float64, n int) (lo, hi float64) {
	if n < MinSpearmanPairs || math.IsNaN(rho) {
		return math.NaN(), math.NaN()
	}
	r := math.Max(-1+1e-12, math.Min(1-1e-12, rho))
	z, se := math.Atanh(r), math.Sqrt(1.06/float64(n-3))
	return math.Tanh(z - 1.96*se), math.Tanh(z + 1.96*se)
}

// admissionOrder sorts admitted places in the order they were admitted:
// by admission time, then (one transaction admits many) by order, in which
// the admitter admits them.
func admissionOrder(a, b Place) int {
	return cmp.Or(a.AdmittedAt.Compare(*b.AdmittedAt), cmp.Compare(a.Order, b.Order))
}

func (st *Sale) AuditFairness() Fairness {
	var f Fairness
	var admitted, early []Place
	for _, p := range st.Places {
		if p.JoinedAt.Before(st.OpensAt) {
			f.EarlyJoiners++
			early = append(early, p)
			if p.Order == "" {
				f.Unranked++
			}
		} else {
			f.LateJoiners++
		}
		if p.AdmittedAt != nil {
			admitted = append(admitted, p)
		}
	}
	slices.SortFunc(admitted, admissionOrder)
	pos := map[string]int{}
	firstLate := -1
	var firstLateAt time.Time
	var lateJoin []Place
	var ej, ea []float64
	maxOrder := ""
	for i, p := range admitted {
		pos[p.ID] = i
		maxOrder = max(maxOrder, p.Order)
		if p.JoinedAt.Before(st.OpensAt) {
			f.EarlyAdmitted++
			ej = append(ej, float64(p.JoinedAt.UnixMicro()))
			ea = append(ea, float64(i))
		} else {
			if firstLate < 0 {
				firstLate, firstLateAt = i, *p.AdmittedAt
			}
			f.LateAdmitted++
			lateJoin = append(lateJoin, p)
		}
	}
	f.EarlyBeforeLate = true
	if firstLate >= 0 {
		for _, p := range early {
			i, in := pos[p.ID]
			left := p.LeftLine()
			if (in && i < firstLate) || (!in && !left.IsZero() && !left.After(firstLateAt)) {
				continue
			}
			f.EarlyBeforeLate = false
			if len(f.Examples) < MaxExamples {
				where := "still not admitted"
				if in {
					where = fmt.Sprintf("admitted at position %d", i)
				}
				f.Examples = append(f.Examples, fmt.Sprintf("early joiner %s (place %s) was %s when the first later joiner was admitted at position %d", p.Name(), p.ID, where, firstLate))
			}
		}
	}
	f.EarlySpearman = Maybe(Spearman(ej, ea))
	if len(ej) < MinSpearmanPairs {
		f.EarlySpearman = Maybe(nan())
	}
	lo, hi := SpearmanInterval(float64(f.EarlySpearman), len(ej))
	f.EarlySpearmanLow, f.EarlySpearmanHigh = Maybe(lo), Maybe(hi)

	// The whole line of early joiners: join order against draw order.
	slices.SortFunc(early, func(a, b Place) int { return cmp.Compare(a.Order, b.Order) })
	var lj, lo2 []float64
	for i, p := range early {
		if p.Order != "" {
			lj = append(lj, float64(p.JoinedAt.UnixMicro()))
			lo2 = append(lo2, float64(i))
		}
	}
	f.EarlyLineSpearman = Maybe(Spearman(lj, lo2))
	if len(lj) < MinSpearmanPairs {
		f.EarlyLineSpearman = Maybe(nan())
	}

	// Later joiners: pairs admitted in the other order than they joined.
	slices.SortFunc(lateJoin, func(a, b Place) int { return cmp.Or(a.JoinedAt.Compare(b.JoinedAt), cmp.Compare(a.ID, b.ID)) })
	seq := make([]int, len(lateJoin))
	for i, p := range lateJoin {
		seq[i] = pos[p.ID]
	}
	f.LatePairs = len(seq) * (len(seq) - 1) / 2
	f.LateInverted = Inversions(seq)
	if f.LatePairs > 0 {
		f.LateInversions = float64(f.LateInverted) / float64(f.LatePairs)
	}

	// Passed by: still waiting (a revoked place is not), yet before an
	// admitted one in the line.
	for _, p := range st.Places {
		if p.Status == sale.StatusWaiting && p.Order != "" && p.Order < maxOrder {
			f.Skipped++
			if len(f.Examples) < MaxExamples {
				f.Examples = append(f.Examples, fmt.Sprintf("place %s (order %s) still waits behind admitted order %s", p.ID, p.Order, maxOrder))
			}
		}
	}
	return f
}

// Metering is the audit's verdict on how admission was metered.
type Metering struct {
	Admitted             int     `json:"admitted"`
	MaxAdmittedPerMinute int     `json:"maxAdmittedPerMinute"` // in any 60 s
	MaxLivePasses        int     `json:"maxLivePasses"`
	FirstAdmission       float64 `json:"firstAdmissionSeconds"` // after opensAt; -1: nobody admitted
	// Refills: from a pass ending while every slot was taken (and someone
	// waited, and the rate allowed) to the next admission, leaving out
	// the time the sale was paused.
	Refills            int     `json:"refills"`
	RefillP50          float64 `json:"refillP50Seconds"`
	RefillMax          float64 `json:"refillMaxSeconds"`
	RefillsOverPromise int     `json:"refillsOverPromise"` // over RefillPromise
	// RefillWorst names the pass behind RefillMax.
	RefillWorst *Refill `json:"refillWorst,omitempty"`
	// Pauses and the time paused, up to the end of the report.
	Pauses        int     `json:"pauses"`
	PausedSeconds float64 `json:"pausedSeconds"`
}

// RefillPromise is the contract's bound (§7) from a pass ending to the
// next admission, while people wait and the limits allow.
const RefillPromise = 2 * time.Second

// Refill is one pass end and how long its slot stayed empty.
type Refill struct {
	QueueID string    `json:"queueId"`
	UID     string    `json:"uid"`
	Email   string    `json:"email,omitempty"`
	EndedAt time.Time `json:"endedAt"`
	Seconds float64   `json:"seconds"`
	// Refilled: an admission came; false, the slot was still empty at
	// the end of the report.
	Refilled bool `json:"refilled"`
}

// PassEnd is when a pass stopped counting against maxActive: its
// passUntil (moved to the revoke by one), or the commit that made it done.
func PassEnd(p Place, bookings []Booking) time.Time {
	end := *p.PassUntil
	if d := DoneCommit(p, bookings); !d.IsZero() && d.Before(end) {
		end = d
	}
	return end
}

// AuditMetering judges the admissions up to runEnd (or the sale's close,
// or its start, if earlier), against the limits in force at each moment
// (the log's configuration changes).
func (st *Sale) AuditMetering(runEnd time.Time) Metering {
	story := st.tell(runEnd)
	return st.audit(story)
}

func (st *Sale) audit(story story) Metering {
	m := Metering{FirstAdmission: -1, Pauses: len(story.pauses)}
	for _, p := range story.pauses {
		m.PausedSeconds += Seconds(p.To.Sub(p.From))
	}
	var times []time.Time
	type pass struct {
		p          Place
		start, end time.Time
	}
	var passes []pass
	for _, p := range st.Places {
		if p.AdmittedAt == nil || p.PassUntil == nil {
			continue
		}
		times = append(times, *p.AdmittedAt)
		passes = append(passes, pass{p, *p.AdmittedAt, PassEnd(p, st.Bookings)})
	}
	m.Admitted = len(times)
	if len(times) == 0 {
		return m
	}
	slices.SortFunc(times, time.Time.Compare)
	m.FirstAdmission = Seconds(times[0].Sub(st.OpensAt))
	// The admitter counts admissions in (now - 60 s, now]: [t, t+60 s) windows hold the same sets.
	m.MaxAdmittedPerMinute, _ = MaxInWindow(times, time.Minute)

	ivs := make([]Interval, len(passes))
	for i, p := range passes {
		ivs[i] = Interval{Seats: 1, Start: p.start, End: p.end}
	}
	m.MaxLivePasses, _ = MostAtOnce(ivs)

	// Refills: ends of passes that held the last slot. Passes that end at
	// one instant (admitted together) are one refill, named by the first.
	slices.SortFunc(passes, func(a, b pass) int { return cmp.Or(a.end.Compare(b.end), cmp.Compare(a.p.ID, b.p.ID)) })
	var refills []Refill
	seen := map[time.Time]bool{}
	soldAt := st.LastSale()
	for _, e := range passes {
		at := e.end
		if seen[at] || !at.Before(story.end) {
			continue
		}
		seen[at] = true
		limits := story.limitsAt(at)
		live := 0
		for _, p := range passes {
			if p.start.Before(at) && !p.end.Before(at) {
				live++
			}
		}
		inRate := 0
		for _, t := range times {
			if t.After(at.Add(-time.Minute)) && !t.After(at) {
				inRate++
			}
		}
		waiting := false
		for _, p := range st.Places {
			left := p.LeftLine()
			if p.JoinedAt.Before(at.Add(-time.Second)) && (p.AdmittedAt == nil || p.AdmittedAt.After(at)) && (left.IsZero() || left.After(at)) {
				waiting = true
				break
			}
		}
		soldOut := !soldAt.IsZero() && !at.Before(soldAt)
		if live < limits.MaxActive || inRate >= limits.AdmitPerMinute || !waiting || soldOut {
			continue
		}
		r := Refill{QueueID: e.p.ID, UID: e.p.UID, Email: e.p.Email, EndedAt: at}
		next := story.end
		if i, _ := slices.BinarySearchFunc(times, at, time.Time.Compare); i < len(times) && times[i].Before(story.end) {
			next, r.Refilled = times[i], true
		}
		r.Seconds = Seconds(next.Sub(at) - story.pausedWithin(at, next))
		refills = append(refills, r)
	}
	m.Refills = len(refills)
	if len(refills) == 0 {
		return m
	}
	gaps := make([]time.Duration, len(refills))
	worst := 0
	for i, r := range refills {
		gaps[i] = time.Duration(r.Seconds * float64(time.Second))
		if r.Seconds > refills[worst].Seconds {
			worst = i
		}
		if gaps[i] > RefillPromise {
			m.RefillsOverPromise++
		}
	}
	slices.Sort(gaps)
	m.RefillP50 = Seconds(Quantile(gaps, 0.5))
	m.RefillMax = refills[worst].Seconds
	m.RefillWorst = &refills[worst]
	return m
}

// LastSale is when the last seat of a sold-out hall was sold (zero if
// the hall did not sell out).
func (st *Sale) LastSale() time.Time {
	sold := map[string]bool{}
	var last time.Time
	for _, b := range st.Bookings {
		if b.Status != "confirmed" {
			continue
		}
		for _, s := range b.Seats {
			sold[s] = true
		}
		if b.CreatedAt.After(last) {
			last = b.CreatedAt
		}
	}
	if len(sold) < len(st.Hall) {
		return time.Time{}
	}
	return last
}

// SpearmanBound is the |ρ| a fair draw stays within at sigmas standard
// errors, for n pairs (+Inf when there are too few to judge).
func SpearmanBound(n int, sigmas float64) float64 {
	if n < 3 {
		return math.Inf(1)
	}
	return sigmas / math.Sqrt(float64(n-1))
}

// MaxInWindow is the most of the sorted times that fall in any window
// [t, t+w), and where the first such window starts.
func MaxInWindow(sorted []time.Time, w time.Duration) (int, time.Time) {
	best, from, j := 0, time.Time{}, 0
	for i := range sorted {
		for sorted[i].Sub(sorted[j]) >= w {
			j++
		}
		if n := i - j + 1; n > best {
			best, from = n, sorted[j]
		}
	}
	return best, from
}

// Quantile is the q-quantile (0 <= q <= 1) of sorted durations by the
// nearest rank: the smallest of them that at least q of them are at or
// below, sorted[ceil(q*n)-1] (sorted[0] for q = 0), so it is always a
// value the sample holds. Two waits of 1.1 s and 9.8 s have a p50 of
// 1.1 s and a p90 of 9.8 s; 8 of them have the largest as their p90 (7
// of 8 is under 90%). 0 for an empty sample.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// q*n carries q's rounding (0.07*100 is 7.000000000000001): a
	// millionth of a rank is no rank.
	rank := int(math.Ceil(q*float64(n) - 1e-6))
	return sorted[min(max(rank, 1), n)-1]
}

func Seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// ranks are the 1-based ranks of xs, ties sharing their mean rank.
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// Spearman is Spearman's ρ of two paired samples: the Pearson correlation
// of their ranks. NaN with fewer than 3 pairs or a constant sample.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 3 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Inversions counts the pairs i < j with later[i] > later[j]: pairs that
// came out in the other order than they went in.
func Inversions(later []int) int {
	n := 0
	for i := range later {
		for j := i + 1; j < len(later); j++ {
			if later[i] > later[j] {
				n++
			}
		}
	}
	return n
}

// Maybe is a measure that is NaN when there is nothing to measure (a
// correlation of fewer than 3 pairs); JSON writes it as null.
type Maybe float64

func (m Maybe) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(m)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}
