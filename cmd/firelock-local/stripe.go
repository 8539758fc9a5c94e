package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/cmd/firelock-local/stripelocal"
	"github.com/firelock/firelock/payment"
)

// Payments in the local run (CONTRACT §10): with -stripe mock (the
// default), stripe-mock (the version go.mod pins) answers the Stripe API,
// the webhook signing secret is made fresh for the run, and a stand-in for
// Stripe's hosted checkout page sends the signed events to StripeWebhook as
// Stripe would. With -stripe env, the functions use STRIPE_SECRET_KEY,
// STRIPE_WEBHOOK_SECRET and STRIPE_API_URL as set (Stripe's test mode, with
// `stripe listen --forward-to $URL/StripeWebhook`), and there is no page.
const (
	stripeMock = "mock"
	stripeEnv  = "env"
)

type stripeRun struct {
	mode    string
	mock    *stripelocal.Mock
	secret  string
	apiURL  string
	pageURL string // the checkout page (Config.CheckoutPage); empty with -stripe env
	ln      net.Listener
	srv     *http.Server
}

// startStripe starts stripe-mock and reserves the checkout page's port,
// and sets the functions' Stripe environment, before the functions read it
// (on their first request).
func startStripe(ctx context.Context, mode string) (*stripeRun, error) {
	s := &stripeRun{mode: mode}
	if mode == stripeEnv {
		if os.Getenv(payment.EnvSecretKey) == "" || os.Getenv(payment.EnvWebhookSecret) == "" {
			return nil, fmt.Errorf("-stripe env: set %s and %s (from `stripe listen --forward-to ...`)", payment.EnvSecretKey, payment.EnvWebhookSecret)
		}
		s.secret, s.apiURL = os.Getenv(payment.EnvWebhookSecret), os.Getenv(payment.EnvAPIURL)
		return s, nil
	}
	fmt.Println("starting stripe-mock (Stripe's API mock, pinned in go.mod) ...")
	mock, err := stripelocal.StartMock(ctx)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		mock.Stop()
		return nil, err
	}
	s.mock, s.ln, s.apiURL, s.secret = mock, ln, mock.URL, stripelocal.NewWebhookSecret()
	s.pageURL = "http://" + ln.Addr().String() + stripelocal.Path
	for k, v := range map[string]string{
		payment.EnvSecretKey: "sk_test_firelocklocal", payment.EnvWebhookSecret: s.secret,
		payment.EnvAPIURL: s.apiURL, payment.EnvCheckoutPage: s.pageURL,
	} {
		os.Setenv(k, v)
	}
	return s, nil
}

// servePage serves the checkout page, which reads the payment records from
// fs and delivers its events to the functions at base.
func (s *stripeRun) servePage(fs *firestore.Client, base string) {
	if s.ln == nil {
		return
	}
	page := &stripelocal.Page{Firestore: fs, WebhookURL: base + "/StripeWebhook", Secret: s.secret, Client: &http.Client{Timeout: 30 * time.Second}}
	s.srv = &http.Server{Handler: page, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "firelock-local: checkout page:", err)
		}
	}()
}

func (s *stripeRun) stop() {
	if s.srv != nil {
		s.srv.Close()
	}
	s.mock.Stop()
}

// banner is the Stripe part of the run's banner.
func (s *stripeRun) banner() string {
	if s.mode == stripeEnv {
		return fmt.Sprintf("  Stripe              %s (STRIPE_API_URL; empty: api.stripe.com), webhook secret from STRIPE_WEBHOOK_SECRET\n", s.apiURL)
	}
	return fmt.Sprintf("  stripe-mock         %s   (STRIPE_API_URL)\n  checkout page       %s   (stands in for Stripe's hosted page)\n  webhook secret      %s   (STRIPE_WEBHOOK_SECRET, made for this run)\n",
		s.apiURL, s.pageURL, s.secret)
}

// env is what the run's env file exports for payments.
func (s *stripeRun) env() [][2]string {
	return [][2]string{{payment.EnvWebhookSecret, s.secret}, {payment.EnvAPIURL, s.apiURL}, {payment.EnvCheckoutPage, s.pageURL}}
}
