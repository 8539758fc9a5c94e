package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/firelock/firelock/internal/when"
)

// Chart is one inline SVG chart of the minutes.
type Chart struct {
	Name, Title string
	// Legend says what the marks mean beside the chart.
	Legend template.HTML
	SVG    template.HTML
}

type chartKind int

const (
	chartLine chartKind = iota
	chartBars
	chartStacked // bars stacked from the first series up
)

type chartSpec struct {
	name, title string
	kind        chartKind
	series      [][]float64 // one value a minute each
	classes     []string    // CSS class of each series
	limit       func(Limits) int
}

// The report's charts are drawn at 400 by 200 units with 14-unit text: on
// a phone (about 290 px wide) the text is 10 px, on a laptop's half page
// about 16 px.
const (
	chartW, chartH                             = 400.0, 200.0
	chartLeft, chartRight, chartTop, chartBase = 40.0, 8.0, 10.0, 26.0
)

// Charts are the minutes over time: waiting; joins and admissions a
// minute (inflow against outflow, the rate limit on admissions); active
// passes (against maxActive); seats sold, held and left. Every chart
// shades the paused stretches and marks the configuration changes.
func (r *Report) Charts() []Chart {
	col := func(f func(Minute) int) []float64 {
		out := make([]float64, len(r.Minutes))
		for i, m := range r.Minutes {
			out[i] = float64(f(m))
		}
		return out
	}
	specs := []chartSpec{
		{name: "waiting", title: "Waiting", kind: chartLine, series: [][]float64{col(func(m Minute) int { return m.Waiting })}, classes: []string{"s-wait"}},
		{name: "joins", title: "Joins per minute", kind: chartBars, series: [][]float64{col(func(m Minute) int { return m.Joins })}, classes: []string{"s-join"}},
		{name: "admissions", title: "Admissions per minute", kind: chartBars, series: [][]float64{col(func(m Minute) int { return m.Admissions })}, classes: []string{"s-admit"},
			limit: func(l Limits) int { return l.AdmitPerMinute }},
		{name: "active", title: "Active passes", kind: chartLine, series: [][]float64{col(func(m Minute) int { return m.Active })}, classes: []string{"s-active"},
			limit: func(l Limits) int { return l.MaxActive }},
		{name: "seats-left", title: "Seats: sold, held, left", kind: chartStacked, series: [][]float64{
			col(func(m Minute) int { return m.SeatsSold }), col(func(m Minute) int { return m.SeatsHeld }), col(func(m Minute) int { return m.SeatsLeft }),
		}, classes: []string{"s-sold", "s-held", "s-left"}},
	}
	out := make([]Chart, len(specs))
	for i, s := range specs {
		out[i] = Chart{Name: s.name, Title: s.title, Legend: r.legend(s), SVG: r.svg(s)}
	}
	return out
}

func (r *Report) legend(s chartSpec) template.HTML {
	var parts []string
	key := func(class, text string) {
		parts = append(parts, fmt.Sprintf(`<span class="key"><i class="%s"></i>%s</span>`, class, template.HTMLEscapeString(text)))
	}
	switch s.name {
	case "seats-left":
		key("s-sold", "sold")
		key("s-held", "held")
		key("s-left", "left")
	case "admissions":
		key("limit", "admitPerMinute")
	case "active":
		key("limit", "maxActive")
	}
	if len(r.story.pauses) > 0 {
		key("paused", "paused")
	}
	if len(r.configChanges()) > 0 {
		key("change", "configuration changed")
	}
	parts = append(parts, `<span class="muted">minutes by their start, `+template.HTMLEscapeString(r.ZoneName())+`</span>`)
	return template.HTML(strings.Join(parts, " ")) //nolint:gosec // fixed markup and escaped text
}

