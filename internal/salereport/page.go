package salereport

import (
	"context"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/sale"
)

// Report is a sale's report: its configuration, what it sold, how fair and
// how metered it was, and its minutes.
type Report struct {
	ScreeningID string    `json:"screeningId"`
	Title       string    `json:"title"`
	State       string    `json:"state"` // sales/{id}.state, as last published
	GeneratedAt time.Time `json:"generatedAt"`
	OpensAt     time.Time `json:"opensAt"`
	Rate        int       `json:"admitPerMinute"`
	MaxActive   int       `json:"maxActive"`
	PassSeconds int       `json:"passSeconds"`
	MaxSeats    int       `json:"maxSeatsPerUser"`
	Summary     Summary   `json:"summary"`
	Fairness    Fairness  `json:"fairness"`
	Metering    Metering  `json:"metering"`
	Minutes     []Minute  `json:"minutes"`

	sale *Sale
}

// Build reads the sale of screening id and judges it, at now.
func Build(ctx context.Context, fs *firestore.Client, id string, now time.Time) (*Report, error) {
	st, err := Read(ctx, fs, id)
	if err != nil {
		return nil, err
	}
	minutes, err := ReadMinutes(ctx, fs, id)
	if err != nil {
		return nil, err
	}
	r := &Report{
		ScreeningID: id, GeneratedAt: now, OpensAt: st.OpensAt, Rate: st.AdmitPerMinute, MaxActive: st.MaxActive,
		PassSeconds: cmpOr(st.PassSeconds, int(sale.DefaultPass/time.Second)), MaxSeats: cmpOr(st.MaxSeatsPerUser, sale.DefaultMaxSeatsPerUser),
		Summary: st.Summarize(), Fairness: st.AuditFairness(), Metering: st.AuditMetering(now), Minutes: minutes, sale: st,
	}
	if snap, err := fs.Collection(booking.Screenings).Doc(id).Get(ctx); err == nil {
		r.Title, _ = snap.Data()["title"].(string)
	}
	if snap, err := fs.Collection(sale.Sales).Doc(id).Get(ctx); err == nil {
		r.State, _ = snap.Data()["state"].(string)
	}
	return r, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Chart is one inline SVG chart of the minutes.
type Chart struct {
	Name, Title string
	SVG         template.HTML
}

// Charts are the four of CONTRACT §8: waiting, admissions per minute,
// active passes, seats left.
func (r *Report) Charts() []Chart {
	series := func(f func(Minute) int64) []float64 {
		out := make([]float64, len(r.Minutes))
		for i, m := range r.Minutes {
			out[i] = float64(f(m))
		}
		return out
	}
	labels := make([]string, len(r.Minutes))
	for i, m := range r.Minutes {
		labels[i] = m.At.UTC().Format("15:04")
	}
	return []Chart{
		{"waiting", "Waiting", svgChart(series(func(m Minute) int64 { return m.Waiting }), labels, false)},
		{"admissions", "Admissions per minute", svgChart(series(func(m Minute) int64 { return m.Admissions }), labels, true)},
		{"active", "Active passes", svgChart(series(func(m Minute) int64 { return m.Active }), labels, false)},
		{"seats-left", "Seats left", svgChart(series(func(m Minute) int64 { return m.SeatsLeft }), labels, false)},
	}
}

// svgChart draws values over labels as a line (or bars), with its axis
// marks: plain SVG, no script, nothing fetched.
func svgChart(values []float64, labels []string, bars bool) template.HTML {
	const w, h, left, bottom, top, right = 560.0, 200.0, 44.0, 24.0, 10.0, 10.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" role="img" xmlns="http://www.w3.org/2000/svg">`, w, h)
	if len(values) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" class="none">no minutes recorded yet</text></svg>`, w/2, h/2)
		return template.HTML(b.String()) //nolint:gosec // built from numbers and fixed text only
	}
	top0 := slices.Max(values)
	if top0 <= 0 {
		top0 = 1
	}
	step := niceStep(top0 / 4)
	ymax := math.Ceil(top0/step) * step
	// Each minute a slot of the width; a point (or a bar) in its middle.
	slot := (w - left - right) / float64(len(values))
	x := func(i int) float64 { return left + (float64(i)+0.5)*slot }
	y := func(v float64) float64 { return h - bottom - v/ymax*(h-bottom-top) }
	for v := 0.0; v <= ymax+step/2; v += step {
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, y(v)+4, strconv.FormatFloat(v, 'f', -1, 64))
	}
	every := max(1, (len(labels)+5)/6)
	for i, l := range labels {
		if i%every == 0 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x(i), h-6, template.HTMLEscapeString(l))
		}
	}
	if bars {
		bw := math.Max(1, math.Min(slot*0.7, 28))
		for i, v := range values {
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
				x(i)-bw/2, y(v), bw, h-bottom-y(v), template.HTMLEscapeString(labels[i]), strconv.FormatFloat(v, 'f', -1, 64))
		}
	} else {
		var pts []string
		for i, v := range values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
		for i, v := range values {
			fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="%.1f" r="2.5"><title>%s: %s</title></circle>`, x(i), y(v), template.HTMLEscapeString(labels[i]), strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped labels only
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return math.Max(1, m*p)
		}
	}
	return 10 * p
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(m Maybe) string {
		if math.IsNaN(float64(m)) {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(m))
	},
	"rho": func(m Maybe) string {
		if math.IsNaN(float64(m)) {
			return "– (too few to tell)"
		}
		return fmt.Sprintf("%+.3f", float64(m))
	},
	"bound": func(n int) string {
		b := SpearmanBound(n, 4)
		if math.IsInf(b, 1) {
			return "–"
		}
		return fmt.Sprintf("±%.3f", b)
	},
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sale report · {{.Title}} ({{.ScreeningID}})</title>
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#111318;color:#eceef3}
main{max-width:62rem;margin:0 auto;padding:1.25rem}
h1{margin:.2rem 0 0;font-size:1.6rem} h2{font-size:1.1rem;margin:1.6rem 0 .6rem}
.muted{color:#9aa3b5}.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem}
.fig{background:#1b1e26;border:1px solid #2c313d;border-radius:.7rem;padding:.7rem .9rem}
.fig b{display:block;font-size:1.5rem}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(24rem,1fr));gap:1rem}
figure{margin:0;background:#1b1e26;border:1px solid #2c313d;border-radius:.7rem;padding:.6rem .8rem}
figcaption{font-weight:600;margin-bottom:.3rem} svg{width:100%;height:auto;display:block}
.grid{stroke:#2c313d}.axis{fill:#9aa3b5;font-size:11px}.line{fill:none;stroke:#4f8cff;stroke-width:2}.dot{fill:#4f8cff}.bar{fill:#35b37e}.none{fill:#9aa3b5}
table{border-collapse:collapse;width:100%}td,th{padding:.35rem .5rem;border-bottom:1px solid #2c313d;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#9be7c4}.bad{color:#ff7a7a}
</style></head><body><main>
<p class="muted">firelock sale report</p>
<h1>{{.Title}} <span class="muted">({{.ScreeningID}})</span></h1>
<p class="muted">Opened {{when .OpensAt}} · {{.Rate}} admitted a minute at most, {{.MaxActive}} passes at once, {{.PassSeconds}} s each, {{.MaxSeats}} seats a person · state {{if .State}}{{.State}}{{else}}not published{{end}} · written {{when .GeneratedAt}}</p>

<div class="grid3" data-report="figures">
<div class="fig"><span class="muted">Sold</span><b data-figure="sold">{{.Summary.Sold}} / {{.Summary.Seats}}</b></div>
<div class="fig"><span class="muted">Joined</span><b data-figure="joined">{{.Summary.Places}}</b></div>
<div class="fig"><span class="muted">Admitted</span><b data-figure="admitted">{{.Summary.Admitted}}</b></div>
<div class="fig"><span class="muted">Admitted who booked</span><b data-figure="conversion">{{pct .Summary.Conversion}}</b><span class="muted">{{.Summary.Booked}} of {{.Summary.Admitted}}</span></div>
<div class="fig"><span class="muted">Passes expired unused</span><b data-figure="expired-unused">{{.Summary.ExpiredUnused}}</b></div>
<div class="fig"><span class="muted">Time in line, p50 / p90</span><b data-figure="wait">{{printf "%.0f" .Summary.WaitP50}} s / {{printf "%.0f" .Summary.WaitP90}} s</b></div>
</div>

<h2>Over time</h2>
<div class="charts">{{range .Charts}}<figure data-chart="{{.Name}}"><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}</div>

<h2>Fairness</h2>
<table data-report="fairness">
<tr><td>Everyone who joined before the opening was admitted before anyone who joined after it</td><td class="n {{if .Fairness.EarlyBeforeLate}}ok{{else}}bad{{end}}">{{if .Fairness.EarlyBeforeLate}}yes{{else}}no{{end}}</td></tr>
<tr><td>Early joiners: {{.Fairness.EarlyJoiners}}, admitted {{.Fairness.EarlyAdmitted}}; Spearman's ρ of join order against admission order (a random draw stays near 0)</td><td class="n">{{rho .Fairness.EarlySpearman}} <span class="muted">({{bound .Fairness.EarlyAdmitted}})</span></td></tr>
<tr><td>Later joiners: {{.Fairness.LateJoiners}}, admitted {{.Fairness.LateAdmitted}}; pairs admitted out of join order</td><td class="n">{{.Fairness.LateInverted}} of {{.Fairness.LatePairs}}</td></tr>
<tr><td>Places still waiting behind someone admitted</td><td class="n">{{.Fairness.Skipped}}</td></tr>
</table>

<h2>Metering</h2>
<table data-report="metering">
<tr><td>Most admitted in any 60 s</td><td class="n">{{.Metering.MaxAdmittedPerMinute}} <span class="muted">(≤ {{.Rate}})</span></td></tr>
<tr><td>Most passes live at once</td><td class="n">{{.Metering.MaxLivePasses}} <span class="muted">(≤ {{.MaxActive}})</span></td></tr>
<tr><td>From the opening to the first admission</td><td class="n">{{if lt .Metering.FirstAdmission 0.0}}–{{else}}{{printf "%.2f" .Metering.FirstAdmission}} s{{end}}</td></tr>
<tr><td>A full house's ended pass to the next admission, p50 / max (over {{.Metering.Refills}})</td><td class="n">{{printf "%.2f" .Metering.RefillP50}} s / {{printf "%.2f" .Metering.RefillMax}} s</td></tr>
</table>

<h2>Minutes</h2>
<table data-report="minutes"><tr><th>minute (UTC)</th><th>waiting</th><th>admitted</th><th>active</th><th>seats left</th><th>joins</th><th>admissions</th><th>holds</th><th>bookings</th><th>expired</th></tr>
{{range .Minutes}}<tr><td>{{when .At}}</td><td class="n">{{.Waiting}}</td><td class="n">{{.Admitted}}</td><td class="n">{{.Active}}</td><td class="n">{{.SeatsLeft}}</td><td class="n">{{.Joins}}</td><td class="n">{{.Admissions}}</td><td class="n">{{.Holds}}</td><td class="n">{{.Bookings}}</td><td class="n">{{.Expired}}</td></tr>
{{end}}</table>
</main></body></html>
`))

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script, nothing to fetch.
func (r *Report) HTML(w io.Writer) error { return page.Execute(w, r) }

