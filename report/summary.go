package report

import (
	"slices"
	"time"

	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// Summary is what operators read of a sale afterwards (CONTRACT §8).
// Every figure counts the same records the minutes do, so that the
// minutes add up to it.
type Summary struct {
	Seats    int `json:"seats"`    // in the hall
	Sold     int `json:"sold"`     // seats in confirmed bookings
	Places   int `json:"places"`   // people who joined
	Admitted int `json:"admitted"` // people admitted
	// Booked is how many admitted people booked at least one seat, and
	// Conversion that over Admitted (NaN: nobody admitted).
	Booked     int   `json:"booked"`
	Conversion Maybe `json:"conversion"`
	// How the passes ended: by a booking (done, early), by running out
	// (ExpiredUnused of them with nothing booked), by a revoke; or live.
	PassesDone    int `json:"passesDone"`
	PassesRanOut  int `json:"passesRanOut"`
	ExpiredUnused int `json:"expiredUnused"`
	PassesRevoked int `json:"passesRevoked"`
	PassesLive    int `json:"passesLive"`
	// Places that never got a pass: revoked while waiting, or waiting
	// still.
	RevokedWaiting int `json:"revokedWaiting"`
	StillWaiting   int `json:"stillWaiting"`
	// Time in line, from joining (or from the opening, for those who
	// joined before it) to admission, over the admitted: p50 and p90 by
	// the nearest rank (Quantile), each a wait someone had.
	WaitP50 float64 `json:"waitP50Seconds"`
	WaitP90 float64 `json:"waitP90Seconds"`
	WaitMax float64 `json:"waitMaxSeconds"`
	// Money is the takings of a priced screening (nil: nobody checked out).
	Money *Money `json:"money,omitempty"`
	// AppCheck counts the places by what App Check made of their join
	// (valid, missing, invalid; CONTRACT §12). Nil when every place joined
	// with App Check off. Under monitor, missing and invalid are the places
	// a script may have taken; under enforce they stay zero.
	AppCheck map[string]int `json:"appCheck,omitempty"`
}

// Money is what a priced sale took (CONTRACT §10), in the currency's
// smallest unit: every payment that came in, those refunded in full, and
// what stays.
type Money struct {
	Currency     string `json:"currency"`
	Checkouts    int    `json:"checkouts"`    // payment records: Checkout Sessions made
	Paid         int    `json:"paid"`         // payments that came in (kept or refunded since)
	Revenue      int64  `json:"revenue"`      // what they brought in
	Refunded     int    `json:"refunded"`     // payments refunded in full
	Refunds      int64  `json:"refunds"`      // what went back
	Net          int64  `json:"net"`          // Revenue less Refunds: the confirmed bookings' payments
	LateAccepted int    `json:"lateAccepted"` // paid after the hold ended, and booked
	LateRefunded int    `json:"lateRefunded"` // paid after the hold ended or was let go, and refunded
}

// takings sums the payment records up.
func takings(ps []Payment) *Money {
	if len(ps) == 0 {
		return nil
	}
	m := &Money{Checkouts: len(ps)}
	for _, p := range ps {
		if m.Currency == "" {
			m.Currency = p.Currency
		}
		if p.PaidAt == nil && p.Status != payment.StatusPaid && p.Status != payment.StatusRefunded {
			continue // open or expired: no money moved
		}
		m.Paid++
		m.Revenue += p.Amount
		if p.LateAccepted {
			m.LateAccepted++
		}
		if p.Status == payment.StatusRefunded {
			m.Refunded++
			m.Refunds += p.Amount
			if p.RefundReason != "" && p.RefundReason != payment.ReasonCancelled { // seats lost, released, revoked, a sale rule
				m.LateRefunded++
			}
		}
	}
	m.Net = m.Revenue - m.Refunds
	return m
}

// passEnding is how a pass ended by now.
type passEnding int

const (
	passLive passEnding = iota
	passDone
	passRanOut
	passRevoked
)

// ending says how p's pass ended by now, and when (zero while live).
func (st *Sale) ending(p Place, now time.Time) (passEnding, time.Time) {
	switch {
	case p.RevokedAt != nil && !p.RevokedAt.Before(*p.AdmittedAt):
		return passRevoked, *p.RevokedAt
	case p.Status == sale.StatusDone || p.DoneAt != nil:
		return passDone, PassEnd(p, st.Bookings)
	case p.PassUntil != nil && (p.Status == sale.StatusExpired || !p.PassUntil.After(now)):
		return passRanOut, *p.PassUntil
	}
	return passLive, time.Time{}
}

// Summarize sums the sale up as Firestore holds it, at now.
func (st *Sale) Summarize(now time.Time) Summary {
	s := Summary{Seats: len(st.Hall), Places: len(st.Places)}
	booked := map[string]bool{}
	for _, b := range st.Bookings {
		if b.Status == booking.StatusOK {
			s.Sold += len(b.Seats)
			booked[b.UID] = true
		}
	}
	var waits []time.Duration
	for _, p := range st.Places {
		if p.AppCheck != "" {
			if s.AppCheck == nil {
				s.AppCheck = map[string]int{}
			}
			s.AppCheck[p.AppCheck]++
		}
		if p.AdmittedAt == nil {
			switch {
			case p.Revoked():
				s.RevokedWaiting++
			case p.Status == sale.StatusWaiting:
				s.StillWaiting++
			}
			continue
		}
		s.Admitted++
		if booked[p.UID] {
			s.Booked++
		}
		from := p.JoinedAt
		if from.Before(st.OpensAt) {
			from = st.OpensAt
		}
		waits = append(waits, max(0, p.AdmittedAt.Sub(from)))
		switch how, _ := st.ending(p, now); how {
		case passDone:
			s.PassesDone++
		case passRanOut:
			s.PassesRanOut++
			if !booked[p.UID] {
				s.ExpiredUnused++
			}
		case passRevoked:
			s.PassesRevoked++
		default:
			s.PassesLive++
		}
	}
	s.Money = takings(st.Payments)
	s.Conversion = Maybe(nan())
	if s.Admitted > 0 {
		s.Conversion = Maybe(float64(s.Booked) / float64(s.Admitted))
	}
	slices.Sort(waits)
	s.WaitP50, s.WaitP90 = Seconds(Quantile(waits, 0.5)), Seconds(Quantile(waits, 0.9))
	if len(waits) > 0 {
		s.WaitMax = Seconds(waits[len(waits)-1])
	}
	return s
}
