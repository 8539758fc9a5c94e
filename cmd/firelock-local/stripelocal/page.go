package stripelocal

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/internal/when"
	"github.com/firelock/firelock/payment"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Page stands in for Stripe's hosted checkout page (CONTRACT §10, the
// local run): GET shows what the buyer pays for, from the payment record:
// the amount, a line per seat in seat order (E9 before E10), and a
// countdown to the end of the hold. Its Pay and Cancel buttons send the
// signed checkout.session.completed and checkout.session.expired events to
// StripeWebhook, as Stripe would, then send the buyer back to the session's
// success or cancel URL.
//
// It offers nothing that cannot succeed: once the hold has ended (its
// countdown reaches 0:00, or it was released) Pay goes, and a session that
// firelock expired, or that was paid, says so in one message with a link
// back to the shop. An open page looks the session up every 2 s
// (Path/state) and follows it. A Pay pressed before the end is still
// delivered after it, as Stripe takes a payment whatever firelock's hold
// does; firelock books or refunds such a late payment.
//
// Its hooks for tests: data-checkout-state (open, lapsed, paid, refunded,
// expired), data-checkout-line (one per seat), data-checkout-total,
// data-checkout-countdown (m:ss), data-checkout-message (the one message),
// data-checkout-back (the link to the shop), buttons data-checkout="pay"
// and data-checkout="cancel".
type Page struct {
	Firestore  *firestore.Client
	WebhookURL string // StripeWebhook
	Secret     string // the endpoint's signing secret
	Client     *http.Client
}

// Path is where the page is served; Config.CheckoutPage is the server's
// base URL plus Path.
const Path = "/checkout"

// stateLapsed: the session is open, but the hold it pays for has ended
// (ran out, or was released), so it is no longer offered for paying.
const stateLapsed = "lapsed"

// pollEvery is how often an open page looks its session up.
const pollEvery = 2 * time.Second

// ServeHTTP serves GET Path?hold=&session=, GET Path/state?hold=&session=
// (the page's own look-up, JSON), and POST Path/pay and Path/cancel (form
// fields hold and session).
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == Path:
		p.show(w, r, r.URL.Query().Get("hold"), r.URL.Query().Get("session"), "")
	case r.Method == http.MethodGet && r.URL.Path == Path+"/state":
		p.state(w, r)
	case r.Method == http.MethodPost && (r.URL.Path == Path+"/pay" || r.URL.Path == Path+"/cancel"):
		p.act(w, r, strings.TrimPrefix(r.URL.Path, Path+"/"))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// checkout is what the page knows of one session: its payment record,
// the screening, and the hold it pays for.
type checkout struct {
	rec       payment.Record
	screening *firestore.DocumentSnapshot
	hold      booking.Hold
}

// state is what the buyer sees of the session at now: the record's
// status, or lapsed while it is open for a hold that has ended.
func (c checkout) state(now time.Time) string {
	if c.rec.Status != payment.StatusOpen {
		return c.rec.Status
	}
	if (c.hold.Status != booking.StatusHeld && c.hold.Status != booking.StatusPaying) || !now.Before(c.hold.HeldUntil) {
		return stateLapsed
	}
	return payment.StatusOpen
}

// message is the page's one message in a state (none while open: the
// countdown says enough).
func (c checkout) message(state string) string {
	switch state {
	case stateLapsed:
		if c.hold.Status == booking.StatusReleased {
			return "These seats were let go, so this checkout can no longer be paid. Nothing was charged."
		}
		return lapsedMessage
	case payment.StatusExpired:
		return "This checkout has expired, so it can no longer be paid. Nothing was charged."
	case payment.StatusPaid:
		return "This checkout is paid: your seats are booked."
	case payment.StatusRefunded:
		return "This checkout was paid, then refunded in full."
	}
	return ""
}

const lapsedMessage = "Your hold on these seats ran out, so this checkout can no longer be paid. Nothing was charged."

