package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
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
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/internal/when"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// Report is a sale's report: its configuration, what it sold, how fair and
// how metered it was, its log and its minutes. Every figure is derived
// from one read of the sale's records (Sale): the places, holds,
// bookings and the operators' log.
type Report struct {
	ScreeningID string    `json:"screeningId"`
	Title       string    `json:"title"`
	State       string    `json:"state"` // sales/{id}.state, as last published
	Zone        string    `json:"zone"`  // of the times the page shows
	GeneratedAt time.Time `json:"generatedAt"`
	OpensAt     time.Time `json:"opensAt"`
	StartsAt    time.Time `json:"startsAt"`
	Rate        int       `json:"admitPerMinute"`
	MaxActive   int       `json:"maxActive"`
	PassSeconds int       `json:"passSeconds"`
	MaxSeats    int       `json:"maxSeatsPerUser"`
	Summary     Summary   `json:"summary"`
	Fairness    Fairness  `json:"fairness"`
	Metering    Metering  `json:"metering"`
	// Pauses and Limits are what the log tells: when admissions were
	// paused, and the rate and maxActive from each change on.
	Pauses  []Span     `json:"pauses"`
	Limits  []Limits   `json:"limits"`
	Log     []LogEntry `json:"log"`
	Minutes []Minute   `json:"minutes"`
	// Attendance is the door's count (CONTRACT §13); nil for a screening
	// without a door or tickets.
	Attendance *Attendance `json:"attendance,omitempty"`

	sale  *Sale
	story story
	loc   *time.Location
}

// Build reads the sale of screening id and judges it, at now; the page
// shows times in the screening's own zone when it names a valid IANA one
// (`timeZone`), else in now's location.
func Build(ctx context.Context, fs *firestore.Client, id string, now time.Time) (*Report, error) {
	st, err := Read(ctx, fs, id)
	if err != nil {
		return nil, err
	}
	var title, state string
	if snap, err := fs.Collection(booking.Screenings).Doc(id).Get(ctx); err == nil {
		title, _ = snap.Data()["title"].(string)
		if tz, _ := snap.Data()["timeZone"].(string); tz != "" {
			if loc, err := time.LoadLocation(tz); err == nil {
				now = now.In(loc)
			}
		}
	}
	if snap, err := fs.Collection(sale.Sales).Doc(id).Get(ctx); err == nil {
		state, _ = snap.Data()["state"].(string)
	}
	r := New(st, title, state, now)
	if r.Attendance, err = ReadAttendance(ctx, fs, id); err != nil {
		return nil, err
	}
	return r, nil
}

// Attendance is what the door let in (CONTRACT §13): tickets expected
// (valid), in and out now, not yet in (the no-shows so far), and each
// gate's scans, conflicts among them.
type Attendance struct {
	Expected  int64            `json:"expected"`
	In        int64            `json:"in"`
	Out       int64            `json:"out"`
	NotYet    int64            `json:"notYet"`
	Conflicts int64            `json:"conflicts"`
	Gates     []GateAttendance `json:"gates"`
}

// GateAttendance is one gate's recorded scans, by what they came to.
type GateAttendance struct {
	Gate      string `json:"gate"`
	Scans     int64  `json:"scans"`
	Admitted  int64  `json:"admitted"`
	Exited    int64  `json:"exited"`
	Conflicts int64  `json:"conflicts"` // offline admissions of tickets already in
}

