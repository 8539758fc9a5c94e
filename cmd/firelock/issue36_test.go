package main

// Issue #36, items 9-16: the command line's defects, each pinned by a test
// that failed before its fix.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/lock"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// firelockBinary builds the command once per test binary: exit codes are
// the process's own only when it runs as a built program (go run replaces
// them).
func firelockBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "firelock-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "firelock")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// exe runs the built command with env added to the test's environment:
// exit code, stdout, stderr, and how long it took. It is killed after
// limit (exit -1).
func (c *cli) exe(limit time.Duration, env []string, args ...string) (int, string, string, time.Duration) {
	c.t.Helper()
	return c.exeIn(c.t.TempDir(), limit, env, args...) // no ./.firelock-local.env there
}

// exeIn is exe in the directory dir.
func (c *cli) exeIn(dir string, limit time.Duration, env []string, args ...string) (int, string, string, time.Duration) {
	c.t.Helper()
	bin := firelockBinary(c.t) // built once, before the clock starts: a loaded machine took 20 s for it
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String(), took
	case ctx.Err() != nil:
		return -1, out.String(), errb.String(), took
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String(), took
	}
	c.t.Fatal(err)
	return 0, "", "", 0
}

// Item 9: -o is a flag of the commands that honour it only; elsewhere it is
// a usage error, not silently ignored.
func TestOutputFlagOnlyWhereHonoured(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	for _, args := range [][]string{
		{"sale", "watch", "s1", "--for", "10ms", "-o", "json"},
		{"locks", "release", "locks/k", "--force", "--reason", "x", "--token", "1", "-o", "json"},
		{"operators", "grant", "olive@example.com", "-o", "json"},
		{"operators", "revoke", "olive@example.com", "-o", "json"},
		{"sale", "status", "s1", "-o", "yaml"},
		{"sale", "pause", "s1", "-o", "xml"},
	} {
		if code, out, errOut := c.run(args...); code != exitUsage || out != "" {
			t.Errorf("firelock %s: exit %d, stdout %q, stderr %q; want exit 2 and nothing done", strings.Join(args, " "), code, out, errOut)
		}
	}
	if out := c.must("sale", "pause", "s1", "--reason", "x", "-o", "json"); !strings.Contains(out, `"state": "paused"`) {
		t.Fatalf("sale pause -o json: %q", out)
	}
}

// Item 10: --owner names a grant, not an owner: a lease granted again to
// the same owner after `locks show` is left alone.
func TestReleaseByOwnerLeavesANewGrantOfTheSameOwner(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	ref := c.db.Collection("mutex_critical_data").Doc("k")
	grant := func(at time.Time) {
		if _, err := ref.Set(ctx, map[string]any{lock.FieldOwner: "uid-1", lock.FieldAcquiredAt: at, lock.FieldRenewedAt: at, lock.FieldLeaseSeconds: int64(600)}); err != nil {
			t.Fatal(err)
		}
	}
	first := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	grant(first)
	var seen lock.Info
	if err := json.Unmarshal([]byte(c.must("locks", "show", "mutex_critical_data/k", "-o", "json")), &seen); err != nil {
		t.Fatal(err)
	}
	shown := c.must("locks", "show", "mutex_critical_data/k")
	m := regexp.MustCompile(`firelock locks release (\S+) --force --reason "\.\.\." (.*)\n`).FindStringSubmatch(shown)
	if m == nil || !strings.Contains(m[2], "--owner uid-1") {
		t.Fatalf("locks show does not say how to end the grant: %q", shown)
	}
	// The client released and took the lease again: same owner, a new grant.
	if _, err := ref.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	grant(first.Add(30 * time.Second))
	args := append([]string{"locks", "release", "mutex_critical_data/k", "--force", "--reason", "stuck"}, strings.Fields(m[2])...)
	code, _, errOut := c.run(args...)
	if code != exitRefused || !strings.Contains(errOut, "changed hands") {
		t.Fatalf("release of the grant show displayed, after a new grant to the same owner: exit %d, %q; want 1", code, errOut)
	}
	after, err := lock.Inspect(ctx, c.db, "mutex_critical_data/k")
	if err != nil || !after.AcquiredAt.Equal(first.Add(30*time.Second)) {
		t.Fatalf("the new grant after a refused release: %+v, %v", after, err)
	}
	// --owner alone no longer names a grant.
	if code, _, errOut := c.run("locks", "release", "mutex_critical_data/k", "--force", "--reason", "stuck", "--owner", "uid-1"); code != exitUsage {
		t.Fatalf("release --owner without the grant's time: exit %d, %q; want 2", code, errOut)
	}
	// The grant show displays now is released.
	shown = c.must("locks", "show", "mutex_critical_data/k")
	m = regexp.MustCompile(`firelock locks release (\S+) --force --reason "\.\.\." (.*)\n`).FindStringSubmatch(shown)
	args = append([]string{"locks", "release", "mutex_critical_data/k", "--force", "--reason", "stuck"}, strings.Fields(m[2])...)
	if out := c.must(args...); !strings.Contains(out, "released mutex_critical_data/k") {
		t.Fatalf("release: %q", out)
	}
	if snap, err := ref.Get(ctx); err == nil || snap.Exists() {
		t.Fatalf("the lease is still there after its release: %v", err)
	}
}

