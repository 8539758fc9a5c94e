package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/sale"
)

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m, firelocktest.Firestore, firelocktest.Auth)) }

// cli runs the command line in-process for a test's own project.
type cli struct {
	t       *testing.T
	project string
	db      *firestore.Client
}

func newCLI(t *testing.T) *cli {
	project := firelocktest.ProjectID(t)
	t.Setenv("GOOGLE_CLOUD_PROJECT", project)
	return &cli{t: t, project: project, db: firelocktest.NewClientFor(t, project)}
}

// run runs firelock with args: exit code, stdout, stderr.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func (c *cli) must(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != exitOK {
		c.t.Fatalf("firelock %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (c *cli) screening(id string, seats int) {
	c.t.Helper()
	_, err := c.db.Collection(booking.Screenings).Doc(id).Set(context.Background(), booking.Screening{
		Title: "Nosferatu", StartsAt: time.Now().Add(24 * time.Hour), Rows: []string{"A"}, SeatsPerRow: seats})
	if err != nil {
		c.t.Fatal(err)
	}
}

// Every verb answers -h with its usage, and a malformed command line exits 2
// having written nothing.
func TestUsageAndBadInput(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	for _, args := range [][]string{
		{"sale", "configure", "-h"}, {"sale", "pause", "-h"}, {"sale", "resume", "-h"}, {"sale", "close", "-h"},
		{"sale", "revoke", "-h"}, {"sale", "status", "-h"}, {"sale", "watch", "-h"}, {"sale", "report", "-h"},
		{"locks", "list", "-h"}, {"locks", "show", "-h"}, {"locks", "release", "-h"},
		{"operators", "grant", "-h"}, {"operators", "revoke", "-h"}, {"-h"}, {"sale", "-h"},
		{"locks", "-h"}, {"operators", "-h"}, {"completion", "-h"}, {"completion", "bash", "-h"}, {"help"},
	} {
		if code, out, errOut := c.run(args...); code != exitOK || strings.Count(out, "Usage:") != 1 || errOut != "" {
			t.Errorf("firelock %s: exit %d, stdout %q, stderr %q; want the usage once, on stdout", strings.Join(args, " "), code, out, errOut)
		}
	}
	for _, c2 := range []struct {
		args []string
		says string
	}{
		{nil, ""},
		{[]string{"shop"}, "unknown command"},
		{[]string{"sale"}, ""},
		{[]string{"sale", "explode", "s1"}, "unknown verb"},
		{[]string{"sale", "pause"}, "takes SCREENING"},
		{[]string{"sale", "pause", "s1", "s2"}, "takes SCREENING"},
		{[]string{"sale", "pause", "s1", "--reasn", "x"}, "unknown flag: --reasn"},
		{[]string{"sale", "status", "s1", "-o", "xml"}, "want table or json"},
		{[]string{"sale", "configure", "s1"}, "say what to set"},
		{[]string{"sale", "configure", "s1", "--max-active", "ten"}, "want a whole number"},
		{[]string{"sale", "configure", "s1", "--max-active", "1.5"}, "want a whole number"},
		{[]string{"sale", "configure", "s1", "--opens-at", "tomorrow"}, "want RFC 3339"},
		{[]string{"sale", "watch", "s1", "--for", "-1s"}, "want a duration"},
		{[]string{"locks", "show", "locks"}, "not a lease's path"},
		{[]string{"locks", "release", "locks/k", "--reason", "x", "--token", "1"}, "say --force"},
		{[]string{"locks", "release", "locks/k", "--force", "--token", "1"}, "--reason"},
		{[]string{"locks", "release", "locks/k", "--force", "--reason", "x"}, "--token"},
		{[]string{"operators", "grant", "olive"}, "not an email"},
	} {
		code, _, errOut := c.run(c2.args...)
		if code != exitUsage || !strings.Contains(errOut, c2.says) {
			t.Errorf("firelock %s: exit %d, stderr %q; want 2 saying %q", strings.Join(c2.args, " "), code, errOut, c2.says)
		}
	}
	if snap, _ := c.db.Collection(booking.Screenings).Doc("s1").Get(context.Background()); snap.Data()["sale"] != nil {
		t.Fatal("a refused command line configured a sale")
	}
}

