package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/jobs"
	stripe "github.com/stripe/stripe-go/v85"
	"go.opentelemetry.io/otel/metric"
)

// Errors to branch on; the HTTP layer maps them (CONTRACT §10). Booking's
// errors (booking.ErrHoldNotFound, ErrForbidden, ErrHoldExpired,
// ErrHoldConfirmed, ErrScreeningStarted) pass through.
var (
	// ErrNotPriced: the hold's screening has no price, or a malformed one
	// (409 not_priced; the message says which).
	ErrNotPriced = errors.New("payment: the screening is not priced")
	// ErrStripeUnavailable: Stripe could not be reached, or failed, or was
	// too slow; nothing changed and the caller may retry (503).
	ErrStripeUnavailable = errors.New("payment: Stripe is unavailable")
	// ErrNotConfigured: the deployment has no Stripe secret key or webhook
	// secret (503; the message names the variable).
	ErrNotConfigured = errors.New("payment: payments are not configured")
	// ErrInvalidSignature: a webhook's Stripe-Signature is missing, wrong
	// or older than Stripe's 300 s tolerance (400 invalid_signature).
	ErrInvalidSignature = errors.New("payment: invalid signature")
	// ErrBadEvent: a correctly signed webhook body that is not an event of
	// the pinned API version (400 invalid_argument).
	ErrBadEvent = errors.New("payment: bad event")
)

// Service takes payment for holds of priced screenings through Stripe
// Checkout (CONTRACT §10): it makes one Checkout Session per hold, applies
// Stripe's webhook events exactly once each under the per-event leases of
// stripeEvents, and expires sessions and makes refunds as their records
// fall due. It confirms through booking's own commit (booking.Service's
// StartPaying, ConfirmPayment, EndPaying). Safe for concurrent use.
type Service struct {
	client   *firestore.Client
	bookings *booking.Service
	ledger   *Ledger
	stripe   *stripe.Client
	cfg      Config
	events   *jobs.Events
	log      *slog.Logger
	metrics  *paymentMetrics
	hooks    hooks
	// minPayHold is the shortest payHoldSeconds a price may set
	// (MinPayHold; tests lower it).
	minPayHold time.Duration
}

// hooks are test-only (export_test.go): they plant bugs that the money
// audit must catch, or stall a handler between its steps.
type hooks struct {
	// noEventLease plants a bug: events are applied without their lease,
	// blindly by their type, as the Firebase extension did.
	noEventLease bool
	// arrivalOrder plants a bug: an event is applied by its type in the
	// order it arrives, not judged by the hold's and the payment's state.
	arrivalOrder bool
	// beforeSettle runs between a webhook run's deciding commit and its
	// call to Stripe.
	beforeSettle func(holdID string)
	// beforeDone runs in a webhook run's transaction before its done mark.
	beforeDone func()
	// beforePaying runs in a checkout's transaction that turns its hold
	// paying, just before it commits.
	beforePaying func()
}

// Option configures a Service.
type Option func(*Service)

// WithLogger sets where the Service logs (default: JSON on stderr).
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithMeterProvider records firelock.payments (CONTRACT §10, §9) into mp,
// and the metrics of the event leases.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Service) { s.metrics = newPaymentMetrics(mp) }
}

// WithMinPayHold lowers the shortest payHoldSeconds a price may set
// (default MinPayHold, 60 s). Tests use holds of seconds.
func WithMinPayHold(d time.Duration) Option { return func(s *Service) { s.minPayHold = d } }

// WithEventOptions passes options to the per-event leases (e.g.
// jobs.WithLease in tests).
func WithEventOptions(opts ...jobs.Option) Option {
	return func(s *Service) { s.events = jobs.NewEvents(s.client, Events, "type", opts...) }
}

