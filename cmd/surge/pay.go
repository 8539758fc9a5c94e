package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/payment"
)

// The priced surge (-pay, issue #37): the screening has a price, and an
// admitted shopper pays for the hold instead of confirming it. CheckoutHold
// makes the Checkout Session (through a counting proxy in front of
// stripe-mock), and the shopper "pays" by having Stripe's signed
// checkout.session.completed delivered to StripeWebhook, after 1 to 20 s; a
// share walks away from the checkout (the sweep expires the session), a few
// pay after the hold lapsed, and a share of deliveries come twice, as
// Stripe's at-least-once delivery does. At the end the money audit checks
// that every paid session is exactly one confirmed booking or one refund.

// surgeOrigin is the app's origin the functions allow (returnUrl).
const surgeOrigin = "http://surge.invalid"

// Price of a seat in the priced surge (9.00 EUR), and the hold kept for
// paying: the shortest a price may set.
const (
	surgePrice   = 900
	surgePayHold = payment.MinPayHold
)

// payRun is the priced surge's Stripe side and what its shoppers did.
type payRun struct {
	mock   *stripelocal.Mock
	proxy  *httptest.Server
	secret string

	mu       sync.Mutex
	calls    []stripeCall
	paid     map[string]bool // holds whose session the shoppers paid
	webhook  []time.Duration // every delivery's answer time
	outcomes map[string]int  // StripeWebhook's outcomes

	checkouts, walked, late, dupes atomic.Int64
}

type stripeCall struct {
	method, path, key string
}

