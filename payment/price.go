package payment

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// Bounds of a price (CONTRACT §10).
const (
	DefaultPayHold = 600 * time.Second
	MinPayHold     = 60 * time.Second
	MaxPayHold     = 1800 * time.Second
	// MaxAmount is Stripe's largest amount for most currencies (eight
	// digits in the smallest unit).
	MaxAmount = 99_999_999
)

// Price is a screening's price: screenings/{id}.price {amount, currency,
// rows?, payHoldSeconds?}, written by admins.
type Price struct {
	Amount   int64            // per seat, in the currency's smallest unit (1250 is 12.50 EUR)
	Currency string           // lowercase ISO 4217, e.g. "eur"
	Rows     map[string]int64 // a row's own amount per seat
	PayHold  time.Duration    // how long a hold is kept for paying
}

var currencyPattern = regexp.MustCompile(`^[a-z]{3}$`)

// ScreeningPrice reads and checks the price of a screening (its
// document), with payHoldSeconds at least minPayHold (0: MinPayHold): ok
// is false for a free screening; err names what is wrong with a malformed
// price.
func ScreeningPrice(screening *firestore.DocumentSnapshot, minPayHold time.Duration) (p Price, ok bool, err error) {
	if minPayHold <= 0 {
		minPayHold = MinPayHold
	}
	rows, _ := screening.Data()["rows"].([]any)
	labels := make([]string, 0, len(rows))
	for _, r := range rows {
		if l, ok := r.(string); ok {
			labels = append(labels, l)
		}
	}
	return priceOf(screening.Data()["price"], labels, minPayHold)
}

// priceOf reads and checks a screening's price field (as stored) against
// its rows. A screening without one is not priced (ok false).
func priceOf(raw any, rows []string, minPayHold time.Duration) (p Price, ok bool, err error) {
	if raw == nil {
		return Price{}, false, nil
	}
	m, isMap := raw.(map[string]any)
	if !isMap {
		return Price{}, true, fmt.Errorf("price must be a map {amount, currency, rows?, payHoldSeconds?}, not %T", raw)
	}
	for k := range m {
		if !slices.Contains([]string{"amount", "currency", "rows", "payHoldSeconds"}, k) {
			return Price{}, true, fmt.Errorf("price has an unknown field %q", k)
		}
	}
	if p.Amount, ok = amountOf(m["amount"]); !ok {
		return Price{}, true, fmt.Errorf("price.amount must be a whole number from 1 to %d (the currency's smallest unit), not %v", MaxAmount, m["amount"])
	}
	c, _ := m["currency"].(string)
	if !currencyPattern.MatchString(c) {
		return Price{}, true, fmt.Errorf("price.currency must be a lowercase ISO 4217 code such as \"eur\", not %v", m["currency"])
	}
	p.Currency = c
	if r, present := m["rows"]; present && r != nil {
		rm, isMap := r.(map[string]any)
		if !isMap {
			return Price{}, true, fmt.Errorf("price.rows must be a map from row label to amount, not %T", r)
		}
		p.Rows = map[string]int64{}
		for row, v := range rm {
			if !slices.Contains(rows, row) {
				return Price{}, true, fmt.Errorf("price.rows names row %q, which the screening does not have", row)
			}
			a, ok := amountOf(v)
			if !ok {
				return Price{}, true, fmt.Errorf("price.rows.%s must be a whole number from 1 to %d, not %v", row, MaxAmount, v)
			}
			p.Rows[row] = a
		}
	}
	p.PayHold = DefaultPayHold
	if v, present := m["payHoldSeconds"]; present && v != nil {
		n, ok := amountOf(v)
		if !ok || time.Duration(n)*time.Second < minPayHold || time.Duration(n)*time.Second > MaxPayHold {
			return Price{}, true, fmt.Errorf("price.payHoldSeconds must be a whole number from %d to %d, not %v", int(minPayHold/time.Second), int(MaxPayHold/time.Second), v)
		}
		p.PayHold = time.Duration(n) * time.Second
	}
	return p, true, nil
}

// amountOf accepts a positive integer up to MaxAmount, or a whole double
// (what a console writes for 1250).
func amountOf(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) || x > MaxAmount {
			return 0, false
		}
		n = int64(x)
	default:
		return 0, false
	}
	return n, n >= 1 && n <= MaxAmount
}

// Seat is the price of one seat: its row's amount, or the screening's.
func (p Price) Seat(seat string) int64 {
	row := seat
	for i, r := range seat {
		if r >= '0' && r <= '9' {
			row = seat[:i]
			break
		}
	}
	if a, ok := p.Rows[row]; ok {
		return a
	}
	return p.Amount
}

// Total is the price of seats.
func (p Price) Total(seats []string) int64 {
	var t int64
	for _, s := range seats {
		t += p.Seat(s)
	}
	return t
}

// Format writes an amount in a currency's smallest unit as operators and
// the local checkout page show it: "27.50 EUR" (two decimals, the
// currencies of a cinema's sale; the app formats every currency with Intl).
func Format(amount int64, currency string) string {
	sign := ""
	if amount < 0 {
		sign, amount = "-", -amount
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, amount/100, amount%100, strings.ToUpper(currency))
}