// New returns a Service on client that books through bookings, whose Till
// must be ledger (booking.WithTill), reaching Stripe as cfg says.
func New(client *firestore.Client, bookings *booking.Service, ledger *Ledger, cfg Config, opts ...Option) *Service {
	s := &Service{client: client, bookings: bookings, ledger: ledger, cfg: cfg, stripe: newStripe(cfg),
		log: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	for _, o := range opts {
		o(s)
	}
	if s.metrics == nil {
		s.metrics = newPaymentMetrics(nil)
	}
	if s.events == nil {
		s.events = jobs.NewEvents(client, Events, "type", jobs.WithLease(EventLease), jobs.WithMeterProvider(s.metrics.mp))
	}
	return s
}

// EventLease is how long a webhook run holds its event without renewing:
// a crashed run holds up its event's next delivery this long.
const EventLease = 20 * time.Second

// Checkout is CheckoutHold's answer (CONTRACT §10).
type Checkout struct {
	HoldID      string    `json:"holdId"`
	CheckoutURL string    `json:"checkoutUrl"`
	HeldUntil   time.Time `json:"heldUntil"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
}

// CheckoutRequest asks to pay for a hold.
type CheckoutRequest struct {
	UID    string
	HoldID string
	// ReturnURL is where Stripe's page sends the buyer back (an origin the
	// deployment allows: the HTTP layer checks it); empty: Origin + "/"
	// with the screening.
	ReturnURL string
	Origin    string
}

// Checkout makes the Checkout Session of uid's live hold and turns it
// paying (CONTRACT §10), or answers the session it has (created false).
// The session is created before anything is written, with an idempotency
// key derived from the hold and parameters that derive from the hold
// alone, so every retry gets the same session from Stripe and Stripe being
// out of reach changes nothing (ErrStripeUnavailable). Then one commit
// turns the hold paying, moves its end to the later of its own and now +
// the price's payHoldSeconds, and writes payments/{holdId}. Should that
// commit be refused for good (the hold ended, was confirmed, its screening
// started, its pass was revoked), the session is expired; should it fail
// for a passing reason, the session is left for the retry, which Stripe
// hands the same session (CONTRACT §10a). Errors: booking.ErrHoldNotFound,
// ErrForbidden, ErrHoldExpired, ErrHoldConfirmed, ErrScreeningStarted,
// ErrInvalidArgument (neither a return URL nor an origin), ErrNotPriced,
// ErrStripeUnavailable, ErrNotConfigured.
func (s *Service) Checkout(ctx context.Context, r CheckoutRequest) (Checkout, bool, error) {
	if s.stripe == nil {
		return Checkout{}, false, fmt.Errorf("%w: %s is not set", ErrNotConfigured, EnvSecretKey)
	}
	if r.ReturnURL == "" && r.Origin == "" {
		return Checkout{}, false, fmt.Errorf("%w: a returnUrl, or the Origin of a browser on the app, says where Stripe sends the buyer back", booking.ErrInvalidArgument)
	}
	h, live, err := s.bookings.ReadHold(ctx, r.UID, r.HoldID)
	if err != nil {
		return Checkout{}, false, err
	}
	switch {
	case h.Status == booking.StatusPaying && live:
		return s.checkoutOf(ctx, h)
	case h.Status == booking.StatusPaying:
		// Its end has passed, by the read's time: its seats may be
		// someone else's, so its URL is not handed out again, whether or
		// not the sweep has marked it yet (CONTRACT §10a).
		return Checkout{}, false, booking.ErrHoldExpired
	case h.Status == booking.StatusOK:
		return Checkout{}, false, booking.ErrHoldConfirmed
	case h.Status != booking.StatusHeld || !live:
		return Checkout{}, false, booking.ErrHoldExpired
	}
	snap, err := s.client.Collection(booking.Screenings).Doc(h.ScreeningID).Get(ctx)
	if err != nil {
		return Checkout{}, false, err
	}
	price, priced, err := ScreeningPrice(snap, s.minPayHold)
	switch {
	case !priced:
		return Checkout{}, false, fmt.Errorf("%w: screening %q is free: confirm the hold instead", ErrNotPriced, h.ScreeningID)
	case err != nil:
		return Checkout{}, false, fmt.Errorf("%w: screening %q: %v", ErrNotPriced, h.ScreeningID, err)
	}
	title, _ := snap.Data()["title"].(string)
	returnURL := r.ReturnURL
	if returnURL == "" {
		returnURL = r.Origin + "/?screening=" + url.QueryEscape(h.ScreeningID)
	}
	cs, err := s.createSession(ctx, h, title, price, returnURL)
	if err != nil {
		return Checkout{}, false, err
	}
	amount := price.Total(h.Seats)
	rec := Record{HoldID: h.ID, UID: h.UID, ScreeningID: h.ScreeningID, Seats: h.Seats, SessionID: cs.ID,
		CheckoutURL: s.checkoutURL(cs, h.ID), ReturnURL: returnURL, Amount: amount, Currency: price.Currency, Status: StatusOpen}
	h, started, err := s.bookings.StartPaying(ctx, r.UID, r.HoldID, price.PayHold,
		booking.HoldPayment{SessionID: cs.ID, Amount: amount, Currency: price.Currency},
		func(tx *firestore.Transaction, _ booking.Hold, now time.Time) error {
			rec.CreatedAt, rec.UpdatedAt = now, now
			if h := s.hooks.beforePaying; h != nil {
				h()
			}
			return tx.Create(s.ledger.Payment(r.HoldID), rec)
		})
	if err != nil {
		if refusedForGood(err) {
			// No retry can record the session: expire it, so it cannot be
			// paid (best effort; it expires by itself at expires_at).
			s.expireOrphan(ctx, cs.ID, r.HoldID, err)
		}
		// Otherwise the failure passes (a deadline, the caller gone, an
		// abort, Firestore out of reach), and the commit may even have
		// landed unheard: the retry gets this very session back from
		// Stripe (the same key and parameters) and records it, or finds
		// it recorded. Expired now, it would hand the buyer a dead
		// checkoutUrl (CONTRACT §10a). Unrecorded, nobody has its URL.
		return Checkout{}, false, err
	}
	if !started { // a concurrent attempt turned it paying: its session stands
		if h.Payment == nil || h.Payment.SessionID != cs.ID {
			s.expireOrphan(ctx, cs.ID, r.HoldID, errors.New("another attempt's session was recorded"))
		}
		return s.checkoutOf(ctx, h)
	}
	return Checkout{HoldID: h.ID, CheckoutURL: rec.CheckoutURL, HeldUntil: h.HeldUntil, Amount: amount, Currency: price.Currency}, true, nil
}

// refusedForGood: StartPaying refused the hold for a reason every retry
// meets again (the hold ended or is gone, was confirmed, its screening
// started, its pass was revoked), so no retry records the session it
// refused (CONTRACT §10a).
func refusedForGood(err error) bool {
	for _, final := range []error{booking.ErrHoldExpired, booking.ErrHoldConfirmed, booking.ErrScreeningStarted,
		booking.ErrNotAdmitted, booking.ErrHoldNotFound, booking.ErrForbidden} {
		if errors.Is(err, final) {
			return true
		}
	}
	return false
}

// checkoutOf answers the Checkout of paying hold h, from its record.
func (s *Service) checkoutOf(ctx context.Context, h booking.Hold) (Checkout, bool, error) {
	snap, err := s.ledger.Payment(h.ID).Get(ctx)
	if err != nil {
		return Checkout{}, false, fmt.Errorf("payment: the record of paying hold %s: %w", h.ID, err)
	}
	r, _, err := recordOf(snap)
	if err != nil {
		return Checkout{}, false, err
	}
	return Checkout{HoldID: h.ID, CheckoutURL: r.CheckoutURL, HeldUntil: h.HeldUntil, Amount: r.Amount, Currency: r.Currency}, false, nil
}

// expireOrphan expires a session that no record names (best effort).
func (s *Service) expireOrphan(ctx context.Context, sessionID, holdID string, why error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	if _, err := s.expireSession(cctx, sessionID); err != nil {
		s.log.WarnContext(ctx, "could not expire an unrecorded Checkout Session (it expires by itself at expires_at)", "holdId", holdID, "sessionId", sessionID, "why", why.Error(), "error", err.Error())
	}
}

// createSession creates (or, on a retry, gets back) hold h's Checkout
// Session: one line per seat at its price, client_reference_id and
// metadata naming the hold. Its parameters derive from the hold and the
// return URL only, as Stripe's idempotency requires: expires_at is 30
// minutes after the latest the hold can end (its creation +
// MaxHoldSinceCreate), plus a minute for clocks, which always lies within
// Stripe's window of 30 minutes to 24 hours from now. The session is
// expired through the API when the hold ends, so expires_at is only a
// backstop.
func (s *Service) createSession(ctx context.Context, h booking.Hold, title string, price Price, returnURL string) (*stripe.CheckoutSession, error) {
	meta := map[string]string{"holdId": h.ID, "screeningId": h.ScreeningID, "uid": h.UID}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(h.ID),
		Metadata:          meta,
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta},
		SuccessURL:        stripe.String(SuccessURL(returnURL, h.ID)),
		CancelURL:         stripe.String(CancelURL(returnURL, h.ID)),
		ExpiresAt:         stripe.Int64(h.CreatedAt.Add(booking.MaxHoldSinceCreate + 31*time.Minute).Unix()),
	}
	for _, seat := range h.Seats {
		name := "Seat " + seat
		if title != "" {
			name = title + " · seat " + seat
		}
		p.LineItems = append(p.LineItems, &stripe.CheckoutSessionCreateLineItemParams{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency: stripe.String(price.Currency), UnitAmount: stripe.Int64(price.Seat(seat)),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(name)},
			},
		})
	}
	p.SetIdempotencyKey(checkoutKey(h.ID))
	cs, err := s.stripe.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		if _, t := stripeCode(err); t == stripe.ErrorTypeIdempotency {
			return nil, fmt.Errorf("%w: a checkout of this hold was started with another returnUrl; send the same one", booking.ErrInvalidArgument)
		}
		return nil, stripeError("create checkout session", err)
	}
	return cs, nil
}

// checkoutURL is where the buyer pays session cs of hold holdID: Stripe's
// hosted page, or the configured stand-in.
func (s *Service) checkoutURL(cs *stripe.CheckoutSession, holdID string) string {
	if s.cfg.CheckoutPage == "" {
		return cs.URL
	}
	return s.cfg.CheckoutPage + "?hold=" + url.QueryEscape(holdID) + "&session=" + url.QueryEscape(cs.ID)
}

// SuccessURL and CancelURL are where a checkout of hold holdID sends the
// buyer back (the session's success_url and cancel_url).
func SuccessURL(returnURL, holdID string) string {
	return withQuery(returnURL, "checkout", "paid", holdID)
}
func CancelURL(returnURL, holdID string) string {
	return withQuery(returnURL, "checkout", "cancelled", holdID)
}

// withQuery adds the checkout's outcome and the hold to a return URL.
func withQuery(raw, key, value, holdID string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	q.Set("hold", holdID)
	u.RawQuery = q.Encode()
	return u.String()
}
