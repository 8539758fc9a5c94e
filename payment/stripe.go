package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
)

// Config is how the Service reaches Stripe. Deployed, the secrets come
// from Secret Manager (deploy.sh); locally, cmd/firelock-local points the
// API at stripe-mock and the checkout page at its stand-in.
type Config struct {
	// SecretKey is the Stripe secret key (STRIPE_SECRET_KEY).
	SecretKey string
	// WebhookSecret is the webhook endpoint's signing secret
	// (STRIPE_WEBHOOK_SECRET, "whsec_...").
	WebhookSecret string
	// APIURL is Stripe's API (STRIPE_API_URL); empty: api.stripe.com.
	APIURL string
	// CheckoutPage, if set (FIRELOCK_CHECKOUT_PAGE), replaces Stripe's
	// hosted page in the checkoutUrl answered: the local run's stand-in,
	// which sends the webhook events a hosted page would make Stripe send.
	CheckoutPage string
	// HTTPClient carries the calls to Stripe (default: a client whose
	// requests time out after CallTimeout). Tests put a counting or
	// fault-injecting transport here.
	HTTPClient *http.Client
}

// Environment variables of Config.
const (
	EnvSecretKey     = "STRIPE_SECRET_KEY"
	EnvWebhookSecret = "STRIPE_WEBHOOK_SECRET"
	EnvAPIURL        = "STRIPE_API_URL"
	EnvCheckoutPage  = "FIRELOCK_CHECKOUT_PAGE"
)

// ConfigFromEnv reads Config from the environment.
func ConfigFromEnv() Config {
	return Config{
		SecretKey: os.Getenv(EnvSecretKey), WebhookSecret: os.Getenv(EnvWebhookSecret),
		APIURL: os.Getenv(EnvAPIURL), CheckoutPage: os.Getenv(EnvCheckoutPage),
	}
}

// stripe-go's own log lines are off: the Service logs what failed, as JSON
// lines Cloud Logging reads.

// CallTimeout bounds one HTTP request to Stripe (stripe-go's default is
// 80 s); stripe-go tries a failed request twice more, with the same
// idempotency key.
const CallTimeout = 8 * time.Second

// newStripe is a Stripe client for c (nil without a secret key).
func newStripe(c Config) *stripe.Client {
	if c.SecretKey == "" {
		return nil
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: CallTimeout}
	}
	cfg := &stripe.BackendConfig{HTTPClient: hc, LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if c.APIURL != "" {
		cfg.URL = stripe.String(c.APIURL)
	}
	b := stripe.GetBackendWithConfig(stripe.APIBackend, cfg)
	return stripe.NewClient(c.SecretKey, stripe.WithBackends(&stripe.Backends{API: b, Connect: b, Uploads: b, MeterEvents: b}))
}

// stripeError sorts an error of a Stripe call: Stripe out of reach, slow,
// overloaded or failing (5xx, 429) is ErrStripeUnavailable, which the
// caller may retry; anything else is Stripe refusing the request.
func stripeError(op string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && (se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden) {
		return fmt.Errorf("%w: Stripe refused the secret key (%s): %s: %v", ErrNotConfigured, EnvSecretKey, op, err)
	}
	if errors.As(err, &se) && se.HTTPStatusCode != 0 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusTooManyRequests {
		return fmt.Errorf("payment: stripe %s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrStripeUnavailable, op, err)
}

// stripeCode is the Stripe error code of err, if it is a Stripe error.
func stripeCode(err error) (stripe.ErrorCode, stripe.ErrorType) {
	var se *stripe.Error
	if errors.As(err, &se) {
		return se.Code, se.Type
	}
	return "", ""
}

// Idempotency keys: derived from the hold, so that every attempt, retry and
// redelivery asks Stripe for the same session and the same refund.
func checkoutKey(holdID string) string { return "firelock-checkout-" + holdID }
func refundKey(holdID string) string   { return "firelock-refund-" + holdID }

// expireSession expires a Checkout Session so that nobody can pay it any
// more. paying is true when it cannot be expired because it was paid
// already (its completed event is on its way).
func (s *Service) expireSession(ctx context.Context, sessionID string) (paying bool, err error) {
	_, err = s.stripe.V1CheckoutSessions.Expire(ctx, sessionID, nil)
	if err == nil {
		return false, nil
	}
	if _, t := stripeCode(err); t != stripe.ErrorTypeInvalidRequest {
		return false, stripeError("expire session", err)
	}
	// Not expirable: it is expired already, or complete.
	cs, rerr := s.stripe.V1CheckoutSessions.Retrieve(ctx, sessionID, nil)
	if rerr != nil {
		return false, stripeError("retrieve session", rerr)
	}
	switch cs.Status {
	case stripe.CheckoutSessionStatusExpired:
		return false, nil
	case stripe.CheckoutSessionStatusComplete:
		return true, nil
	}
	return false, stripeError("expire session", err)
}

// refund refunds the payment of record r in full, once: its idempotency
// key derives from the hold, and a payment Stripe reports refunded
// already (a redelivery after the key's 24 hours) answers its refund.
func (s *Service) refund(ctx context.Context, r Record) (string, error) {
	p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.PaymentIntentID)}
	p.Metadata = map[string]string{"holdId": r.HoldID, "screeningId": r.ScreeningID, "reason": r.RefundReason}
	p.SetIdempotencyKey(refundKey(r.HoldID))
	ref, err := s.stripe.V1Refunds.Create(ctx, p)
	if err == nil {
		return ref.ID, nil
	}
	if code, _ := stripeCode(err); code == stripe.ErrorCodeChargeAlreadyRefunded {
		for ref, lerr := range s.stripe.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(r.PaymentIntentID)}).All(ctx) {
			if lerr != nil {
				return "", stripeError("list refunds", lerr)
			}
			return ref.ID, nil
		}
	}
	return "", stripeError("refund", err)
}