// load reads the session's payment record, its screening and its hold;
// codes.NotFound when there is no such session.
func (p *Page) load(ctx context.Context, holdID, sessionID string) (checkout, error) {
	if holdID == "" {
		return checkout{}, status.Error(codes.NotFound, "no hold")
	}
	snap, err := p.Firestore.Collection(payment.Payments).Doc(holdID).Get(ctx)
	if err != nil {
		return checkout{}, err
	}
	var c checkout
	if err := snap.DataTo(&c.rec); err != nil {
		return checkout{}, err
	}
	if sessionID != c.rec.SessionID {
		return checkout{}, status.Error(codes.NotFound, "this checkout session is not the hold's")
	}
	if c.screening, err = p.Firestore.Collection(booking.Screenings).Doc(c.rec.ScreeningID).Get(ctx); err != nil {
		return checkout{}, err
	}
	hold, err := p.Firestore.Collection(booking.Holds).Doc(holdID).Get(ctx)
	if err != nil {
		return checkout{}, err
	}
	if err := hold.DataTo(&c.hold); err != nil {
		return checkout{}, err
	}
	return c, nil
}

func (p *Page) loadFor(w http.ResponseWriter, r *http.Request, holdID, sessionID string) (checkout, bool) {
	c, err := p.load(r.Context(), holdID, sessionID)
	if status.Code(err) == codes.NotFound {
		http.Error(w, "no such checkout", http.StatusNotFound)
		return c, false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return c, false
	}
	return c, true
}

type line struct {
	Seat   string
	Amount string
}

type view struct {
	Title, When, HoldID, SessionID, State, Total, Message, BackURL, Left, LookupURL string
	Lines                                                                           []line
	Open, Problem                                                                   bool
	HeldUntilMs, NowMs, PollMs                                                      int64
	LapsedMessage                                                                   string
}

// show renders the page; problem (a delivery that failed) is its one
// message then, with the buttons kept for another try.
func (p *Page) show(w http.ResponseWriter, r *http.Request, holdID, sessionID, problem string) {
	c, ok := p.loadFor(w, r, holdID, sessionID)
	if !ok {
		return
	}
	now := time.Now()
	price, _, _ := payment.ScreeningPrice(c.screening, time.Second)
	state := c.state(now)
	v := view{
		HoldID: holdID, SessionID: sessionID, State: state, Total: payment.Format(c.rec.Amount, c.rec.Currency),
		Message: c.message(state), BackURL: c.rec.ReturnURL, Open: state == payment.StatusOpen,
		Left: countdown(c.hold.HeldUntil.Sub(now)), HeldUntilMs: c.hold.HeldUntil.UnixMilli(), NowMs: now.UnixMilli(),
		PollMs: pollEvery.Milliseconds(), LapsedMessage: lapsedMessage,
		LookupURL: Path + "/state?" + url.Values{"hold": {holdID}, "session": {sessionID}}.Encode(),
	}
	if problem != "" {
		v.Message, v.Problem = problem, true
	}
	v.Title, _ = c.screening.Data()["title"].(string)
	v.When = screeningWhen(c.screening.Data())
	seats := slices.Clone(c.rec.Seats)
	slices.SortFunc(seats, compareSeats)
	for _, seat := range seats {
		v.Lines = append(v.Lines, line{Seat: seat, Amount: payment.Format(price.Seat(seat), c.rec.Currency)})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	pageTemplate.Execute(w, v)
}

// state answers the open page's look-up: {"state", "heldUntil", "now"}
// (times in Unix ms).
func (p *Page) state(w http.ResponseWriter, r *http.Request) {
	c, ok := p.loadFor(w, r, r.URL.Query().Get("hold"), r.URL.Query().Get("session"))
	if !ok {
		return
	}
	now := time.Now()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{"state": c.state(now), "heldUntil": c.hold.HeldUntil.UnixMilli(), "now": now.UnixMilli()})
}