// startPayments starts stripe-mock behind a counting proxy, and sets the
// functions' Stripe environment (read when their APIs are built).
func startPayments(ctx context.Context) (*payRun, error) {
	mock, err := stripelocal.StartMock(ctx)
	if err != nil {
		return nil, err
	}
	target, _ := url.Parse(mock.URL)
	p := &payRun{mock: mock, secret: stripelocal.NewWebhookSecret(), paid: map[string]bool{}, outcomes: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls = append(p.calls, stripeCall{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key")})
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	for k, v := range map[string]string{
		payment.EnvSecretKey: "sk_test_surge", payment.EnvWebhookSecret: p.secret, payment.EnvAPIURL: p.proxy.URL,
		payment.EnvCheckoutPage: surgeOrigin + "/checkout", "FIRELOCK_ALLOWED_ORIGINS": surgeOrigin,
	} {
		if err := setenv(k, v); err != nil {
			p.stop()
			return nil, err
		}
	}
	return p, nil
}

func (p *payRun) stop() {
	if p.proxy != nil {
		p.proxy.Close()
	}
	p.mock.Stop()
}

// price is the surge screening's price field.
func (p *payRun) price() map[string]any {
	return map[string]any{"amount": surgePrice, "currency": "eur", "payHoldSeconds": int(surgePayHold / time.Second)}
}

// pay is what a shopper with hold h does instead of confirming it: check
// out, then pay after thinking (or walk away, or pay late). It returns the
// shopper's outcome.
func (s *sim) pay(u *user, h heldRecord) string {
	p := s.payments
	a, err := s.call("CheckoutHold", u, map[string]any{"holdId": h.ID, "returnUrl": surgeOrigin + "/"})
	switch {
	case err != nil:
		s.fail("user %d: CheckoutHold: %v", u.i, err)
		return "checkout failed"
	case a.status != http.StatusCreated && a.status != http.StatusOK:
		return "checkout " + a.code()
	}
	p.checkouts.Add(1)
	checkout, _ := url.Parse(a.str("checkoutUrl"))
	amount, _ := a.body["amount"].(float64)
	session := stripelocal.Session{ID: checkout.Query().Get("session"), HoldID: h.ID, ScreeningID: s.screening, UID: u.acct.uid,
		Amount: int64(amount), Currency: a.str("currency")}
	heldUntil, _ := time.Parse(time.RFC3339Nano, a.str("heldUntil"))
	r := u.rng.Float64()
	switch {
	case r < s.cfg.PayWalk:
		p.walked.Add(1)
		s.sleep(s.cfg.ThinkMax)
		return "walked away from the checkout"
	case r < s.cfg.PayWalk+s.cfg.PayLate:
		p.late.Add(1)
		if !s.sleep(time.Until(heldUntil) + 2*time.Second) {
			return "paying at the end"
		}
	default:
		if !s.sleep(time.Second + time.Duration(u.rng.Int64N(int64(19*time.Second)))) {
			return "paying at the end"
		}
	}
	// Paying ends the pass (a booking: done), and with it the rules' read
	// of the seat map, as a confirmation does.
	u.confirming.Store(true)
	p.mu.Lock()
	p.paid[h.ID] = true
	p.mu.Unlock()
	copies := 1
	if u.rng.Float64() < s.cfg.PayDuplicates {
		copies = 2
		p.dupes.Add(1)
	}
	ev := stripelocal.Event("checkout.session.completed", "", session)
	outcomes := make([]string, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() { outcomes[i] = s.deliver(ev) })
	}
	wg.Wait()
	switch {
	case slices.Contains(outcomes, payment.OutcomePaid), slices.Contains(outcomes, payment.OutcomeLateAccepted):
		s.seatsBooked.Add(int64(len(h.Seats)))
		return "paid and booked"
	case slices.Contains(outcomes, payment.OutcomeRefunded):
		return "paid and refunded"
	}
	return "paid: " + strings.Join(outcomes, ", ")
}

// deliver delivers a signed event to StripeWebhook until it is answered
// 2xx, as Stripe does (sooner: its retries wait minutes), and returns the
// outcome.
func (s *sim) deliver(ev []byte) string {
	p := s.payments
	for attempt := 0; attempt < 20; attempt++ {
		start := time.Now()
		code, body, err := stripelocal.Deliver(s.callCtx, s.http, s.base+"/StripeWebhook", p.secret, ev)
		took := time.Since(start)
		p.mu.Lock()
		p.webhook = append(p.webhook, took)
		p.mu.Unlock()
		if err == nil && code == http.StatusOK {
			outcome := "?"
			if i := strings.Index(string(body), `"outcome":"`); i >= 0 {
				outcome, _, _ = strings.Cut(string(body)[i+len(`"outcome":"`):], `"`)
			}
			p.mu.Lock()
			p.outcomes[outcome]++
			p.mu.Unlock()
			return outcome
		}
		if s.callCtx.Err() != nil {
			return "cut off"
		}
		s.note(fmt.Sprintf("StripeWebhook %d", code))
		time.Sleep(500 * time.Millisecond)
	}
	return "never answered 200"
}

// payReport is the priced surge's part of the report.
type payReport struct {
	Checkouts          int64          `json:"checkouts"`
	Paid               int            `json:"paid"`         // payments recorded paid (booked)
	Refunded           int            `json:"refunded"`     // recorded refunded
	LateAccepted       int            `json:"lateAccepted"` // late payments booked
	WalkedAway         int64          `json:"walkedAway"`
	PaidLate           int64          `json:"paidLate"` // shoppers who paid after their hold lapsed
	Duplicated         int64          `json:"duplicated"`
	MoneyMismatches    int            `json:"moneyMismatches"`
	Mismatches         []string       `json:"mismatches,omitempty"`
	Revenue            int64          `json:"revenue"` // paid less refunded, smallest unit
	WebhookP99ms       float64        `json:"webhookP99Ms"`
	StripeCalls        map[string]int `json:"stripeCalls"` // by kind: create, expire, refund, other
	StripeCallsPerSeat float64        `json:"stripeCallsPerSeatSold"`
	WebhookOutcomes    map[string]int `json:"webhookOutcomes"`
}

// audit reads every payment record and booking of the screening and
// checks them against what the shoppers paid and what reached Stripe.
func (p *payRun) audit(ctx context.Context, fs *firestore.Client, screening string, seatsSold int) payReport {
	var r payReport
	bad := func(format string, args ...any) {
		r.MoneyMismatches++
		if len(r.Mismatches) < 20 {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf(format, args...))
		}
	}
	records, err := fs.Collection(payment.Payments).Where("screeningId", "==", screening).Documents(ctx).GetAll()
	if err != nil {
		bad("read the payment records: %v", err)
		return r
	}
	bookings, err := fs.Collection(booking.Bookings).Where("screeningId", "==", screening).Documents(ctx).GetAll()
	if err != nil {
		bad("read the bookings: %v", err)
		return r
	}
	confirmed := map[string]string{} // hold -> booking
	var kept int64
	for _, b := range bookings {
		d := b.Data()
		pay, _ := d["payment"].(map[string]any)
		if pay == nil {
			bad("booking %s of the priced screening has no payment", b.Ref.ID)
			continue
		}
		if d["status"] == booking.StatusOK {
			hold, _ := d["holdId"].(string)
			confirmed[hold] = b.Ref.ID
			amount, _ := pay["amount"].(int64)
			kept += amount
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	refundKeys := map[string]map[string]bool{}
	r.StripeCalls = map[string]int{}
	for _, c := range p.calls {
		switch {
		case c.method == http.MethodPost && c.path == "/v1/checkout/sessions":
			r.StripeCalls["create"]++
		case c.method == http.MethodPost && strings.HasSuffix(c.path, "/expire"):
			r.StripeCalls["expire"]++
		case c.method == http.MethodPost && c.path == "/v1/refunds":
			r.StripeCalls["refund"]++
			hold := strings.TrimPrefix(c.key, "firelock-refund-")
			if refundKeys[hold] == nil {
				refundKeys[hold] = map[string]bool{}
			}
			refundKeys[hold][c.key] = true
		default:
			r.StripeCalls["other"]++
		}
	}
	var paid, refunded int64
	for _, snap := range records {
		var rec payment.Record
		if err := snap.DataTo(&rec); err != nil {
			bad("record %s: %v", snap.Ref.ID, err)
			continue
		}
		hold := snap.Ref.ID
		shopperPaid := p.paid[hold]
		switch rec.Status {
		case payment.StatusPaid:
			paid += rec.Amount
			r.Paid++
			if rec.LateAccepted {
				r.LateAccepted++
			}
			if !shopperPaid || confirmed[hold] == "" || confirmed[hold] != rec.BookingID || len(refundKeys[hold]) > 0 || rec.RefundDue {
				bad("hold %s: recorded paid (booking %q, refund due %v), the shopper paid %v, confirmed booking %q, %d refunds", hold, rec.BookingID, rec.RefundDue, shopperPaid, confirmed[hold], len(refundKeys[hold]))
			}
		case payment.StatusRefunded:
			paid += rec.Amount
			refunded += rec.Amount
			r.Refunded++
			if !shopperPaid || confirmed[hold] != "" || len(refundKeys[hold]) != 1 {
				bad("hold %s: refunded (%s), the shopper paid %v, confirmed booking %q, %d refund keys", hold, rec.RefundReason, shopperPaid, confirmed[hold], len(refundKeys[hold]))
			}
		default: // open or expired: nobody's money was taken
			if shopperPaid || confirmed[hold] != "" {
				bad("hold %s: recorded %s, but the shopper paid (%v) or a booking is confirmed (%q)", hold, rec.Status, shopperPaid, confirmed[hold])
			}
		}
	}
	for hold := range p.paid {
		if !slices.ContainsFunc(records, func(s *firestore.DocumentSnapshot) bool { return s.Ref.ID == hold }) {
			bad("hold %s: paid, and no record", hold)
		}
	}
	if kept != paid-refunded {
		bad("revenue %d (the confirmed bookings' payments) is not paid %d less refunded %d", kept, paid, refunded)
	}
	r.Revenue = paid - refunded
	r.Checkouts, r.WalkedAway, r.PaidLate, r.Duplicated = p.checkouts.Load(), p.walked.Load(), p.late.Load(), p.dupes.Load()
	r.WebhookOutcomes = p.outcomes
	if seatsSold > 0 {
		r.StripeCallsPerSeat = float64(len(p.calls)) / float64(seatsSold)
	}
	if n := len(p.webhook); n > 0 {
		d := slices.Clone(p.webhook)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		r.WebhookP99ms = float64(d[min(n-1, n*99/100)].Microseconds()) / 1000
	}
	return r
}

// judgePay adds the priced surge's checks and goals (with -pay only): the
// money audit is correctness; the webhook's p99 and the Stripe calls per
// seat sold are goals.
func (r *Report) judgePay(g goals, add func(kind, format string, args ...any)) {
	if r.Pay == nil {
		return
	}
	if r.Pay.MoneyMismatches > 0 {
		add("correctness", "%d money mismatches, e.g. %s", r.Pay.MoneyMismatches, r.Pay.Mismatches[0])
	}
	if g.WebhookP99 > 0 && r.Pay.WebhookP99ms > ms(g.WebhookP99) {
		add("goal", "StripeWebhook's p99 %.0f ms (goal %s)", r.Pay.WebhookP99ms, g.WebhookP99)
	}
	if g.StripeCallsPerSeat > 0 && r.Pay.StripeCallsPerSeat > g.StripeCallsPerSeat {
		add("goal", "%.2f Stripe API calls per seat sold (goal %.2f)", r.Pay.StripeCallsPerSeat, g.StripeCallsPerSeat)
	}
}

// printPay prints the money audit.
func (r *Report) printPay(p func(format string, args ...any)) {
	if r.Pay == nil {
		return
	}
	m := r.Pay
	ok := "ok"
	if m.MoneyMismatches > 0 {
		ok = "FAIL"
	}
	p("\npayments  (paid/refunded/late accepted; money mismatches)  %d/%d/%d; %d  %s", m.Paid, m.Refunded, m.LateAccepted, m.MoneyMismatches, ok)
	p("  %d checkouts, %d walked away, %d paid after the hold lapsed, %d deliveries duplicated; revenue %d.%02d EUR",
		m.Checkouts, m.WalkedAway, m.PaidLate, m.Duplicated, m.Revenue/100, m.Revenue%100)
	p("  StripeWebhook p99 %.0f ms (goal %s); Stripe API calls %s: %.2f per seat sold (goal %.2f)",
		m.WebhookP99ms, r.Config.Goals.WebhookP99, countsLine(m.StripeCalls), m.StripeCallsPerSeat, r.Config.Goals.StripeCallsPerSeat)
	p("  webhook outcomes: %s", countsLine(m.WebhookOutcomes))
	for _, e := range m.Mismatches {
		p("  ! %s", e)
	}
}

func setenv(k, v string) error { return os.Setenv(k, v) }