// Item 11: a Firestore that never answers costs --timeout, not forever,
// and a --prefix that is not UTF-8 is a usage error, not a hang.
func TestTimeoutWhenFirestoreDoesNotAnswer(t *testing.T) {
	c := newCLI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := ln.Accept() // and never a byte back
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	env := []string{"FIRESTORE_EMULATOR_HOST=" + ln.Addr().String()}
	for _, args := range [][]string{
		{"sale", "status", "s1"},
		{"locks", "list"},
		{"locks", "show", "locks/k"},
		{"sale", "pause", "s1", "--reason", "payments down"},
	} {
		args = append(args, "--timeout", "2s")
		code, _, errOut, took := c.exe(20*time.Second, env, args...)
		if code != exitRefused || took > 10*time.Second || !strings.Contains(errOut, "did not answer within 2s") {
			t.Errorf("firelock %s against a Firestore that never answers: exit %d after %v, %q; want 1 within 10 s, saying so",
				strings.Join(args, " "), code, took.Round(time.Millisecond), errOut)
		}
	}
	if code, _, errOut, took := c.exe(20*time.Second, nil, "locks", "list", "--prefix", "admit-\xff"); code != exitUsage || took > 10*time.Second {
		t.Errorf("locks list --prefix (not UTF-8): exit %d after %v, %q; want 2 at once", code, took.Round(time.Millisecond), errOut)
	}
	if code, _, errOut := c.run("locks", "list", "--timeout", "0s"); code != exitUsage || !strings.Contains(errOut, "--timeout") {
		t.Errorf("--timeout 0s: exit %d, %q; want 2", code, errOut)
	}
}

// Item 12: a whole number out of range is refused by the sale (exit 1),
// however many digits it has, as docs/cli.md says.
func TestHugeWholeNumberIsRefusedBySale(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	for _, n := range []string{"99999999999999999999", "100001", "-99999999999999999999"} {
		code, _, errOut := c.run("sale", "configure", "s1", "--max-active="+n)
		if code != exitRefused || !strings.Contains(errOut, "sale.maxActive must be a whole number from 1 to 100000, not the number") {
			t.Errorf("--max-active %s: exit %d, %q; want 1 with the sale's message", n, code, errOut)
		}
	}
	var st saleStatus
	if err := json.Unmarshal([]byte(c.must("sale", "status", "s1", "-o", "json")), &st); err != nil || st.Sale["maxActive"] != float64(5) {
		t.Fatalf("maxActive after refused configures: %v (%v)", st.Sale["maxActive"], err)
	}
}

