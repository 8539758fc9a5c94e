package stripelocal

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Page stands in for Stripe's hosted checkout page (CONTRACT §10, the
// local run): GET shows a hold's line items and total from its payment
// record; its Pay and Cancel buttons send the signed
// checkout.session.completed and checkout.session.expired events to
// StripeWebhook, as Stripe would, then send the buyer back to the
// session's success or cancel URL. A session that firelock expired (its
// record says expired) cannot be paid, as at Stripe. Its hooks for tests:
// data-checkout-line (one per seat), data-checkout-total, buttons
// data-checkout="pay" and data-checkout="cancel", data-checkout-state.
type Page struct {
	Firestore  *firestore.Client
	WebhookURL string // StripeWebhook
	Secret     string // the endpoint's signing secret
	Client     *http.Client
}

// Path is where the page is served; Config.CheckoutPage is the server's
// base URL plus Path.
const Path = "/checkout"

// ServeHTTP serves GET Path?hold=&session=, and POST Path/pay and
// Path/cancel (form fields hold and session).
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == Path:
		p.show(w, r, r.URL.Query().Get("hold"), r.URL.Query().Get("session"), "")
	case r.Method == http.MethodPost && (r.URL.Path == Path+"/pay" || r.URL.Path == Path+"/cancel"):
		p.act(w, r, strings.TrimPrefix(r.URL.Path, Path+"/"))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

type line struct {
	Seat   string
	Amount string
}

type view struct {
	Title, HoldID, SessionID, State, Total, Note, Error string
	Lines                                               []line
	Open                                                bool
}

func (p *Page) load(ctx context.Context, holdID string) (payment.Record, *firestore.DocumentSnapshot, error) {
	snap, err := p.Firestore.Collection(payment.Payments).Doc(holdID).Get(ctx)
	if err != nil {
		return payment.Record{}, nil, err
	}
	var rec payment.Record
	if err := snap.DataTo(&rec); err != nil {
		return payment.Record{}, nil, err
	}
	sc, err := p.Firestore.Collection(booking.Screenings).Doc(rec.ScreeningID).Get(ctx)
	return rec, sc, err
}

func (p *Page) show(w http.ResponseWriter, r *http.Request, holdID, sessionID, problem string) {
	rec, sc, err := p.load(r.Context(), holdID)
	if status.Code(err) == codes.NotFound || holdID == "" {
		http.Error(w, "no such checkout", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if sessionID != rec.SessionID {
		http.Error(w, "this checkout session is not the hold's", http.StatusNotFound)
		return
	}
	price, _, _ := payment.ScreeningPrice(sc, time.Second)
	v := view{HoldID: holdID, SessionID: sessionID, State: rec.Status, Total: payment.Format(rec.Amount, rec.Currency), Error: problem, Open: rec.Status == payment.StatusOpen}
	v.Title, _ = sc.Data()["title"].(string)
	for _, seat := range rec.Seats {
		v.Lines = append(v.Lines, line{Seat: seat, Amount: payment.Format(price.Seat(seat), rec.Currency)})
	}
	switch rec.Status {
	case payment.StatusPaid:
		v.Note = "This checkout is paid."
	case payment.StatusRefunded:
		v.Note = "This checkout was paid and refunded."
	case payment.StatusExpired:
		v.Note = "This checkout has expired: it can no longer be paid."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	pageTemplate.Execute(w, v)
}

func (p *Page) act(w http.ResponseWriter, r *http.Request, what string) {
	holdID, sessionID := r.FormValue("hold"), r.FormValue("session")
	rec, _, err := p.load(r.Context(), holdID)
	if err != nil || rec.SessionID != sessionID {
		http.Error(w, "no such checkout", http.StatusNotFound)
		return
	}
	if rec.Status != payment.StatusOpen {
		p.show(w, r, holdID, sessionID, "This checkout is "+rec.Status+": nothing was charged.")
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
	for attempt := 0; ; attempt++ {
		code, body, err = Deliver(ctx, p.Client, p.WebhookURL, p.Secret, ev)
		if (err == nil && code < 500) || attempt == 4 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(200<<attempt) * time.Millisecond)
	}
	if err != nil || code >= 300 {
		p.show(w, r, holdID, sessionID, fmt.Sprintf("StripeWebhook answered %d %s %v: try again.", code, strings.TrimSpace(string(body)), err))
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

var pageTemplate = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Checkout (local stand-in for Stripe)</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f8fa;color:#1a1f36}
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}
h1{font-size:1.25rem;margin:0 0 .25rem}.sub{color:#697386;font-size:.875rem;margin:0 0 1rem}
table{width:100%;border-collapse:collapse}td{padding:.4rem 0;border-bottom:1px solid #e3e8ee}td:last-child{text-align:right}
.total td{font-weight:600;border-bottom:none}
.row{display:flex;gap:.75rem;margin-top:1.25rem}button{flex:1;font:inherit;padding:.7rem;border-radius:8px;border:1px solid #c1c9d2;background:#fff;cursor:pointer}
button.pay{background:#635bff;border-color:#635bff;color:#fff;font-weight:600}
.note{margin-top:1rem;padding:.6rem .8rem;border-radius:8px;background:#eef2ff}.error{background:#fde8e8}
.badge{display:inline-block;font-size:.75rem;padding:.1rem .5rem;border-radius:99px;background:#e3e8ee}
</style></head>
<body><main data-checkout-state="{{.State}}">
<p class="sub">Local stand-in for Stripe Checkout · <span class="badge">test mode</span></p>
<h1>{{.Title}}</h1>
<p class="sub">Hold {{.HoldID}}</p>
<table>
{{range .Lines}}<tr data-checkout-line="{{.Seat}}"><td>Seat {{.Seat}}</td><td>{{.Amount}}</td></tr>
{{end}}<tr class="total"><td>Total</td><td data-checkout-total>{{.Total}}</td></tr>
</table>
{{if .Note}}<p class="note" role="status">{{.Note}}</p>{{end}}
{{if .Error}}<p class="note error" role="alert">{{.Error}}</p>{{end}}
{{if .Open}}<div class="row">
<form method="post" action="/checkout/cancel" style="flex:1;display:flex"><input type="hidden" name="hold" value="{{.HoldID}}"><input type="hidden" name="session" value="{{.SessionID}}"><button data-checkout="cancel">Cancel</button></form>
<form method="post" action="/checkout/pay" style="flex:1;display:flex"><input type="hidden" name="hold" value="{{.HoldID}}"><input type="hidden" name="session" value="{{.SessionID}}"><button class="pay" data-checkout="pay">Pay {{.Total}}</button></form>
</div>{{end}}
</main></body></html>
`))
