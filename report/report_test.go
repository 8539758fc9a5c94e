package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/sale"
)

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }

// The sale of the report test, minute by minute (times after the opening
// at 10:00:00 UTC; the report is written at 10:08:00 in CET, UTC+01:00):
//
//	-5m      olive creates the sale: 60 a minute, 2 passes at once, 120 s each, 4 seats
//	-3m..-30s  e1, e2, e3, w1 join early
//	+1s      e2 and e3 admitted (their draws came first)
//	+20s     e2 holds A1 A2; +40s confirms them (b1): e2's pass ends, done
//	+41.5s   e1 admitted: 1.5 s after e2's pass ended with both slots taken
//	+1m30s   w1, still waiting, revoked ("two accounts")
//	+1m50s   l1 joins; +2m1s e3's pass runs out; +2m2s l1 admitted (1 s)
//	+2m      e1 holds B1 until +2m30s (it lapses); +2m10s l2 joins
//	+2m30s   l1 books B2 (b2): l1's pass ends, done; l2 waits
//	+2m41.5s e1's pass runs out
//	+3m      paused ("payment provider down"); +3m20s l3 joins
//	+4m      resumed; +4m0.5s l2 and l3 admitted: l2 waited 90.5 s for
//	         l1's slot, 60 s of it paused: a refill of 30.5 s
//	+4m30s   l3 holds B3 B4; +5m confirms them (b3): done
//	+5m5s    maxActive 2 -> 3 ("a third box office")
//	+5m10s   l4 joins, +5m11s admitted; +6m0.5s l2's pass runs out
//	+6m30s   l5 joins, +6m31s admitted (live at the end)
//	+7m11s   l4's pass runs out; +7m20s paused ("checking the hall")
//	+7m30s   l6 joins, and waits
var (
	opensAt = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	zone    = time.FixedZone("CET", 3600)
	now     = opensAt.Add(8 * time.Minute).In(zone)
)

func at(d time.Duration) time.Time { return opensAt.Add(d) }