// Item 13: the built program's exit codes: 0 done, 1 refused, 2 usage.
func TestExitCodesOfTheBinary(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	env := []string{"GOOGLE_CLOUD_PROJECT=" + c.project}
	for _, tc := range []struct {
		code int
		args []string
	}{
		{0, []string{"-h"}},
		{0, []string{"sale", "status", "s1"}},
		{0, []string{"sale", "pause", "s1", "--reason", "x", "-o", "json"}},
		{1, []string{"sale", "pause", "nope", "--reason", "x"}},
		{1, []string{"sale", "configure", "s1", "--max-active", "0"}},
		{1, []string{"locks", "show", "locks/none"}},
		{2, nil},
		{2, []string{"shop"}},
		{2, []string{"sale", "pause"}},
		{2, []string{"sale", "explode", "s1"}},
		{2, []string{"sale", "pause", "s1", "--reasn", "x"}},
		{2, []string{"sale", "status", "s1", "-o", "xml"}},
		{2, []string{"sale", "configure", "s1", "--max-active", "ten"}},
	} {
		if code, out, errOut, _ := c.exe(time.Minute, env, tc.args...); code != tc.code {
			t.Errorf("firelock %s: exit %d, want %d\n%s%s", strings.Join(tc.args, " "), code, tc.code, out, errOut)
		}
	}
}