// The sale verbs run CONTRACT §8's actions: each is logged with the command
// line's identity, a refused one changes and logs nothing (exit 1, the
// message naming the field, value and type), and status shows the result.
func TestSaleVerbs(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5", "--reason", "on sale friday", "--as", "olive@example.com")
	var st saleStatus
	if err := json.Unmarshal([]byte(c.must("sale", "status", "s1", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Sale["admitPerMinute"] != float64(30) || st.Sale["maxActive"] != float64(5) || st.Title != "Nosferatu" {
		t.Fatalf("status after configure: %+v", st)
	}
	code, _, errOut := c.run("sale", "configure", "s1", "--max-active", "0")
	if code != exitRefused || !strings.Contains(errOut, "sale.maxActive must be a whole number from 1 to 100000, not the number 0") {
		t.Fatalf("configure --max-active 0: exit %d, %q", code, errOut)
	}
	if out := c.must("sale", "pause", "s1", "--reason", "payments down"); !strings.Contains(out, "paused the sale of s1: it is paused") {
		t.Fatalf("pause: %q", out)
	}
	if out := c.must("sale", "status", "s1"); !strings.Contains(out, "paused by an operator") {
		t.Fatalf("status after a pause does not say so: %q", out)
	}
	if out := c.must("sale", "pause", "s1", "--reason", "still down"); !strings.Contains(out, "nothing to change") {
		t.Fatalf("pause again: %q", out)
	}
	c.must("sale", "resume", "s1")
	c.must("sale", "close", "s1", "--reason", "the projector broke")
	if code, _, errOut := c.run("sale", "pause", "s1", "--reason", "x"); code != exitRefused || !strings.Contains(errOut, "closed") {
		t.Fatalf("pause after close: exit %d, %q", code, errOut)
	}
	if code, _, errOut := c.run("sale", "pause", "nope", "--reason", "x"); code != exitRefused || !strings.Contains(errOut, "no such screening") {
		t.Fatalf("pause of a screening that does not exist: exit %d, %q", code, errOut)
	}
	entries, err := c.db.Collection(sale.Log).Doc("s1").Collection("entries").OrderBy("at", firestore.Asc).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Data()["action"].(string))
		if uid, _ := e.Data()["uid"].(string); !strings.HasPrefix(uid, "cli:") {
			t.Errorf("log entry by %q, want the command line's cli:user@host", uid)
		}
	}
	if got := strings.Join(actions, ","); got != "configure,pause,resume,close" {
		t.Fatalf("logged %s, want configure,pause,resume,close", got)
	}
	if entries[0].Data()["email"] != "olive@example.com" || entries[0].Data()["reason"] != "on sale friday" {
		t.Fatalf("the first entry: %v", entries[0].Data())
	}
}

// revoke takes an email or a uid.
func TestSaleRevokeByEmail(t *testing.T) {
	c := newCLI(t)
	// Users live in the Auth emulator's project: the sale goes there too
	// (a screening of its own).
	t.Setenv("GOOGLE_CLOUD_PROJECT", emulators.AuthProject)
	c.db = firelocktest.NewClientFor(t, emulators.AuthProject)
	s1 := "revoke-" + c.project[5:]
	c.screening(s1, 10)
	c.must("sale", "configure", s1, "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	email := "rita-" + strings.ToLower(c.project[5:]) + "@example.com"
	_, uid, err := emulators.SignIn(email, "secret-rita")
	if err != nil {
		t.Fatal(err)
	}
	svc := sale.New(c.db)
	if _, _, err := svc.Join(context.Background(), uid, s1); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := c.run("sale", "revoke", s1, "nobody-at-all@example.com"); code != exitRefused || !strings.Contains(errOut, "no Firebase Auth user") {
		t.Fatalf("revoke of an unknown email: exit %d, %q", code, errOut)
	}
	c.must("sale", "revoke", s1, email, "--reason", "bot")
	place, err := svc.Pass(s1, uid).Get(context.Background())
	if err != nil || place.Data()["status"] != sale.StatusExpired {
		t.Fatalf("the revoked place: %v, %v", place.Data(), err)
	}
}

// locks list, show and release: a forced release of the grant show
// displayed ends it and logs it; a token that is not the holder's is refused.
func TestLockVerbs(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	l, err := lock.New(c.db, "locks", lock.WithLeaseDuration(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.TryAcquire(ctx, "admit-onsale")
	if err != nil {
		t.Fatal(err)
	}
	var list []lock.Info
	if err := json.Unmarshal([]byte(c.must("locks", "list", "--prefix", "admit-", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Path != "locks/admit-onsale" || list[0].Token != held.Token() {
		t.Fatalf("locks list: %+v", list)
	}
	out := c.must("locks", "show", "locks/admit-onsale")
	m := regexp.MustCompile(`--token (\d+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, held.Owner()) {
		t.Fatalf("locks show: %q", out)
	}
	if code, _, errOut := c.run("locks", "release", "locks/admit-onsale", "--force", "--reason", "stuck", "--token", "12345"); code != exitRefused || !strings.Contains(errOut, "changed hands") {
		t.Fatalf("release of another grant: exit %d, %q", code, errOut)
	}
	if out := c.must("locks", "release", "locks/admit-onsale", "--force", "--reason", "the admitter hangs", "--token", m[1], "--as", "olive@example.com"); !strings.Contains(out, "released locks/admit-onsale") {
		t.Fatalf("release: %q", out)
	}
	err = c.db.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error { return held.Guard(tx) })
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the former holder's Guard after the release: %v", err)
	}
	logs, err := c.db.Collection(lock.LockLog).Documents(ctx).GetAll()
	if err != nil || len(logs) != 1 || logs[0].Data()["reason"] != "the admitter hangs" || !strings.Contains(logs[0].Data()["by"].(string), "olive@example.com") {
		t.Fatalf("lockLog: %d entries %v", len(logs), err)
	}
	if code, _, errOut := c.run("locks", "show", "locks/admit-onsale"); code != exitRefused || !strings.Contains(errOut, "no lease") {
		t.Fatalf("show after the release: exit %d, %q", code, errOut)
	}
	if out := c.must("locks", "list"); !strings.Contains(out, "no leases") {
		t.Fatalf("list after the release: %q", out)
	}
}

// operators grant and revoke set and clear the custom claim, keeping others.
func TestOperatorsGrantAndRevoke(t *testing.T) { testRoleGrantAndRevoke(t, "operators", "operator") }

// scanners grant and revoke do the same with the claim scanner (CONTRACT
// §13), and leave the operator claim alone.
func TestScannersGrantAndRevoke(t *testing.T) { testRoleGrantAndRevoke(t, "scanners", "scanner") }

func testRoleGrantAndRevoke(t *testing.T, group, claim string) {
	c := newCLI(t)
	t.Setenv("GOOGLE_CLOUD_PROJECT", emulators.AuthProject)
	ctx := context.Background()
	email := group + "-" + strings.ToLower(c.project[5:]) + "@example.com"
	_, uid, err := emulators.SignIn(email, "secret-olive")
	if err != nil {
		t.Fatal(err)
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.SetCustomUserClaims(ctx, uid, map[string]any{"tier": "gold"}); err != nil {
		t.Fatal(err)
	}
	if out := c.must(group, "grant", email); !strings.Contains(out, "granted the "+claim+" claim of "+email) {
		t.Errorf("%s grant says %q", group, out)
	}
	u, err := ac.GetUser(ctx, uid)
	if err != nil || u.CustomClaims[claim] != true || u.CustomClaims["tier"] != "gold" || len(u.CustomClaims) != 2 {
		t.Fatalf("claims after grant: %v (%v)", u.CustomClaims, err)
	}
	if out := c.must(group, "list"); !strings.Contains(out, email+"  "+uid) {
		t.Errorf("%s list after the grant says %q, want %s and its uid", group, out, email)
	}
	c.must(group, "revoke", email)
	if u, _ := ac.GetUser(ctx, uid); u.CustomClaims[claim] != nil || u.CustomClaims["tier"] != "gold" {
		t.Fatalf("claims after revoke: %v", u.CustomClaims)
	}
	if out := c.must(group, "list", "-o", "json"); strings.Contains(out, email) || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Errorf("%s list -o json after the revoke says %q, want a JSON list without %s", group, out, email)
	}
	if code, _, errOut := c.run(group, "grant", "not-an-email"); code != exitUsage || !strings.Contains(errOut, "not an email") {
		t.Errorf("grant to not-an-email: exit %d, %q", code, errOut)
	}
	if code, _, errOut := c.run(group, "grant", "nobody-"+c.project+"@example.com"); code != exitRefused || !strings.Contains(errOut, "no Firebase Auth user") {
		t.Fatalf("grant to nobody: exit %d, %q", code, errOut)
	}
}

// The report's figures match a small sale set up by hand; its page is
// self-contained (inline SVG, no script, nothing fetched); its CSVs parse.
func TestReport(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	c.screening("s1", 10)
	opensAt := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	if _, err := c.db.Collection(booking.Screenings).Doc("s1").Update(ctx, []firestore.Update{{Path: "sale", Value: map[string]any{
		"opensAt": opensAt, "admitPerMinute": int64(60), "maxActive": int64(2)}}}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) *time.Time { t := opensAt.Add(d); return &t }
	places := []struct {
		uid, status string
		joined      time.Duration
		admitted    *time.Time
	}{
		{"early", sale.StatusDone, -time.Minute, at(10 * time.Second)},       // waited 10 s from the opening
		{"late", sale.StatusExpired, time.Minute, at(3 * time.Minute)},       // waited 2 min, booked nothing
		{"later", sale.StatusAdmitted, 2 * time.Minute, at(6 * time.Minute)}, // waited 4 min
		{"waiting", sale.StatusWaiting, 3 * time.Minute, nil},
	}
	for i, p := range places {
		d := map[string]any{"uid": p.uid, "screeningId": "s1", "status": p.status, "joinedAt": opensAt.Add(p.joined), "order": string(rune('a' + i)), "shard": 0}
		if p.admitted != nil {
			d["admittedAt"], d["passUntil"] = *p.admitted, p.admitted.Add(time.Minute)
		}
		if _, err := c.db.Collection(sale.Queue).Doc(sale.QueueID("s1", p.uid)).Set(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.db.Collection(booking.Bookings).Doc("b1").Set(ctx, map[string]any{"uid": "early", "screeningId": "s1", "seats": []string{"A1", "A2"}, "status": "confirmed", "createdAt": *at(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	for i, m := range []sale.Minute{{Waiting: 3, Admissions: 1, Active: 1, SeatsLeft: 8}, {Waiting: 2, Admissions: 1, Active: 1, SeatsLeft: 8}} {
		m.At = opensAt.Add(time.Duration(i+1) * time.Minute)
		if _, err := c.db.Collection(sale.Stats).Doc("s1").Collection("minutes").Doc(m.At.Format("200601021504")).Set(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var r struct {
		Summary struct {
			Sold, Seats, Places, Admitted, Booked, ExpiredUnused int
			Conversion                                           float64
			WaitP50, WaitP90                                     float64 `json:"-"`
		} `json:"summary"`
		Minutes []json.RawMessage `json:"minutes"`
	}
	// The minutes run from the first record's (the early joiner's) to the
	// report's own (now), whichever minute the command runs in.
	first := opensAt.Add(-time.Minute).Truncate(time.Minute)
	minutesAt := func() int { return int(time.Now().UTC().Truncate(time.Minute).Sub(first)/time.Minute) + 1 }
	minutesBefore := minutesAt()
	out := c.must("sale", "report", "s1", "--html", page, "--csv", filepath.Join(dir, "csv"), "-o", "json")
	minutesAfter := minutesAt()
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var waits struct {
		Summary struct {
			WaitP50 float64 `json:"waitP50Seconds"`
			WaitMax float64 `json:"waitMaxSeconds"`
		} `json:"summary"`
	}
	json.Unmarshal([]byte(out), &waits)
	s := r.Summary
	// Two passes ran out unused: late's, and later's (admitted, its
	// passUntil past).
	if s.Sold != 2 || s.Seats != 10 || s.Places != 4 || s.Admitted != 3 || s.Booked != 1 || s.ExpiredUnused != 2 ||
		(len(r.Minutes) != minutesBefore && len(r.Minutes) != minutesAfter) {
		t.Fatalf("report summary %+v, %d minutes (want %d)", s, len(r.Minutes), minutesBefore)
	}
	if waits.Summary.WaitP50 != 120 || waits.Summary.WaitMax != 240 {
		t.Fatalf("time in line: p50 %v s, max %v s; want 120 and 240", waits.Summary.WaitP50, waits.Summary.WaitMax)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"waiting", "admissions", "active", "seats-left"} {
		if !strings.Contains(string(html), `data-chart="`+name+`"><figcaption>`) {
			t.Errorf("the page has no %s chart", name)
		}
	}
	if n := strings.Count(string(html), "<svg "); n != 5 { // joins beside admissions since #38
		t.Errorf("the page has %d inline SVG charts, want 5", n)
	}
	if regexp.MustCompile(`(?i)<script|<link|<img|src=|url\(|@import|href="http`).Match(html) {
		t.Error("the page fetches something: it must be self-contained")
	}
	for name, rows := range map[string]int{"minutes.csv": len(r.Minutes) + 1, "admissions.csv": 5, "bookings.csv": 2} {
		f, err := os.Open(filepath.Join(dir, "csv", name))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) != rows {
			t.Errorf("%s: %d rows (%v), want %d with the header", name, len(recs), err, rows)
		}
	}
}

// watch shows the sale's numbers as the admitter publishes them.
func TestWatch(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	if _, err := c.db.Collection(sale.Sales).Doc("s1").Set(ctx, map[string]any{"state": "scheduled", "waiting": int64(7), "admitted": int64(0), "active": int64(0), "seatsLeft": int64(10), "updatedAt": time.Now()}); err != nil {
		t.Fatal(err)
	}
	out := c.must("sale", "watch", "s1", "--for", "1500ms")
	if !strings.Contains(out, "scheduled") || !regexp.MustCompile(`waiting\s+7`).MatchString(out) || !regexp.MustCompile(`seats left\s+10`).MatchString(out) {
		t.Fatalf("watch: %q", out)
	}
}