func ms(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

type fixturePlace struct {
	uid                                string
	joined                             time.Duration
	status, order                      string
	admitted, passUntil, done, revoked *time.Duration
	appCheck                           string // "": App Check was off (e1); else valid unless said
}

func d(v time.Duration) *time.Duration { return &v }

// appCheckResult is what App Check made of the place's join: e1 joined
// while it was off; the others are valid unless the fixture says.
func (p fixturePlace) appCheckResult() string {
	switch {
	case p.uid == "e1":
		return ""
	case p.appCheck != "":
		return p.appCheck
	}
	return "valid"
}

var fixturePlaces = []fixturePlace{
	{uid: "e1", joined: -3 * time.Minute, status: "expired", order: "0c", admitted: d(ms(41.5)), passUntil: d(ms(161.5))},
	{uid: "e2", joined: -2 * time.Minute, status: "done", order: "0a", admitted: d(time.Second), passUntil: d(121 * time.Second), done: d(40 * time.Second)},
	{uid: "e3", joined: -time.Minute, status: "expired", order: "0b", admitted: d(time.Second), passUntil: d(121 * time.Second)},
	{uid: "w1", joined: -30 * time.Second, status: "expired", order: "0d", revoked: d(90 * time.Second), appCheck: "missing"},
	{uid: "l1", joined: 110 * time.Second, status: "done", admitted: d(122 * time.Second), passUntil: d(242 * time.Second), done: d(150 * time.Second)},
	{uid: "l2", joined: 130 * time.Second, status: "expired", admitted: d(ms(240.5)), passUntil: d(ms(360.5))},
	{uid: "l3", joined: 200 * time.Second, status: "done", admitted: d(ms(240.5)), passUntil: d(ms(360.5)), done: d(300 * time.Second)},
	{uid: "l4", joined: 310 * time.Second, status: "expired", admitted: d(311 * time.Second), passUntil: d(431 * time.Second)},
	{uid: "l5", joined: 390 * time.Second, status: "admitted", admitted: d(391 * time.Second), passUntil: d(511 * time.Second)},
	{uid: "l6", joined: 450 * time.Second, status: "waiting", appCheck: "invalid"},
}

const screening = "rep1"

func qid(uid string) string { return sale.QueueID(screening, uid) }

func sold(seats ...string) []string { return seats }

// writeFixture stores the sale above as the functions would have.
func writeFixture(t *testing.T, fs *firestore.Client) {
	ctx := context.Background()
	set := func(path string, v map[string]any) {
		t.Helper()
		if _, err := fs.Doc(path).Set(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	set("screenings/"+screening, map[string]any{"title": "Nosferatu", "startsAt": at(2 * time.Hour), "rows": []string{"A", "B"}, "seatsPerRow": 5,
		"sale": map[string]any{"opensAt": opensAt, "admitPerMinute": 60, "maxActive": 3, "passSeconds": 120, "maxSeatsPerUser": 4}})
	set("sales/"+screening, map[string]any{"state": "paused", "opensAt": opensAt})
	for _, p := range fixturePlaces {
		order := p.order
		if order == "" {
			order = fmt.Sprintf("1%017d%s", at(p.joined).UnixMicro(), qid(p.uid)[:12])
		}
		doc := map[string]any{"uid": p.uid, "email": p.uid + "@example.com", "screeningId": screening, "status": p.status,
			"joinedAt": at(p.joined), "order": order, "shard": 0}
		if ac := p.appCheckResult(); ac != "" {
			doc["appCheck"] = ac
		}
		for k, v := range map[string]*time.Duration{"admittedAt": p.admitted, "passUntil": p.passUntil, "doneAt": p.done, "revokedAt": p.revoked} {
			if v != nil {
				doc[k] = at(*v)
			}
		}
		set("queue/"+qid(p.uid), doc)
	}
	hold := func(id, uid string, seats []string, created, until time.Duration, status, bookingID string) {
		h := map[string]any{"uid": uid, "screeningId": screening, "seats": seats, "status": status, "heldUntil": at(until), "createdAt": at(created), "requestId": id}
		if bookingID != "" {
			h["bookingId"] = bookingID
		}
		set("holds/"+id, h)
	}
	hold("h1", "e2", sold("A1", "A2"), 20*time.Second, 440*time.Second, "confirmed", "b1")
	hold("h2", "e1", sold("B1"), 120*time.Second, 150*time.Second, "expired", "")
	hold("h3", "l3", sold("B3", "B4"), 270*time.Second, 690*time.Second, "confirmed", "b3")
	book := func(id, uid string, seats []string, created time.Duration, holdID string) {
		b := map[string]any{"uid": uid, "screeningId": screening, "seats": seats, "status": "confirmed", "createdAt": at(created), "requestId": id}
		if holdID != "" {
			b["holdId"] = holdID
		}
		set("bookings/"+id, b)
		for _, s := range seats {
			set("screenings/"+screening+"/seats/"+s, map[string]any{"status": "booked", "bookingId": id, "bookedAt": at(created)})
		}
	}
	book("b1", "e2", sold("A1", "A2"), 40*time.Second, "h1")
	book("b2", "l1", sold("B2"), 150*time.Second, "")
	book("b3", "l3", sold("B3", "B4"), 300*time.Second, "h3")
	// The money (CONTRACT §10): h1 and h3 paid (12.50 EUR a seat), e1 paid
	// for h2 after it lapsed and was refunded (seats lost), and a checkout
	// that expired unpaid.
	pay := func(holdID, status string, amount int64, paid, refunded time.Duration, extra map[string]any) {
		d := map[string]any{"uid": "u", "screeningId": screening, "holdId": holdID, "sessionId": "cs_" + holdID, "amount": amount, "currency": "eur",
			"status": status, "createdAt": at(paid - 5*time.Second), "updatedAt": at(paid)}
		if paid != 0 {
			d["paidAt"] = at(paid)
		}
		if refunded != 0 {
			d["refundedAt"] = at(refunded)
		}
		maps.Copy(d, extra)
		set("payments/"+holdID, d)
	}
	pay("h1", "paid", 2500, 38*time.Second, 0, map[string]any{"bookingId": "b1"})
	pay("h2", "refunded", 1250, 155*time.Second, 156*time.Second, map[string]any{"refundReason": "seats_lost"})
	pay("h3", "paid", 2500, 298*time.Second, 0, map[string]any{"bookingId": "b3"})
	pay("h9", "expired", 1250, 0, 0, nil)

	cfg := func(active int) map[string]any {
		return map[string]any{"opensAt": "2026-03-02T10:00:00Z", "admitPerMinute": int64(60), "maxActive": int64(active), "passSeconds": int64(120), "maxSeatsPerUser": int64(4)}
	}
	paused := func(active int) map[string]any { c := cfg(active); c["paused"] = true; return c }
	w1 := func(status string, extra ...any) map[string]any {
		m := map[string]any{"user": "w1", "userEmail": "w1@example.com", "status": status}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	for i, e := range []map[string]any{
		{"at": at(-5 * time.Minute), "action": "configure", "after": cfg(2), "reason": "on sale at eleven"},
		{"at": at(90 * time.Second), "action": "revoke", "before": w1("waiting"), "after": w1("expired", "holdsReleased", int64(0)), "reason": "two accounts"},
		{"at": at(3 * time.Minute), "action": "pause", "before": cfg(2), "after": paused(2), "reason": "payment provider down"},
		{"at": at(4 * time.Minute), "action": "resume", "before": paused(2), "after": cfg(2), "reason": "payments are back"},
		{"at": at(305 * time.Second), "action": "configure", "before": cfg(2), "after": cfg(3), "reason": "a third box office"},
		{"at": at(440 * time.Second), "action": "pause", "before": cfg(3), "after": paused(3), "reason": "checking the hall"},
	} {
		e["uid"], e["email"] = "op-olive", "olive@example.com"
		set(fmt.Sprintf("saleLog/%s/entries/e%d", screening, i), e)
	}
}

// minuteRow is what the test knows of one minute: its start (UTC) and
// the eleven columns.
type minuteRow struct {
	start  string // HH:MM in UTC
	cells  [11]int
	paused bool
}

// The minutes, worked out by hand from the story above: joins,
// admissions, expired, revoked, holds, bookings | waiting, active, seats
// held, sold, left at the minute's end.
var wantMinutes = []minuteRow{
	{"09:55", [11]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10}, false},
	{"09:56", [11]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10}, false},
	{"09:57", [11]int{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 10}, false},
	{"09:58", [11]int{1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 10}, false},
	{"09:59", [11]int{2, 0, 0, 0, 0, 0, 4, 0, 0, 0, 10}, false},
	{"10:00", [11]int{0, 3, 0, 0, 1, 1, 1, 2, 0, 2, 8}, false},
	{"10:01", [11]int{1, 0, 0, 1, 0, 0, 1, 2, 0, 2, 8}, false},
	{"10:02", [11]int{1, 1, 2, 0, 1, 1, 1, 0, 0, 3, 7}, false},
	{"10:03", [11]int{1, 0, 0, 0, 0, 0, 2, 0, 0, 3, 7}, true},
	{"10:04", [11]int{0, 2, 0, 0, 1, 0, 0, 2, 2, 3, 5}, false},
	{"10:05", [11]int{1, 1, 0, 0, 0, 1, 0, 2, 0, 5, 5}, false},
	{"10:06", [11]int{1, 1, 1, 0, 0, 0, 0, 2, 0, 5, 5}, false},
	{"10:07", [11]int{1, 0, 1, 0, 0, 0, 1, 1, 0, 5, 5}, true},
}

// wantMoney is the money in (revenue) and back (refunds) by minute, in
// cents; other minutes have none.
var wantMoney = map[string][2]int{"10:00": {2500, 0}, "10:02": {1250, 1250}, "10:04": {2500, 0}}

func (m minuteRow) startTime(t *testing.T) time.Time {
	hm, err := time.Parse("15:04", m.start)
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(2026, 3, 2, hm.Hour(), hm.Minute(), 0, 0, time.UTC)
}

// The one report test (issue #38): a sale with known numbers, and every
// line of the page, every row of the CSV files and every field of the
// JSON checked against them. The minutes add up to the summary.
func TestTheReportOfASaleWithKnownNumbers(t *testing.T) {
	fs := firelocktest.NewClient(t)
	writeFixture(t, fs)
	r, err := Build(context.Background(), fs, screening, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("html", func(t *testing.T) { checkHTML(t, r) })
	t.Run("csv", func(t *testing.T) { checkCSV(t, r) })
	t.Run("json", func(t *testing.T) { checkJSON(t, r) })
}

var (
	lineRE = regexp.MustCompile(`(?s)<(\w+)[^>]*\bdata-line="([^"]+)"[^>]*>(.*?)</(?:p|h1|div|tr)>\n`)
	tagRE  = regexp.MustCompile(`<[^>]+>`)
	wsRE   = regexp.MustCompile(`\s+`)
)

func text(h string) string {
	return strings.TrimSpace(wsRE.ReplaceAllString(html.UnescapeString(tagRE.ReplaceAllString(h, " ")), " "))
}

func checkHTML(t *testing.T, r *Report) {
	var b strings.Builder
	if err := r.HTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	w := func(d time.Duration) string { return at(d).In(zone).Format("Mon 2 Jan, 15:04:05") + " CET" }
	want := map[string]string{
		"title":        "Nosferatu (rep1)",
		"opening":      "Opened Mon 2 Mar, 11:00:00 CET · 60 admitted a minute at most, 3 passes at once, 120 s each, 4 seats a person",
		"state":        "State paused, as last published · report written Mon 2 Mar, 11:08:00 CET",
		"sold":         "Sold 5 of 10 seats",
		"joined":       "Joined 10 8 admitted, 1 still waiting, 1 revoked while waiting",
		"conversion":   "Admitted who booked 37.5% 3 of 8",
		"passes":       "Passes 8 3 ended by a booking, 4 ran out (4 unused), 0 revoked, 1 live",
		"wait":         "Time in line, p50 / p90 / max 1.0 s / 110.5 s / 110.5 s",
		"paused":       "Paused 1 min 40 s 2 pauses",
		"app-check":    "Joined with a valid App Check token 7 of 10 1 without a token, 1 with an invalid one, 1 with App Check off: places a script may hold (App Check in monitor)",
		"money":        "Takings, after refunds 50.00 EUR 3 payments in (62.50 EUR), 1 payment refunded (12.50 EUR); 4 checkouts, 0 late and booked, 1 late and refunded",
		"early-first":  "Everyone who joined before the opening, and was still in line, was admitted before anyone who joined after it yes",
		"early-rho":    "Early joiners 4, admitted 3; Spearman's ρ of join order against admission order too few to tell: ρ needs 10 admitted early joiners",
		"late-order":   "Later joiners 6, admitted 5; pairs admitted out of join order 0 of 10",
		"skipped":      "Places still waiting behind someone admitted 0",
		"rate":         "Most admitted in any 60 s 3 limit 60",
		"live":         "Most passes live at once 2 limit 2, then 3",
		"first":        "From the opening to the first admission 1.0 s",
		"refill":       "A pass ending while every slot was taken, to the next admission (paused time left out), p50 / max 1.5 s / 30.5 s over 3; 1 over the 2 s promise",
		"refill-worst": "The slowest refill 30.5 s after the pass of l1@example.com ended at " + w(150*time.Second) + " queue id " + qid("l1"),
		"log-head":     "when who action change why",
		"log-1":        w(-5*time.Minute) + " olive@example.com configure opensAt Mon 2 Mar, 11:00:00 CET, admitPerMinute 60, maxActive 2, passSeconds 120, maxSeatsPerUser 4 “on sale at eleven”",
		"log-2":        w(90*time.Second) + " olive@example.com revoke w1@example.com (uid w1): waiting → expired “two accounts”",
		"log-3":        w(3*time.Minute) + " olive@example.com pause “payment provider down”",
		"log-4":        w(4*time.Minute) + " olive@example.com resume “payments are back”",
		"log-5":        w(305*time.Second) + " olive@example.com configure maxActive 2 → 3 “a third box office”",
		"log-6":        w(440*time.Second) + " olive@example.com pause “checking the hall”",
		"minutes-head": "minute from (CET) joins admissions expired revoked holds bookings waiting active seats held seats sold seats left",
	}
	var total [6]int
	for _, m := range wantMinutes {
		start := m.startTime(t)
		cells := make([]string, len(m.cells))
		for i, v := range m.cells {
			cells[i] = fmt.Sprint(v)
			if i < 6 {
				total[i] += v
			}
		}
		want["minute-"+start.Format("200601021504")] = start.In(zone).Format("15:04") + " " + strings.Join(cells, " ")
	}
	if total != [6]int{10, 8, 4, 1, 3, 3} {
		t.Fatalf("the test's own minutes add up to %v: they disagree with its story", total)
	}
	want["minutes-total"] = "total 10 8 4 1 3 3"

	got := map[string]string{}
	for _, m := range lineRE.FindAllStringSubmatch(page, -1) {
		if _, dup := got[m[2]]; dup {
			t.Errorf("line %q appears twice", m[2])
		}
		got[m[2]] = text(m[3])
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("line %s:\n got %q\nwant %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("line %s (%q) is not checked", k, v)
		}
	}
	if n := strings.Count(page, `data-line="`); n != len(want) {
		t.Errorf("%d data-line elements, %d read by the test", n, len(want))
	}
	// Paused minutes are marked in the table.
	for _, m := range wantMinutes {
		row := regexp.MustCompile(`<tr data-line="minute-` + m.startTime(t).Format("200601021504") + `"( class="paused")?>`).FindStringSubmatch(page)
		if row == nil || (row[1] != "") != m.paused {
			t.Errorf("minute %s: paused mark %v, want %v", m.start, row, m.paused)
		}
	}

	// The charts: one bar or point a minute, both pauses shaded, the
	// change of maxActive marked, the limits drawn where they apply.
	for _, c := range []struct {
		name, mark string
		marks      int
		limit      bool
	}{
		{"waiting", `<circle class="dot`, 13, false},
		{"joins", `<rect class="bar s-join"`, 13, false},
		{"admissions", `<rect class="bar s-admit"`, 13, true},
		{"active", `<circle class="dot`, 13, true},
		{"seats-left", `<rect class="bar s-`, 3 * 13, false},
	} {
		fig := regexp.MustCompile(`(?s)<figure data-chart="` + c.name + `">.*?</figure>`).FindString(page)
		if fig == "" {
			t.Errorf("no %s chart", c.name)
			continue
		}
		if n := strings.Count(fig, c.mark); n != c.marks {
			t.Errorf("chart %s: %d marks, want %d", c.name, n, c.marks)
		}
		if n := strings.Count(fig, `<rect class="paused"`); n != 2 {
			t.Errorf("chart %s: %d paused stretches shaded, want 2", c.name, n)
		}
		if n := strings.Count(fig, `<line class="change"`); n != 1 || !strings.Contains(fig, "maxActive 2 → 3") {
			t.Errorf("chart %s: %d configuration changes marked, want the one of maxActive", c.name, n)
		}
		if strings.Contains(fig, `class="limit"`) != c.limit {
			t.Errorf("chart %s: a limit line %v, want %v", c.name, !c.limit, c.limit)
		}
		// Labelled by the minutes' starts, every third: 10:55 first.
		if !strings.Contains(fig, `text-anchor="middle">10:55</text>`) {
			t.Errorf("chart %s: the first minute is not labelled by its start, 10:55", c.name)
		}
	}
	if regexp.MustCompile(`(?i)<script|<link|<img|src=|url\(|@import|href="http`).MatchString(page) {
		t.Error("the page fetches something: it must be self-contained")
	}
}

func readCSV(t *testing.T, path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func checkCSV(t *testing.T, r *Report) {
	dir := t.TempDir()
	if err := r.CSV(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(dir)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if want := []string{"admissions.csv", "bookings.csv", "log.csv", "minutes.csv"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	rfc := func(d time.Duration) string { return at(d).UTC().Format(time.RFC3339Nano) }
	opt := func(v *time.Duration) string {
		if v == nil {
			return ""
		}
		return rfc(*v)
	}
	minutes := [][]string{{"minute", "joins", "admissions", "expired", "revoked", "holds", "bookings", "waiting", "active", "seats_held", "seats_sold", "seats_left", "revenue", "refunds"}}
	for _, m := range wantMinutes {
		row := []string{m.startTime(t).Format(time.RFC3339)}
		for _, v := range m.cells {
			row = append(row, fmt.Sprint(v))
		}
		money := wantMoney[m.start]
		row = append(row, fmt.Sprint(money[0]), fmt.Sprint(money[1]))
		minutes = append(minutes, row)
	}
	places := [][]string{{"queueId", "uid", "email", "status", "joinedAt", "order", "admittedAt", "passUntil", "doneAt", "revokedAt", "appCheck"}}
	for _, p := range fixturePlaces { // in join order
		order := p.order
		if order == "" {
			order = fmt.Sprintf("1%017d%s", at(p.joined).UnixMicro(), qid(p.uid)[:12])
		}
		places = append(places, []string{qid(p.uid), p.uid, p.uid + "@example.com", p.status, rfc(p.joined), order, opt(p.admitted), opt(p.passUntil), opt(p.done), opt(p.revoked), p.appCheckResult()})
	}
	bookings := [][]string{
		{"bookingId", "uid", "status", "seats", "holdId", "createdAt"},
		{"b1", "e2", "confirmed", "A1 A2", "h1", rfc(40 * time.Second)},
		{"b2", "l1", "confirmed", "B2", "", rfc(150 * time.Second)},
		{"b3", "l3", "confirmed", "B3 B4", "h3", rfc(300 * time.Second)},
	}
	log := [][]string{
		{"at", "uid", "email", "action", "change", "reason"},
		{rfc(-5 * time.Minute), "op-olive", "olive@example.com", "configure", "opensAt 2026-03-02 10:00:00 UTC, admitPerMinute 60, maxActive 2, passSeconds 120, maxSeatsPerUser 4", "on sale at eleven"},
		{rfc(90 * time.Second), "op-olive", "olive@example.com", "revoke", "w1@example.com (uid w1): waiting → expired", "two accounts"},
		{rfc(3 * time.Minute), "op-olive", "olive@example.com", "pause", "", "payment provider down"},
		{rfc(4 * time.Minute), "op-olive", "olive@example.com", "resume", "", "payments are back"},
		{rfc(305 * time.Second), "op-olive", "olive@example.com", "configure", "maxActive 2 → 3", "a third box office"},
		{rfc(440 * time.Second), "op-olive", "olive@example.com", "pause", "", "checking the hall"},
	}
	for name, want := range map[string][][]string{"minutes.csv": minutes, "admissions.csv": places, "bookings.csv": bookings, "log.csv": log} {
		got := readCSV(t, filepath.Join(dir, name))
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", name, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%s row %d:\n got %q\nwant %q", name, i, got[i], want[i])
			}
		}
	}
}

func checkJSON(t *testing.T, r *Report) {
	var b strings.Builder
	if err := r.JSON(&b); err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	rfc := func(d time.Duration) string { return at(d).UTC().Format(time.RFC3339Nano) }
	var minutes []any
	for _, m := range wantMinutes {
		c := m.cells
		minutes = append(minutes, map[string]any{"start": m.startTime(t).Format(time.RFC3339),
			"joins": c[0], "admissions": c[1], "expired": c[2], "revoked": c[3], "holds": c[4], "bookings": c[5],
			"waiting": c[6], "active": c[7], "seatsHeld": c[8], "seatsSold": c[9], "seatsLeft": c[10], "paused": m.paused,
			"revenue": wantMoney[m.start][0], "refunds": wantMoney[m.start][1]})
	}
	cfg := func(active int) map[string]any {
		return map[string]any{"opensAt": "2026-03-02T10:00:00Z", "admitPerMinute": 60, "maxActive": active, "passSeconds": 120, "maxSeatsPerUser": 4}
	}
	paused := func(active int) map[string]any { c := cfg(active); c["paused"] = true; return c }
	entry := func(d time.Duration, action, reason string, before, after map[string]any) map[string]any {
		e := map[string]any{"at": rfc(d), "uid": "op-olive", "email": "olive@example.com", "action": action, "reason": reason, "after": after}
		if before != nil {
			e["before"] = before
		}
		return e
	}
	want := map[string]any{
		"screeningId": "rep1", "title": "Nosferatu", "state": "paused", "zone": "UTC+01:00",
		"generatedAt": rfc(8 * time.Minute), "opensAt": rfc(0), "startsAt": rfc(2 * time.Hour),
		"admitPerMinute": 60, "maxActive": 3, "passSeconds": 120, "maxSeatsPerUser": 4,
		"summary": map[string]any{"seats": 10, "sold": 5, "places": 10, "admitted": 8, "booked": 3, "conversion": 0.375,
			"passesDone": 3, "passesRanOut": 4, "expiredUnused": 4, "passesRevoked": 0, "passesLive": 1, "revokedWaiting": 1, "stillWaiting": 1,
			"waitP50Seconds": 1, "waitP90Seconds": 110.5, "waitMaxSeconds": 110.5,
			"appCheck": map[string]any{"valid": 7, "missing": 1, "invalid": 1},
			"money": map[string]any{"currency": "eur", "checkouts": 4, "paid": 3, "revenue": 6250, "refunded": 1, "refunds": 1250, "net": 5000,
				"lateAccepted": 0, "lateRefunded": 1}},
		"fairness": map[string]any{"earlyJoiners": 4, "lateJoiners": 6, "earlyAdmitted": 3, "lateAdmitted": 5, "earlyBeforeLate": true,
			"earlySpearman": nil, "earlySpearmanLow": nil, "earlySpearmanHigh": nil, "earlyLineSpearman": nil,
			"latePairs": 10, "lateInverted": 0, "lateInversions": 0, "skipped": 0, "unranked": 0},
		"metering": map[string]any{"admitted": 8, "maxAdmittedPerMinute": 3, "maxLivePasses": 2, "firstAdmissionSeconds": 1,
			"refills": 3, "refillP50Seconds": 1.5, "refillMaxSeconds": 30.5, "refillsOverPromise": 1,
			"refillWorst": map[string]any{"queueId": qid("l1"), "uid": "l1", "email": "l1@example.com", "endedAt": rfc(150 * time.Second), "seconds": 30.5, "refilled": true},
			"pauses":      2, "pausedSeconds": 100},
		"pauses": []any{map[string]any{"from": rfc(3 * time.Minute), "to": rfc(4 * time.Minute)}, map[string]any{"from": rfc(440 * time.Second), "to": rfc(8 * time.Minute)}},
		"limits": []any{map[string]any{"at": rfc(-5 * time.Minute), "admitPerMinute": 60, "maxActive": 2}, map[string]any{"at": rfc(305 * time.Second), "admitPerMinute": 60, "maxActive": 3}},
		"log": []any{
			entry(-5*time.Minute, "configure", "on sale at eleven", nil, cfg(2)),
			entry(90*time.Second, "revoke", "two accounts", map[string]any{"user": "w1", "userEmail": "w1@example.com", "status": "waiting"},
				map[string]any{"user": "w1", "userEmail": "w1@example.com", "status": "expired", "holdsReleased": 0}),
			entry(3*time.Minute, "pause", "payment provider down", cfg(2), paused(2)),
			entry(4*time.Minute, "resume", "payments are back", paused(2), cfg(2)),
			entry(305*time.Second, "configure", "a third box office", cfg(2), cfg(3)),
			entry(440*time.Second, "pause", "checking the hall", cfg(3), paused(3)),
		},
		"minutes": minutes,
	}
	// Through JSON, so that numbers compare as JSON numbers.
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wantJSON any
	if err := json.Unmarshal(raw, &wantJSON); err != nil {
		t.Fatal(err)
	}
	diff(t, "", got, wantJSON)
}

// diff reports every path where got and want differ.
func diff(t *testing.T, path string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: got %v, want an object", path, got)
			return
		}
		for k, v := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s.%s: missing, want %v", path, k, v)
				continue
			}
			diff(t, path+"."+k, g[k], v)
		}
		for k, v := range g {
			if _, ok := w[k]; !ok {
				t.Errorf("%s.%s = %v is not checked", path, k, v)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %d items", path, got, len(w))
			return
		}
		for i := range w {
			diff(t, fmt.Sprintf("%s[%d]", path, i), g[i], w[i])
		}
	default:
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
}

// On a phone the report scrolls only inside its wide tables, never the
// page, and its charts' axis text stays readable; at laptop width too. The
// screenshots stay in web/test-results/screenshots for a person to look
// at. Real Chromium, through Playwright (web/scripts/page-fit.mjs).
func TestTheReportFitsAPhone(t *testing.T) {
	fs := firelocktest.NewClient(t)
	writeFixture(t, fs)
	r, err := Build(context.Background(), fs, screening, now)
	if err != nil {
		t.Fatal(err)
	}
	root, err := emulators.ProjectRoot()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shots := filepath.Join(root, "web", "test-results", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join("scripts", "page-fit.mjs"), page, filepath.Join(shots, "report"))
	cmd.Dir = filepath.Join(root, "web")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("page-fit.mjs: %v\n%s", err, stderr)
	}
	var fit map[string]struct {
		Overflow       float64  `json:"overflow"`
		SmallestAxisPx *float64 `json:"smallestAxisPx"`
	}
	if err := json.Unmarshal(out, &fit); err != nil {
		t.Fatalf("page-fit.mjs said %q: %v", out, err)
	}
	for _, width := range []string{"360", "1280"} {
		w := fit[width]
		if w.Overflow > 0 {
			t.Errorf("at %s px the page scrolls sideways by %.0f px", width, w.Overflow)
		}
		if w.SmallestAxisPx == nil || *w.SmallestAxisPx < 10 {
			t.Errorf("at %s px the charts' axis text is drawn at %v px, want 10 or more", width, w.SmallestAxisPx)
		}
	}
}