// configChanges are the log's configure entries after the sale's creation.
func (r *Report) configChanges() []LogEntry {
	var out []LogEntry
	for _, e := range r.Log {
		if e.Action == "configure" && e.Before != nil {
			out = append(out, e)
		}
	}
	return out
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// svg draws one chart: the minutes as a line or bars, the limit as a
// step line, paused stretches shaded, configuration changes marked. Plain
// SVG: no script, nothing fetched.
func (r *Report) svg(s chartSpec) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, template.HTMLEscapeString(s.title))
	n := len(r.Minutes)
	if n == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" class="none">nothing recorded yet</text></svg>`, chartW/2, chartH/2)
		return template.HTML(b.String()) //nolint:gosec // numbers and fixed text
	}
	t0 := r.Minutes[0].Start
	t1 := r.Minutes[n-1].Start.Add(time.Minute)
	plotW := chartW - chartLeft - chartRight
	xAt := func(t time.Time) float64 {
		f := float64(t.Sub(t0)) / float64(t1.Sub(t0))
		return chartLeft + math.Max(0, math.Min(1, f))*plotW
	}
	slot := plotW / float64(n)
	xi := func(i int) float64 { return chartLeft + (float64(i)+0.5)*slot }

	top := 1.0
	for i := range n {
		sum := 0.0
		for _, ser := range s.series {
			if s.kind == chartStacked {
				sum += ser[i]
			} else {
				sum = math.Max(sum, ser[i])
			}
		}
		top = math.Max(top, sum)
	}
	if s.limit != nil {
		for _, l := range r.story.limits {
			top = math.Max(top, float64(s.limit(l)))
		}
	}
	step := niceStep(top / 4)
	ymax := math.Ceil(top/step) * step
	y := func(v float64) float64 { return chartH - chartBase - v/ymax*(chartH-chartBase-chartTop) }

	for _, p := range r.story.pauses {
		if !p.To.After(t0) || !p.From.Before(t1) {
			continue
		}
		x0, x1 := xAt(p.From), xAt(p.To)
		fmt.Fprintf(&b, `<rect class="paused" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>paused %s to %s</title></rect>`,
			x0, chartTop, math.Max(1, x1-x0), chartH-chartBase-chartTop, when.ClockWords(p.From.In(r.loc)), when.ClockWords(p.To.In(r.loc)))
	}
	for v := 0.0; v <= ymax+step/2; v += step {
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, chartLeft, chartW-chartRight, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, chartLeft-5, y(v)+5, num(v))
	}
	every := max(1, (n+4)/5)
	for i, m := range r.Minutes {
		if i%every == 0 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xi(i), chartH-7, r.minuteLabel(m.Start))
		}
	}
	label := func(i int) string { return r.minuteLabel(r.Minutes[i].Start) }
	switch s.kind {
	case chartBars:
		bw := math.Max(1, math.Min(slot*0.7, 24))
		for i, v := range s.series[0] {
			fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
				s.classes[0], xi(i)-bw/2, y(v), bw, chartH-chartBase-y(v), label(i), num(v))
		}
	case chartStacked:
		bw := math.Max(1, math.Min(slot*0.8, 24))
		for i := range n {
			base := 0.0
			for k, ser := range s.series {
				v := ser[i]
				fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s %s</title></rect>`,
					s.classes[k], xi(i)-bw/2, y(base+v), bw, y(base)-y(base+v), label(i), num(v), strings.TrimPrefix(s.classes[k], "s-"))
				base += v
			}
		}
	default:
		var pts []string
		for i, v := range s.series[0] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xi(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, s.classes[0], strings.Join(pts, " "))
		for i, v := range s.series[0] {
			fmt.Fprintf(&b, `<circle class="dot %s" cx="%.1f" cy="%.1f" r="2.5"><title>%s: %s</title></circle>`, s.classes[0], xi(i), y(v), label(i), num(v))
		}
	}
	if s.limit != nil {
		var pts []string
		ls := r.story.limits
		for k, l := range ls {
			from := t0
			if k > 0 {
				from = l.At
			}
			to := t1
			if k+1 < len(ls) {
				to = ls[k+1].At
			}
			if !to.After(t0) || !from.Before(t1) {
				continue
			}
			v := y(float64(s.limit(l)))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", xAt(from), v, xAt(to), v))
		}
		fmt.Fprintf(&b, `<polyline class="limit" points="%s"><title>the limit</title></polyline>`, strings.Join(pts, " "))
	}
	for _, e := range r.configChanges() {
		if e.At.Before(t0) || !e.At.Before(t1) {
			continue
		}
		x := xAt(e.At)
		fmt.Fprintf(&b, `<line class="change" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>%s: %s</title></line>`,
			x, x, chartTop, chartH-chartBase, when.ClockWords(e.At.In(r.loc)), template.HTMLEscapeString(e.Change(r.loc, when.Exact)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers, fixed markup and escaped text
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