// CSV writes the raw tables into dir: minutes.csv, admissions.csv (every
// place) and bookings.csv.
func (r *Report) CSV(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ts := func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	minutes := [][]string{{"minute", "at", "waiting", "admitted", "active", "seatsLeft", "joins", "admissions", "holds", "bookings", "expired"}}
	for _, m := range r.Minutes {
		at := m.At
		minutes = append(minutes, []string{m.Key, ts(&at), itoa(m.Waiting), itoa(m.Admitted), itoa(m.Active), itoa(m.SeatsLeft),
			itoa(m.Joins), itoa(m.Admissions), itoa(m.Holds), itoa(m.Bookings), itoa(m.Expired)})
	}
	places := [][]string{{"queueId", "uid", "status", "joinedAt", "order", "admittedAt", "passUntil", "doneAt"}}
	ps := slices.Clone(r.sale.Places)
	slices.SortFunc(ps, func(a, b Place) int { return a.JoinedAt.Compare(b.JoinedAt) })
	for _, p := range ps {
		j := p.JoinedAt
		places = append(places, []string{p.ID, p.UID, p.Status, ts(&j), p.Order, ts(p.AdmittedAt), ts(p.PassUntil), ts(p.DoneAt)})
	}
	bookings := [][]string{{"bookingId", "uid", "status", "seats", "holdId", "createdAt"}}
	bs := slices.Clone(r.sale.Bookings)
	slices.SortFunc(bs, func(a, b Booking) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, b := range bs {
		c := b.CreatedAt
		bookings = append(bookings, []string{b.ID, b.UID, b.Status, strings.Join(b.Seats, " "), b.HoldID, ts(&c)})
	}
	for name, rows := range map[string][][]string{"minutes.csv": minutes, "admissions.csv": places, "bookings.csv": bookings} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		werr := w.WriteAll(rows)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("salereport: %s: %w", name, werr)
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
