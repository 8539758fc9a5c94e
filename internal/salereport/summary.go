package salereport

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/sale"
)

// Summary is what operators read of a sale afterwards (CONTRACT §8).
type Summary struct {
	Seats    int `json:"seats"`    // in the hall
	Sold     int `json:"sold"`     // seats in confirmed bookings
	Places   int `json:"places"`   // people who joined
	Admitted int `json:"admitted"` // people admitted
	// Booked is how many admitted people booked at least one seat, and
	// Conversion that over Admitted (NaN: nobody admitted).
	Booked     int   `json:"booked"`
	Conversion Maybe `json:"conversion"`
	// ExpiredUnused: passes that ended (expired) with nothing booked.
	ExpiredUnused int `json:"expiredUnused"`
	// Time in line, from joining (or from the opening, for those who
	// joined before it) to admission, over the admitted.
	WaitP50 float64 `json:"waitP50Seconds"`
	WaitP90 float64 `json:"waitP90Seconds"`
	WaitMax float64 `json:"waitMaxSeconds"`
}

// Summarize sums the sale up as Firestore holds it.
func (st *Sale) Summarize() Summary {
	s := Summary{Seats: len(st.Hall), Places: len(st.Places)}
	booked := map[string]bool{}
	for _, b := range st.Bookings {
		if b.Status == "confirmed" {
			s.Sold += len(b.Seats)
			booked[b.UID] = true
		}
	}
	var waits []time.Duration
	for _, p := range st.Places {
		if p.AdmittedAt != nil {
			s.Admitted++
			if booked[p.UID] {
				s.Booked++
			}
			from := p.JoinedAt
			if from.Before(st.OpensAt) {
				from = st.OpensAt
			}
			waits = append(waits, max(0, p.AdmittedAt.Sub(from)))
		}
		if p.Status == sale.StatusExpired && !booked[p.UID] {
			s.ExpiredUnused++
		}
	}
	s.Conversion = Maybe(float64(s.Booked) / float64(s.Admitted))
	if s.Admitted == 0 {
		s.Conversion = Maybe(nan())
	}
	slices.Sort(waits)
	s.WaitP50, s.WaitP90 = Seconds(Quantile(waits, 0.5)), Seconds(Quantile(waits, 0.9))
	if len(waits) > 0 {
		s.WaitMax = Seconds(waits[len(waits)-1])
	}
	return s
}

// Minute is one saleStats minute, with its key (YYYYMMDDHHmm, UTC).
type Minute struct {
	Key string `json:"minute"`
	sale.Minute
}

// ReadMinutes reads a sale's minute figures, in time order.
func ReadMinutes(ctx context.Context, fs *firestore.Client, id string) ([]Minute, error) {
	snaps, err := fs.Collection(sale.Stats).Doc(id).Collection("minutes").OrderBy(firestore.DocumentID, firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("salereport: minutes of %s: %w", id, err)
	}
	out := make([]Minute, 0, len(snaps))
	for _, s := range snaps {
		var m sale.Minute
		if err := s.DataTo(&m); err != nil {
			return nil, fmt.Errorf("salereport: minute %s of %s: %w", s.Ref.ID, id, err)
		}
		out = append(out, Minute{Key: s.Ref.ID, Minute: m})
	}
	return out, nil
}