// Item 14: with the emulator variables set they win, as in the Admin SDKs,
// and a demo- project never asks for credentials.
func TestProjectWithEmulatorsNeedsNoCredentials(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	env := []string{"GOOGLE_CLOUD_PROJECT=", "GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(t.TempDir(), "none.json")}
	code, out, errOut, _ := c.exe(time.Minute, env, "sale", "status", "s1", "--project", c.project)
	if code != exitOK || !strings.Contains(out, "Nosferatu") {
		t.Fatalf("sale status --project %s with the emulators set: exit %d, %q %q", c.project, code, out, errOut)
	}
	code, _, errOut, _ = c.exe(time.Minute, env, "operators", "grant", "nobody-"+c.project+"@example.com", "--project", "demo-firelock")
	if code != exitRefused || !strings.Contains(errOut, "no Firebase Auth user") {
		t.Fatalf("operators grant --project demo-firelock with the emulators set: exit %d, %q", code, errOut)
	}
	// A demo- project with no emulator named anywhere: no credentials
	// asked for, a usage error saying where the emulators are named.
	env = append(env, "FIRESTORE_EMULATOR_HOST=", "FIREBASE_AUTH_EMULATOR_HOST=")
	code, _, errOut, _ = c.exe(time.Minute, env, "sale", "status", "s1", "--project", "demo-firelock")
	if code != exitUsage || strings.Contains(errOut, "credentials") || !strings.Contains(errOut, "FIRESTORE_EMULATOR_HOST") {
		t.Fatalf("sale status --project demo-firelock without emulators: exit %d, %q; want 2 naming FIRESTORE_EMULATOR_HOST", code, errOut)
	}
}

// Item 15: watch right after a pause shows the pause, from the screening's
// own documents, before the admitter publishes anything.
func TestWatchRightAfterPauseShowsIt(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	c.must("sale", "pause", "s1", "--reason", "x")
	out := c.must("sale", "watch", "s1", "--for", "1500ms")
	if !strings.Contains(out, "paused") || strings.Contains(out, "not published yet") {
		t.Fatalf("watch right after pause: %q", out)
	}
	// A published state older than the pause: the pause shows too. The
	// watch that just exited listened to this document.
	if err := emulators.RetryCancelled(func() error {
		_, err := c.db.Collection("sales").Doc("s1").Set(context.Background(), map[string]any{"state": "scheduled", "waiting": int64(3), "admitted": int64(0), "active": int64(0), "seatsLeft": int64(10), "updatedAt": time.Now().Add(-time.Minute)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.must("sale", "resume", "s1")
	c.must("sale", "pause", "s1", "--reason", "x")
	out = c.must("sale", "watch", "s1", "--for", "1500ms")
	if !strings.Contains(out, "paused") || !regexp.MustCompile(`waiting\s+3`).MatchString(out) {
		t.Fatalf("watch after a pause, with an older publish: %q", out)
	}
}

// Item 16: cobra's completion for bash, zsh and fish.
func TestCompletion(t *testing.T) {
	c := newCLI(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := c.run("completion", shell)
		if code != exitOK || !strings.Contains(out, "firelock") || len(out) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes, %q", shell, code, len(out), errOut)
		}
	}
}

// sale list: every screening with a sale, with what sale status reads.
func TestSaleList(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	c.screening("s1", 10)
	c.screening("s2", 20)
	c.screening("free", 5)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5")
	c.must("sale", "configure", "s2", "--opens-at", "+2h", "--admit-per-minute", "60", "--max-active", "9")
	c.must("sale", "pause", "s2", "--reason", "x")
	if _, err := c.db.Collection("sales").Doc("s1").Set(ctx, map[string]any{"state": "scheduled", "waiting": int64(7), "admitted": int64(0), "active": int64(2), "seatsLeft": int64(8), "updatedAt": time.Now()}); err != nil {
		t.Fatal(err)
	}
	var list []saleStatus
	if err := json.Unmarshal([]byte(c.must("sale", "list", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ScreeningID != "s1" || list[1].ScreeningID != "s2" || list[0].Public == nil || list[0].Public.Waiting != 7 ||
		list[1].State != "paused" || list[1].Public != nil || list[1].Sale["maxActive"] != float64(9) {
		t.Fatalf("sale list -o json: %+v", list)
	}
	out := c.must("sale", "list")
	if !regexp.MustCompile(`(?m)^SCREENING\s+TITLE\s+STATE\s+OPENS AT\s+WAITING\s+ACTIVE\s+SEATS LEFT$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^s1\s+Nosferatu\s+scheduled\s+\S+\s+7\s+2\s+8$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^s2\s+Nosferatu\s+paused\s+\S+\s+–\s+–\s+–$`).MatchString(out) || strings.Contains(out, "free") {
		t.Fatalf("sale list:\n%s", out)
	}
	if code, _, _ := c.run("sale", "list", "s1"); code != exitUsage {
		t.Fatalf("sale list s1: exit %d, want 2", code)
	}
}

// --require-verified-email sets the sale's requireVerifiedEmail (CONTRACT
// §12, issue #40): status shows it, false clears it, and a value that is
// neither is a usage error that changes nothing.
func TestConfigureRequireVerifiedEmail(t *testing.T) {
	c := newCLI(t)
	c.screening("s1", 10)
	c.must("sale", "configure", "s1", "--opens-at", "+1h", "--admit-per-minute", "30", "--max-active", "5", "--require-verified-email", "true")
	var st saleStatus
	if err := json.Unmarshal([]byte(c.must("sale", "status", "s1", "-o", "json")), &st); err != nil || st.Sale["requireVerifiedEmail"] != true {
		t.Fatalf("requireVerifiedEmail after configure: %v (%v)", st.Sale["requireVerifiedEmail"], err)
	}
	if out := c.must("sale", "status", "s1"); !strings.Contains(out, "requireVerifiedEmail") {
		t.Errorf("status does not show requireVerifiedEmail:\n%s", out)
	}
	if code, _, errOut := c.run("sale", "configure", "s1", "--require-verified-email", "yes"); code != exitUsage || !strings.Contains(errOut, "want true or false") {
		t.Errorf("--require-verified-email yes: exit %d, %q", code, errOut)
	}
	c.must("sale", "configure", "s1", "--require-verified-email", "false")
	st = saleStatus{}
	if err := json.Unmarshal([]byte(c.must("sale", "status", "s1", "-o", "json")), &st); err != nil || st.Sale["requireVerifiedEmail"] != nil {
		t.Fatalf("requireVerifiedEmail after false: %v (%v)", st.Sale["requireVerifiedEmail"], err)
	}
}