func (p *Page) act(w http.ResponseWriter, r *http.Request, what string) {
	holdID, sessionID := r.FormValue("hold"), r.FormValue("session")
	c, ok := p.loadFor(w, r, holdID, sessionID)
	if !ok {
		return
	}
	rec := c.rec
	if rec.Status != payment.StatusOpen {
		// Paid, refunded or expired meanwhile: the page says which, once.
		p.show(w, r, holdID, sessionID, "")
		return
	}
	t, back := "checkout.session.completed", payment.SuccessURL(rec.ReturnURL, holdID)
	if what == "cancel" {
		t, back = "checkout.session.expired", payment.CancelURL(rec.ReturnURL, holdID)
	}
	ev := Event(t, "", Session{ID: rec.SessionID, HoldID: holdID, ScreeningID: rec.ScreeningID, UID: rec.UID, Amount: rec.Amount, Currency: rec.Currency})
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	// Stripe delivers until the endpoint answers 2xx: so does the page,
	// for a while (a 503 asks for a retry).
	var code int
	var body []byte
	var err error
	for attempt := 0; ; attempt++ {
		code, body, err = Deliver(ctx, p.Client, p.WebhookURL, p.Secret, ev)
		if (err == nil && code < 500) || attempt == 4 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(200<<attempt) * time.Millisecond)
	}
	if err != nil || code >= 300 {
		p.show(w, r, holdID, sessionID, fmt.Sprintf("The payment could not be completed (StripeWebhook answered %d %s %v). Nothing was charged: try again.", code, strings.TrimSpace(string(body)), err))
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// compareSeats orders seat ids by row, then number: E9 before E10.
func compareSeats(a, b string) int {
	ra, na := splitSeat(a)
	rb, nb := splitSeat(b)
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

// splitSeat is a seat id's row label and number ("E10": "E", 10).
func splitSeat(seat string) (string, int) {
	i := len(seat)
	for i > 0 && seat[i-1] >= '0' && seat[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(seat[i:])
	return seat[:i], n
}

// countdown is the time left as m:ss (0:00 once it has passed).
func countdown(d time.Duration) string {
	s := max(0, int64(math.Ceil(d.Seconds())))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

var pageTemplate = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pay firelock cinema · {{.Title}}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f8fa;color:#1a1f36}
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}
@media (max-width:30rem){main{margin:0;border-radius:0;box-shadow:none;min-height:100vh;box-sizing:border-box}}
.sub{color:#697386;font-size:.875rem;margin:0 0 1rem}.merchant{font-weight:600;margin:0}
h1{font-size:1rem;font-weight:500;color:#697386;margin:0}.amount{font-size:2rem;font-weight:700;margin:.25rem 0 1rem;font-variant-numeric:tabular-nums}
table{width:100%;border-collapse:collapse}td{padding:.4rem 0;border-bottom:1px solid #e3e8ee}td:last-child{text-align:right;font-variant-numeric:tabular-nums}
.total td{font-weight:600;border-bottom:none}
.timer{margin:1rem 0 0;padding:.6rem .8rem;border-radius:8px;background:#f6f8fa}.timer strong{font-variant-numeric:tabular-nums}
.row{display:flex;gap:.75rem;margin-top:1.25rem}.row form{flex:1;display:flex}.row form:last-child{flex:2}
button{flex:1;font:inherit;padding:.7rem;border-radius:8px;border:1px solid #c1c9d2;background:#fff;cursor:pointer;white-space:nowrap}
button.pay{background:#635bff;border-color:#635bff;color:#fff;font-weight:600}
.note{margin:1rem 0 0;padding:.6rem .8rem;border-radius:8px;background:#eef2ff}.error{background:#fde8e8}.ok{background:#e3f7ec}
.back{display:inline-block;margin-top:1.25rem;color:#635bff;font-weight:600;text-decoration:none}.back:hover{text-decoration:underline}
.badge{display:inline-block;font-size:.75rem;padding:.1rem .5rem;border-radius:99px;background:#e3e8ee;color:#3c4257}
[hidden]{display:none!important}
</style></head>
<body><main data-checkout-state="{{.State}}" data-held-until="{{.HeldUntilMs}}" data-now="{{.NowMs}}" data-poll="{{.PollMs}}" data-lapsed-message="{{.LapsedMessage}}">
<p class="sub">Local stand-in for Stripe Checkout · <span class="badge">test mode</span></p>
<p class="merchant">firelock cinema</p>
<h1>{{.Title}}</h1>
{{if .When}}<p class="sub" data-checkout-when>{{.When}}</p>{{end}}
<p class="amount">{{.Total}}</p>
<table>
{{range .Lines}}<tr data-checkout-line="{{.Seat}}"><td>Seat {{.Seat}}</td><td>{{.Amount}}</td></tr>
{{end}}<tr class="total"><td>Total</td><td data-checkout-total>{{.Total}}</td></tr>
</table>
{{if .Open}}<p class="timer" id="timer">Your seats are held for <strong data-checkout-countdown role="timer">{{.Left}}</strong></p>{{end}}
<p class="note{{if .Problem}} error{{else if eq .State "paid"}} ok{{end}}" id="message" data-checkout-message role="{{if .Problem}}alert{{else}}status{{end}}"{{if not .Message}} hidden{{end}}>{{.Message}}</p>
{{if .Open}}<div class="row" id="actions">
<form method="post" action="/checkout/cancel"><input type="hidden" name="hold" value="{{.HoldID}}"><input type="hidden" name="session" value="{{.SessionID}}"><button data-checkout="cancel">Cancel</button></form>
<form method="post" action="/checkout/pay"><input type="hidden" name="hold" value="{{.HoldID}}"><input type="hidden" name="session" value="{{.SessionID}}"><button class="pay" data-checkout="pay">Pay {{.Total}}</button></form>
</div>{{end}}
{{if .BackURL}}<a class="back" id="back" data-checkout-back href="{{.BackURL}}"{{if .Open}} hidden{{end}}>← Back to the shop</a>{{end}}
<script>
(() => {
  const main = document.querySelector("main");
  const shown = main.dataset.checkoutState;
  if (shown !== "open" && shown !== "lapsed") return;
  let heldUntil = Number(main.dataset.heldUntil);
  let offset = Number(main.dataset.now) - Date.now(); // the server's clock, as this page estimates it
  const countdown = document.querySelector("[data-checkout-countdown]");
  // Once Pay or Cancel is pressed, the page waits for its answer: it no
  // longer lapses or reloads itself away from it, nor is pressed twice.
  let leaving = false;
  for (const form of document.querySelectorAll("#actions form")) {
    form.addEventListener("submit", () => {
      leaving = true;
      for (const b of document.querySelectorAll("#actions button")) b.disabled = true;
    });
  }
  const lapse = () => {
    main.dataset.checkoutState = "lapsed";
    for (const id of ["timer", "actions"]) document.getElementById(id)?.remove();
    const message = document.getElementById("message");
    message.className = "note";
    message.setAttribute("role", "status");
    message.textContent = main.dataset.lapsedMessage;
    message.hidden = false;
    const back = document.getElementById("back");
    if (back) back.hidden = false;
  };
  const tick = () => {
    if (leaving || main.dataset.checkoutState !== "open") return;
    const s = Math.max(0, Math.ceil((heldUntil - (Date.now() + offset)) / 1000));
    const text = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
    if (countdown && countdown.textContent !== text) countdown.textContent = text;
    if (s === 0) lapse();
  };
  const look = async () => {
    if (leaving) return;
    try {
      const res = await fetch("{{.LookupURL}}", { cache: "no-store" });
      if (!res.ok) return;
      const got = await res.json();
      if (leaving) return;
      // Paid, refunded or expired elsewhere (or the hold let go): say so.
      if (got.state !== "open" && got.state !== main.dataset.checkoutState) location.reload();
      heldUntil = got.heldUntil;
      offset = got.now - Date.now();
      tick();
    } catch {
      // Offline for a moment: the countdown goes on, and the next look-up tells.
    }
  };
  tick();
  setInterval(tick, 1000);
  setInterval(look, Number(main.dataset.poll));
})();
</script>
</main></body></html>
`))

// screeningWhen is the screening's start as every page writes it (issue
// #50.4, internal/when): "Sat 28 Nov, 16:00 CET", in the screening's own
// zone when it names a valid one (`timeZone`), else the machine's.
func screeningWhen(d map[string]any) string {
	at, ok := d["startsAt"].(time.Time)
	if !ok {
		return ""
	}
	if tz, _ := d["timeZone"].(string); tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			return when.Words(at.In(loc))
		}
	}
	return when.Words(at.Local())
}
