package main

// Issue #48, item 9: the command line's defects, each pinned by a test
// that failed before its fix.

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
)

// The text of sale report shows what its JSON and page have: the money
// (revenue, refunds, what stays) and the passes an operator revoked; and
// its time in line is the waits' p50 and p90, to the tenth of a second:
// two buyers who waited 1.1 s and 9.8 s show 1.1 s / 9.8 s.
func TestReportTextShowsMoneyRevokedAndWaits(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	c.screening("s1", 10)
	opensAt := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	if _, err := c.db.Collection(booking.Screenings).Doc("s1").Update(ctx, []firestore.Update{{Path: "sale", Value: map[string]any{
		"opensAt": opensAt, "admitPerMinute": int64(60), "maxActive": int64(2)}}}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return opensAt.Add(d) }
	set := func(path string, v map[string]any) {
		t.Helper()
		if _, err := c.db.Doc(path).Set(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	place := func(uid string, joined time.Duration, v map[string]any) {
		v["uid"], v["screeningId"], v["joinedAt"], v["order"], v["shard"] = uid, "s1", at(joined), uid, 0
		set(sale.Queue+"/"+sale.QueueID("s1", uid), v)
	}
	// quick waited 1.1 s and booked; slow waited 9.8 s, and an operator
	// ended its pass; bot was revoked while it waited.
	place("quick", time.Minute, map[string]any{"status": sale.StatusDone,
		"admittedAt": at(time.Minute + 1100*time.Millisecond), "passUntil": at(2 * time.Minute)})
	place("slow", 2*time.Minute, map[string]any{"status": sale.StatusExpired,
		"admittedAt": at(2*time.Minute + 9800*time.Millisecond), "passUntil": at(3 * time.Minute), "revokedAt": at(150 * time.Second)})
	place("bot", 3*time.Minute, map[string]any{"status": sale.StatusExpired, "revokedAt": at(200 * time.Second)})
	set("bookings/b1", map[string]any{"uid": "quick", "screeningId": "s1", "seats": []string{"A1", "A2"}, "status": "confirmed", "holdId": "h1", "createdAt": at(90 * time.Second)})
	pay := func(holdID, status string, amount int64, extra map[string]any) {
		v := map[string]any{"holdId": holdID, "screeningId": "s1", "amount": amount, "currency": "eur", "status": status, "createdAt": at(80 * time.Second)}
		for k, x := range extra {
			v[k] = x
		}
		set(payment.Payments+"/"+holdID, v)
	}
	pay("h1", payment.StatusPaid, 2500, map[string]any{"paidAt": at(85 * time.Second)})
	pay("h2", payment.StatusRefunded, 1250, map[string]any{"paidAt": at(140 * time.Second), "refundedAt": at(160 * time.Second), "refundReason": payment.ReasonReleased})
	pay("h3", payment.StatusExpired, 1250, nil)

	var r struct {
		Summary struct {
			WaitP50        float64 `json:"waitP50Seconds"`
			WaitP90        float64 `json:"waitP90Seconds"`
			PassesRevoked  int     `json:"passesRevoked"`
			RevokedWaiting int     `json:"revokedWaiting"`
			Money          struct {
				Revenue, Refunds, Net int64
			} `json:"money"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(c.must("sale", "report", "s1", "-o", "json")), &r); err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.WaitP50 != 1.1 || s.WaitP90 != 9.8 || s.PassesRevoked != 1 || s.RevokedWaiting != 1 ||
		s.Money.Revenue != 3750 || s.Money.Refunds != 1250 || s.Money.Net != 2500 {
		t.Fatalf("sale report -o json: %+v; want waits 1.1 / 9.8 s, 1 pass revoked, 1 revoked while waiting, 37.50 in, 12.50 back", s)
	}
	out := c.must("sale", "report", "s1")
	for _, want := range []string{
		`(?m)^time in line p50 / p90\s+1\.1 s / 9\.8 s\b`,
		`(?m)^passes\s+2: 1 ended by a booking, 0 ran out, 1 revoked, 0 live$`,
		`(?m)^revoked while waiting\s+1$`,
		`(?m)^revenue\s+` + regexp.QuoteMeta(payment.Format(s.Money.Revenue, "eur")) + ` \(2 payments\)$`,
		`(?m)^refunds\s+` + regexp.QuoteMeta(payment.Format(s.Money.Refunds, "eur")) + ` \(1 payment\)$`,
		`(?m)^takings, after refunds\s+` + regexp.QuoteMeta(payment.Format(s.Money.Net, "eur")) + `\b`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("sale report's text has no line matching %s:\n%s", want, out)
		}
	}
}

// sale report of a screening without a sale says there is none, as sale
// status does, and exits 1 having printed and written nothing.
func TestReportOfAScreeningWithoutASale(t *testing.T) {
	c := newCLI(t)
	c.screening("free", 10)
	page := filepath.Join(t.TempDir(), "free.html")
	code, out, errOut := c.run("sale", "report", "free", "--html", page)
	_, _, statusErr := c.run("sale", "status", "free")
	want := strings.TrimPrefix(statusErr, "firelock sale status: ")
	if code != exitRefused || out != "" || !strings.Contains(errOut, "has no sale") || strings.TrimPrefix(errOut, "firelock sale report: ") != want {
		t.Fatalf("sale report of a screening without a sale: exit %d, stdout %q, stderr %q; want 1, nothing printed, saying %q", code, out, errOut, want)
	}
	if _, err := os.Stat(page); !os.IsNotExist(err) {
		t.Fatalf("sale report of a screening without a sale wrote %s (%v)", page, err)
	}
	if code, out, _ := c.run("sale", "report", "free", "-o", "json"); code != exitRefused || out != "" {
		t.Fatalf("sale report -o json of a screening without a sale: exit %d, %q", code, out)
	}
}

// A pause needs a reason, as the console asks for one (the log keeps it
// for whoever resumes): without --reason, or with a blank one, it is a
// usage error naming --reason, and nothing is paused or logged.
func TestPauseNeedsAReason(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	for _, args := range [][]string{{"sale", "pause", "s1"}, {"sale", "pause", "s1", "--reason", "  "}, {"sale", "pause", "--reason=", "s1"}} {
		if code, out, errOut := c.run(args...); code != exitUsage || out != "" || !strings.Contains(errOut, "--reason") {
			t.Errorf("firelock %s: exit %d, stdout %q, stderr %q; want 2 naming --reason", strings.Join(args, " "), code, out, errOut)
		}
	}
	if code, _, _, _ := c.exe(time.Minute, []string{"GOOGLE_CLOUD_PROJECT=" + c.project}, "sale", "pause", "s1"); code != exitUsage {
		t.Errorf("the built program's sale pause without --reason: exit %d, want 2", code)
	}
	if out := c.must("sale", "status", "s1"); strings.Contains(out, "paused") {
		t.Fatalf("a pause without a reason paused the sale:\n%s", out)
	}
	entries, err := c.db.Collection(sale.Log).Doc("s1").Collection("entries").Where("action", "==", sale.ActionPause).Documents(ctx).GetAll()
	if err != nil || len(entries) != 0 {
		t.Fatalf("pauses logged without a reason: %d (%v)", len(entries), err)
	}
	c.must("sale", "pause", "s1", "--reason", "payments down")
	c.must("sale", "resume", "s1") // a resume's reason stays optional
}

// freeAddr is a local address where nothing listens: a dial is refused.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A stopped emulator (nothing listens at its address, so the connection
// is refused) is said at once, naming the address and the variable it
// came from, as kubectl does ("The connection to the server
// localhost:8080 was refused - did you specify the right host or
// port?"), rather than after --timeout (30 s). The bound of 10 s is far
// from both.
func TestStoppedEmulatorIsSaidAtOnce(t *testing.T) {
	c := newCLI(t)
	firestoreAt, authAt := freeAddr(t), freeAddr(t)
	check := func(name, addr, variable string, code int, errOut string, took time.Duration) {
		t.Helper()
		if code != exitRefused || took > 10*time.Second || !strings.Contains(errOut, "connection to "+addr+" was refused") ||
			!strings.Contains(errOut, variable) {
			t.Errorf("%s: exit %d after %v, stderr %q; want 1 well within the 30 s --timeout, saying the connection to %s (%s) was refused",
				name, code, took.Round(time.Millisecond), errOut, addr, variable)
		}
	}
	for _, args := range [][]string{{"sale", "status", "s1"}, {"locks", "list"}, {"sale", "watch", "s1"}} {
		code, _, errOut, took := c.exe(time.Minute, []string{"FIRESTORE_EMULATOR_HOST=" + firestoreAt}, args...)
		check("firelock "+strings.Join(args, " ")+" with FIRESTORE_EMULATOR_HOST="+firestoreAt, firestoreAt, "FIRESTORE_EMULATOR_HOST", code, errOut, took)
	}
	// The variable came from ./.firelock-local.env, which make run wrote.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".firelock-local.env"), []byte("export FIRESTORE_EMULATOR_HOST='"+firestoreAt+"'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut, took := c.exeIn(dir, time.Minute, []string{"FIRESTORE_EMULATOR_HOST="}, "sale", "status", "s1")
	check("firelock sale status beside a .firelock-local.env", firestoreAt, "FIRESTORE_EMULATOR_HOST in ./.firelock-local.env", code, errOut, took)
	// The Auth emulator stopped, Firestore's still up.
	code, _, errOut, took = c.exe(time.Minute, []string{"FIREBASE_AUTH_EMULATOR_HOST=" + authAt}, "operators", "grant", "olive@example.com")
	check("firelock operators grant with FIREBASE_AUTH_EMULATOR_HOST="+authAt, authAt, "FIREBASE_AUTH_EMULATOR_HOST", code, errOut, took)
	// Firestore's stopped, Auth's up: operators talk to Auth only, and
	// its answer comes through.
	code, _, errOut, _ = c.exe(time.Minute, []string{"FIRESTORE_EMULATOR_HOST=" + firestoreAt}, "operators", "grant", "nobody-"+strings.ToLower(c.project)+"@example.com")
	if code != exitRefused || !strings.Contains(errOut, "no Firebase Auth user") {
		t.Errorf("operators grant with Firestore's emulator stopped: exit %d, %q; want Auth's answer, no Firebase Auth user", code, errOut)
	}
}
