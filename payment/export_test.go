package payment

// Test-only knobs: bugs planted for the money audit's negative controls,
// and a stall between a webhook run's steps.

// PlantNoEventLease makes s apply events without their per-event lease and
// without recognising one applied before.
func PlantNoEventLease(s *Service) { s.hooks.noEventLease = true }

// PlantArrivalOrder makes s apply events by their type in the order they
// arrive, not by the state of the hold and its payment.
func PlantArrivalOrder(s *Service) { s.hooks.arrivalOrder = true }

// BeforeSettle runs fn between a webhook run's deciding commit and its call
// to Stripe.
func BeforeSettle(s *Service, fn func(holdID string)) { s.hooks.beforeSettle = fn }

// BeforeDone runs fn in a webhook run's transaction just before the
// event's done mark is added to it (on each attempt), so a test can drop
// the commit's answer.
func BeforeDone(s *Service, fn func()) { s.hooks.beforeDone = fn }

// BeforePaying runs fn in a checkout's transaction that turns its hold
// paying (on each attempt), just before it commits, so a test can cut the
// checkout off there.
func BeforePaying(s *Service, fn func()) { s.hooks.beforePaying = fn }