// ReadAttendance counts screening id's door with aggregation queries
// (door.Service.Status): nil when it has neither a door nor tickets.
func ReadAttendance(ctx context.Context, fs *firestore.Client, id string) (*Attendance, error) {
	st, err := door.New(fs, nil).Status(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.Door == nil && st.Expected == 0 && st.In == 0 && st.Out == 0 {
		return nil, nil
	}
	a := &Attendance{Expected: st.Expected, In: st.In, Out: st.Out, NotYet: max(0, st.Expected-st.In-st.Out), Gates: []GateAttendance{}}
	for _, g := range st.Gates {
		a.Gates = append(a.Gates, GateAttendance(g))
		a.Conflicts += g.Conflicts
	}
	return a, nil
}

// New judges a sale read with Read, at now.
func New(st *Sale, title, state string, now time.Time) *Report {
	story := st.tell(now)
	r := &Report{
		ScreeningID: st.ScreeningID, Title: title, State: state, Zone: when.Zone(now), GeneratedAt: now.UTC(),
		OpensAt: st.OpensAt, StartsAt: st.StartsAt, Rate: st.AdmitPerMinute, MaxActive: st.MaxActive,
		PassSeconds: cmpOr(st.PassSeconds, int(sale.DefaultPass/time.Second)), MaxSeats: cmpOr(st.MaxSeatsPerUser, sale.DefaultMaxSeatsPerUser),
		Summary: st.Summarize(now), Fairness: st.AuditFairness(), Metering: st.audit(story),
		Pauses: story.pauses, Limits: story.limits, Log: st.Log, Minutes: st.minutes(story, now),
		sale: st, story: story, loc: now.Location(),
	}
	if r.Pauses == nil {
		r.Pauses = []Span{}
	}
	if r.Log == nil {
		r.Log = []LogEntry{}
	}
	if r.Minutes == nil {
		r.Minutes = []Minute{}
	}
	return r
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// When is t as the page shows every time, as the web app does: day, time
// to the second and the zone's short name ("Mon 2 Mar, 11:00:00 CET").
func (r *Report) When(t time.Time) string { return when.Exact(t.In(r.loc)) }

// ZoneName is the short name of the zone the page's times are in, at the
// time the report was written ("CET").
func (r *Report) ZoneName() string { return when.Short(r.GeneratedAt.In(r.loc)) }

// minuteLabel is a minute's start, as the charts and the table label it:
// "11:05", with the date when the minutes span several days.
func (r *Report) minuteLabel(t time.Time) string {
	t = t.In(r.loc)
	if n := len(r.Minutes); n > 0 && r.Minutes[0].Start.In(r.loc).YearDay() != r.Minutes[n-1].Start.In(r.loc).YearDay() {
		return t.Format("01-02 15:04")
	}
	return t.Format("15:04")
}

// Line is one line of the page: a figure, a verdict, a log entry.
type Line struct {
	Key, Label, Value, Note string
	// Verdict: "ok" or "bad" when the line judges, else "".
	Verdict string
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func secs(v float64) string { return fmt.Sprintf("%.1f s", v) }

func duration(v float64) string {
	d := time.Duration(math.Round(v)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", d/time.Minute, d%time.Minute/time.Second)
	}
	return fmt.Sprintf("%d h %d min", d/time.Hour, d%time.Hour/time.Minute)
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "bad"
}

// Opening is the header's line on the opening and the configuration.
func (r *Report) Opening() Line {
	word := "Opened"
	if r.GeneratedAt.Before(r.OpensAt) {
		word = "Opens"
	}
	return Line{Key: "opening", Label: word + " " + r.When(r.OpensAt),
		Value: fmt.Sprintf("%d admitted a minute at most, %s at once, %d s each, %s a person",
			r.Rate, plural(r.MaxActive, "pass", "passes"), r.PassSeconds, plural(r.MaxSeats, "seat", "seats"))}
}

// Status is the header's line on the state and the report's time.
func (r *Report) Status() Line {
	state := r.State
	if state == "" {
		state = "not published yet"
	}
	return Line{Key: "state", Label: "State " + state + ", as last published", Value: "report written " + r.When(r.GeneratedAt)}
}

// Figures are the sale's headline figures.
func (r *Report) Figures() []Line {
	s := r.Summary
	conv := "–"
	if !math.IsNaN(float64(s.Conversion)) {
		conv = fmt.Sprintf("%.1f%%", 100*float64(s.Conversion))
	}
	paused := Line{Key: "paused", Label: "Paused", Value: "never"}
	if r.Metering.Pauses > 0 {
		paused.Value, paused.Note = duration(r.Metering.PausedSeconds), plural(r.Metering.Pauses, "pause", "pauses")
	}
	lines := []Line{
		{Key: "sold", Label: "Sold", Value: fmt.Sprintf("%d of %s", s.Sold, plural(s.Seats, "seat", "seats"))},
		{Key: "joined", Label: "Joined", Value: strconv.Itoa(s.Places),
			Note: fmt.Sprintf("%d admitted, %d still waiting, %d revoked while waiting", s.Admitted, s.StillWaiting, s.RevokedWaiting)},
		{Key: "conversion", Label: "Admitted who booked", Value: conv, Note: fmt.Sprintf("%d of %d", s.Booked, s.Admitted)},
		{Key: "passes", Label: "Passes", Value: strconv.Itoa(s.Admitted),
			Note: fmt.Sprintf("%d ended by a booking, %d ran out (%d unused), %d revoked, %d live", s.PassesDone, s.PassesRanOut, s.ExpiredUnused, s.PassesRevoked, s.PassesLive)},
		{Key: "wait", Label: "Time in line, p50 / p90 / max", Value: fmt.Sprintf("%s / %s / %s", secs(s.WaitP50), secs(s.WaitP90), secs(s.WaitMax))},
		paused,
	}
	if ac := s.AppCheck; ac != nil {
		unchecked := ac["missing"] + ac["invalid"]
		l := Line{Key: "app-check", Label: "Joined with a valid App Check token", Value: fmt.Sprintf("%d of %d", ac["valid"], s.Places),
			Note: fmt.Sprintf("%d without a token, %d with an invalid one, %d with App Check off", ac["missing"], ac["invalid"], s.Places-ac["valid"]-unchecked)}
		if unchecked > 0 {
			l.Note += ": places a script may hold (App Check in monitor)"
		}
		lines = append(lines, l)
	}
	if m := s.Money; m != nil {
		lines = append(lines, Line{Key: "money", Label: "Takings, after refunds", Value: payment.Format(m.Net, m.Currency),
			Note: fmt.Sprintf("%s in (%s), %s refunded (%s); %s, %d late and booked, %d late and refunded",
				plural(m.Paid, "payment", "payments"), payment.Format(m.Revenue, m.Currency), plural(m.Refunded, "payment", "payments"), payment.Format(m.Refunds, m.Currency),
				plural(m.Checkouts, "checkout", "checkouts"), m.LateAccepted, m.LateRefunded)})
	}
	if a := r.Attendance; a != nil {
		var gates []string
		for _, g := range a.Gates {
			gates = append(gates, fmt.Sprintf("%s %d in, %d %s", g.Gate, g.Admitted, g.Conflicts, map[bool]string{true: "conflict", false: "conflicts"}[g.Conflicts == 1]))
		}
		note := fmt.Sprintf("%d not yet in, %d out now", a.NotYet, a.Out)
		if len(gates) > 0 {
			note += "; by gate: " + strings.Join(gates, ", ")
		}
		lines = append(lines, Line{Key: "attendance", Label: "In at the door", Value: fmt.Sprintf("%d of %d", a.In, a.Expected), Note: note})
	}
	return lines
}

// FairnessLines judge who was admitted when.
func (r *Report) FairnessLines() []Line {
	f := r.Fairness
	yes := map[bool]string{true: "yes", false: "no"}
	rho := Line{Key: "early-rho", Label: fmt.Sprintf("Early joiners %d, admitted %d; Spearman's ρ of join order against admission order", f.EarlyJoiners, f.EarlyAdmitted)}
	switch {
	case f.EarlyAdmitted < MinSpearmanPairs:
		rho.Value = fmt.Sprintf("too few to tell: ρ needs %d admitted early joiners", MinSpearmanPairs)
	case math.IsNaN(float64(f.EarlySpearman)):
		rho.Value = "–"
	default:
		lo, hi := float64(f.EarlySpearmanLow), float64(f.EarlySpearmanHigh)
		fair := lo <= 0 && hi >= 0
		rho.Value = fmt.Sprintf("%+.3f (95%% CI %+.3f to %+.3f)", float64(f.EarlySpearman), lo, hi)
		rho.Note = map[bool]string{true: "consistent with a random draw", false: "the draw followed join order"}[fair]
		rho.Verdict = verdict(fair)
	}
	return []Line{
		{Key: "early-first", Label: "Everyone who joined before the opening, and was still in line, was admitted before anyone who joined after it",
			Value: yes[f.EarlyBeforeLate], Verdict: verdict(f.EarlyBeforeLate)},
		rho,
		{Key: "late-order", Label: fmt.Sprintf("Later joiners %d, admitted %d; pairs admitted out of join order", f.LateJoiners, f.LateAdmitted),
			Value: fmt.Sprintf("%d of %d", f.LateInverted, f.LatePairs), Verdict: verdict(f.LateInverted == 0)},
		{Key: "skipped", Label: "Places still waiting behind someone admitted", Value: strconv.Itoa(f.Skipped), Verdict: verdict(f.Skipped == 0)},
	}
}

// limitsText lists a limit's values over the sale: "2, then 3".
func (r *Report) limitsText(f func(Limits) int) string {
	var vs []string
	for _, l := range r.Limits {
		v := strconv.Itoa(f(l))
		if len(vs) == 0 || vs[len(vs)-1] != v {
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, ", then ")
}

func (r *Report) mostLimit(f func(Limits) int) int {
	most := 0
	for _, l := range r.Limits {
		most = max(most, f(l))
	}
	return most
}

// MeteringLines judge how admission was metered.
func (r *Report) MeteringLines() []Line {
	m := r.Metering
	rate := func(l Limits) int { return l.AdmitPerMinute }
	active := func(l Limits) int { return l.MaxActive }
	first := Line{Key: "first", Label: "From the opening to the first admission", Value: "nobody admitted yet"}
	if m.FirstAdmission >= 0 {
		first.Value, first.Verdict = secs(m.FirstAdmission), verdict(m.FirstAdmission <= RefillPromise.Seconds())
	}
	refill := Line{Key: "refill", Label: "A pass ending while every slot was taken, to the next admission (paused time left out), p50 / max",
		Value: "none: the slots were never all taken while people waited"}
	worst := Line{Key: "refill-worst", Label: "The slowest refill", Value: "–"}
	if m.Refills > 0 {
		refill.Value = fmt.Sprintf("%s / %s", secs(m.RefillP50), secs(m.RefillMax))
		refill.Note = fmt.Sprintf("over %d; %d over the %.0f s promise", m.Refills, m.RefillsOverPromise, RefillPromise.Seconds())
		refill.Verdict = verdict(m.RefillsOverPromise == 0)
		w := m.RefillWorst
		who := w.Email
		if who == "" {
			who = "uid " + w.UID
		}
		worst.Value = fmt.Sprintf("%s after the pass of %s ended at %s", secs(w.Seconds), who, r.When(w.EndedAt))
		worst.Note = "queue id " + w.QueueID
		if !w.Refilled {
			worst.Note += "; no admission came before the end of the report"
		}
	}
	return []Line{
		{Key: "rate", Label: "Most admitted in any 60 s", Value: strconv.Itoa(m.MaxAdmittedPerMinute),
			Note: "limit " + r.limitsText(rate), Verdict: verdict(m.MaxAdmittedPerMinute <= r.mostLimit(rate))},
		{Key: "live", Label: "Most passes live at once", Value: strconv.Itoa(m.MaxLivePasses),
			Note: "limit " + r.limitsText(active), Verdict: verdict(m.MaxLivePasses <= r.mostLimit(active))},
		first,
		refill,
		worst,
	}
}

// LogLine is one log entry as the page shows it.
type LogLine struct {
	Key, When, Who, Action, Change, Reason string
}

// LogLines are the operators' log, oldest first.
func (r *Report) LogLines() []LogLine {
	out := make([]LogLine, len(r.Log))
	for i, e := range r.Log {
		reason := ""
		if e.Reason != "" {
			reason = "“" + e.Reason + "”"
		}
		out[i] = LogLine{Key: fmt.Sprintf("log-%d", i+1), When: r.When(e.At), Who: e.Who(), Action: e.Action, Change: e.Change(r.loc, when.Exact), Reason: reason}
	}
	return out
}

// MinuteRow is one minute as the table shows it.
type MinuteRow struct {
	Key, Label string
	Cells      []int
	Paused     bool
}

// MinuteColumns head the minutes table and minutes.csv.
var MinuteColumns = []string{"joins", "admissions", "expired", "revoked", "holds", "bookings", "waiting", "active", "seats held", "seats sold", "seats left"}

// MoneyColumns follow them in minutes.csv: the money that came in and went
// back in the minute, in the currency's smallest unit (CONTRACT §10).
var MoneyColumns = []string{"revenue", "refunds"}

func (m Minute) cells() []int {
	return []int{m.Joins, m.Admissions, m.Expired, m.Revoked, m.Holds, m.Bookings, m.Waiting, m.Active, m.SeatsHeld, m.SeatsSold, m.SeatsLeft}
}

// MinuteRows are the table's minutes, each labelled by its start.
func (r *Report) MinuteRows() []MinuteRow {
	out := make([]MinuteRow, len(r.Minutes))
	for i, m := range r.Minutes {
		out[i] = MinuteRow{Key: "minute-" + m.Start.UTC().Format("200601021504"), Label: r.minuteLabel(m.Start), Cells: m.cells(), Paused: m.Paused}
	}
	return out
}

// MinuteTotals add up the table's counts (the first six columns).
func (r *Report) MinuteTotals() []int {
	t := make([]int, 6)
	for _, m := range r.Minutes {
		for i, v := range m.cells()[:6] {
			t[i] += v
		}
	}
	return t
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sale report · {{.Title}} ({{.ScreeningID}})</title>
<style>
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#111318;color:#eceef3}
main{max-width:64rem;margin:0 auto;padding:1.25rem}
h1{margin:.2rem 0 0;font-size:1.6rem;overflow-wrap:anywhere} h2{font-size:1.1rem;margin:1.6rem 0 .6rem}
p{margin:.3rem 0}.muted{color:#9aa3b5}.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem}
.fig{background:#1b1e26;border:1px solid #2c313d;border-radius:.7rem;padding:.7rem .9rem}
.fig b{display:block;font-size:1.5rem}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,24rem),1fr));gap:1rem}
figure{margin:0;background:#1b1e26;border:1px solid #2c313d;border-radius:.7rem;padding:.6rem .8rem;min-width:0}
figcaption{font-weight:600;margin-bottom:.3rem}.legend{font-size:.8rem;margin-top:.3rem;display:flex;flex-wrap:wrap;gap:.2rem .8rem}
.key i{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}
i.s-sold{background:#e0689a}i.s-held{background:#f0b44c}i.s-left{background:#3a4152}i.limit{background:#ff7a7a;height:2px;vertical-align:3px}
i.paused{background:rgba(240,180,76,.22)}i.change{background:#b48cff;width:2px}
svg{width:100%;height:auto;display:block}
.grid{stroke:#2c313d}.axis{fill:#9aa3b5;font-size:14px}.line{fill:none;stroke:#4f8cff;stroke-width:2}.dot{fill:#4f8cff}
.bar{fill:#35b37e}.bar.s-join{fill:#4f8cff}.bar.s-sold{fill:#e0689a}.bar.s-held{fill:#f0b44c}.bar.s-left{fill:#3a4152}
.limit{fill:none;stroke:#ff7a7a;stroke-width:2;stroke-dasharray:6 4}.paused{fill:rgba(240,180,76,.18)}.change{stroke:#b48cff;stroke-width:2}.none{fill:#9aa3b5}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%}td,th{padding:.35rem .5rem;border-bottom:1px solid #2c313d;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.minutes td,table.minutes th{padding:.25rem .4rem;font-size:.85rem}tr.paused td:first-child{box-shadow:inset 3px 0 0 #f0b44c}
tr.total td{font-weight:600;border-top:2px solid #2c313d}
.ok{color:#9be7c4}.bad{color:#ff7a7a}.note{display:block;color:#9aa3b5;font-size:.85rem;font-weight:400}
table[data-report=log]{min-width:44rem}table.minutes{min-width:40rem}.note{overflow-wrap:anywhere}
@media (max-width:40rem){main{padding:.75rem}figure{padding:.5rem}
table.judge tr,table.judge td{display:block}table.judge td{border:0;padding:.1rem 0}table.judge tr{padding:.45rem 0;border-bottom:1px solid #2c313d}
table.judge td.n{text-align:left;white-space:normal;font-weight:600}
table[data-report=log]{min-width:0}table[data-report=log] tr[data-line=log-head]{display:none}
table[data-report=log] tr{display:block;padding:.45rem 0;border-bottom:1px solid #2c313d}
table[data-report=log] td{display:inline;border:0;padding:0 .5rem 0 0;white-space:normal}
table[data-report=log] td:nth-child(1),table[data-report=log] td:nth-child(4),table[data-report=log] td:nth-child(5){display:block}
table[data-report=log] td:nth-child(1){color:#9aa3b5;text-align:left}}
</style></head><body><main>
<p class="muted">firelock sale report</p>
<h1 data-line="title">{{.Title}} <span class="muted">({{.ScreeningID}})</span></h1>
{{with .Opening}}<p data-line="{{.Key}}">{{.Label}} · {{.Value}}</p>{{end}}
{{with .Status}}<p class="muted" data-line="{{.Key}}">{{.Label}} · {{.Value}}</p>{{end}}

<div class="grid3" data-report="figures">
{{range .Figures}}<div class="fig" data-line="{{.Key}}"><span class="muted">{{.Label}}</span> <b>{{.Value}}</b>{{if .Note}} <span class="note">{{.Note}}</span>{{end}}</div>
{{end}}</div>

<h2>Over time</h2>
<div class="charts">{{range .Charts}}<figure data-chart="{{.Name}}"><figcaption>{{.Title}}</figcaption>{{.SVG}}<div class="legend">{{.Legend}}</div></figure>{{end}}</div>

<h2>Fairness</h2>
<table class="judge" data-report="fairness">
{{range .FairnessLines}}<tr data-line="{{.Key}}"><td>{{.Label}}</td><td class="n{{if .Verdict}} {{.Verdict}}{{end}}">{{.Value}}{{if .Note}} <span class="note">{{.Note}}</span>{{end}}</td></tr>
{{end}}</table>

<h2>Metering</h2>
<table class="judge" data-report="metering">
{{range .MeteringLines}}<tr data-line="{{.Key}}"><td>{{.Label}}</td><td class="n{{if .Verdict}} {{.Verdict}}{{end}}">{{.Value}}{{if .Note}} <span class="note">{{.Note}}</span>{{end}}</td></tr>
{{end}}</table>

<h2>Log</h2>
{{with .LogLines}}<div class="scroll"><table data-report="log"><tr data-line="log-head"><th>when</th><th>who</th><th>action</th><th>change</th><th>why</th></tr>
{{range .}}<tr data-line="{{.Key}}"><td class="n">{{.When}}</td><td>{{.Who}}</td><td>{{.Action}}</td><td>{{.Change}}</td><td>{{.Reason}}</td></tr>
{{end}}</table></div>{{else}}<p class="muted" data-line="log-none">Nothing logged: no operator acted on this sale.</p>{{end}}

<h2>Minutes</h2>
<div class="scroll"><table class="minutes" data-report="minutes"><tr data-line="minutes-head"><th>minute from ({{.ZoneName}})</th>{{range .Columns}}<th class="n">{{.}}</th>{{end}}</tr>
{{range .MinuteRows}}<tr data-line="{{.Key}}"{{if .Paused}} class="paused"{{end}}><td>{{.Label}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{end}}<tr class="total" data-line="minutes-total"><td>total</td>{{range .MinuteTotals}}<td class="n">{{.}}</td>{{end}}<td colspan="5"></td></tr>
</table></div>
<p class="muted">Counts within each minute, levels at its end; a marked row was paused for some of the minute.</p>
</main></body></html>
`))

// Columns head the minutes table.
func (r *Report) Columns() []string { return MinuteColumns }

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script, nothing to fetch.
func (r *Report) HTML(w io.Writer) error { return page.Execute(w, r) }

// JSON writes the report as JSON, indented.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVFiles are the files CSV writes.
var CSVFiles = []string{"minutes.csv", "admissions.csv", "bookings.csv", "log.csv"}

// CSV writes the raw tables into dir: minutes.csv (each minute by its
// start), admissions.csv (every place), bookings.csv and log.csv. Times
// are RFC 3339 in UTC.
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
	head := []string{"minute"}
	for _, c := range append(slices.Clone(MinuteColumns), MoneyColumns...) {
		head = append(head, strings.ReplaceAll(c, " ", "_"))
	}
	minutes := [][]string{head}
	for _, m := range r.Minutes {
		start := m.Start
		row := []string{ts(&start)}
		for _, v := range m.cells() {
			row = append(row, strconv.Itoa(v))
		}
		row = append(row, strconv.FormatInt(m.Revenue, 10), strconv.FormatInt(m.Refunds, 10))
		minutes = append(minutes, row)
	}
	places := [][]string{{"queueId", "uid", "email", "status", "joinedAt", "order", "admittedAt", "passUntil", "doneAt", "revokedAt", "appCheck"}}
	ps := slices.Clone(r.sale.Places)
	slices.SortFunc(ps, func(a, b Place) int { return a.JoinedAt.Compare(b.JoinedAt) })
	for _, p := range ps {
		j := p.JoinedAt
		places = append(places, []string{p.ID, p.UID, p.Email, p.Status, ts(&j), p.Order, ts(p.AdmittedAt), ts(p.PassUntil), ts(p.DoneAt), ts(p.RevokedAt), p.AppCheck})
	}
	bookings := [][]string{{"bookingId", "uid", "status", "seats", "holdId", "createdAt"}}
	bs := slices.Clone(r.sale.Bookings)
	slices.SortFunc(bs, func(a, b Booking) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, b := range bs {
		c := b.CreatedAt
		bookings = append(bookings, []string{b.ID, b.UID, b.Status, strings.Join(b.Seats, " "), b.HoldID, ts(&c)})
	}
	logRows := [][]string{{"at", "uid", "email", "action", "change", "reason"}}
	for _, e := range r.Log {
		at := e.At
		logRows = append(logRows, []string{ts(&at), e.UID, e.Email, e.Action, e.Change(time.UTC, when.Format), e.Reason})
	}
	for i, rows := range [][][]string{minutes, places, bookings, logRows} {
		name := CSVFiles[i]
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
