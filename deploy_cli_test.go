package firelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real command-line tools judge every command deploy.sh runs. Each
// command the dry runs print (queries and changes, with and without
// payments, Hosting, metrics and traces, at another capacity, --setup), and each the runs
// against the fake project made (the paths a fresh project does not take:
// updates, a site of its own), goes to the gcloud CLI installed here (the
// Debian package the emulators come from) with no credentials, in a
// config directory of its own, and to firebase-tools (tools/) with no
// login. Each must fail only for want of credentials: an unknown flag, a
// misspelt command, a value gcloud's parser refuses (exit 2, "unrecognized
// arguments", "invalid choice", "argument --x: ...") or a deploy target
// firebase does not know fails the test. What the CLIs check only once
// signed in (a memory size, whether a role exists) this cannot see.
func TestDeployCommandsPassTheRealCLIs(t *testing.T) {
	c := newCLIChecker(t)
	var lines []string
	f := newFakeProject(t)
	for _, args := range [][]string{
		{"--firestore-location=eur3"},
		{"--no-payments", "--no-hosting", "--no-metrics", "--no-traces", "--concurrency=1", "--cpu=0.5", "--memory=256Mi"},
		{"--setup", "--firestore-location=europe-west1"},
	} {
		out, errOut, code := f.deploy("deploy.sh", append([]string{"--dry-run", "--project=demo-p", "--region=europe-west1"}, args...)...)
		if code != 0 {
			t.Fatalf("dry run %v: exit %d: %s", args, code, errOut)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			lines = append(lines, l[2:])
		}
	}
	// Against the fake project: a first deploy, a second (updates), and one
	// whose web app exists without a Hosting site.
	f.haveSecrets("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "FIRELOCK_TICKET_KEY")
	for i := 0; i < 2; i++ {
		if _, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=europe-west1", "--firestore-location=eur3"); code != 0 {
			t.Fatalf("deploy to the fake project: exit %d: %s", code, errOut)
		}
		lines = append(lines, f.calls()...)
	}
	os.Remove(filepath.Join(f.state, "site"))
	if _, errOut, code := f.deploy("deploy.sh", "--setup", "--project=demo-p", "--region=europe-west1"); code != 0 {
		t.Fatalf("setup of a project without a site: exit %d: %s", code, errOut)
	}
	lines = append(lines, f.calls()...)
	if lineWith(lines, "firebase hosting:sites:create demo-p --app 1:42:web:abc") < 0 {
		t.Fatal("no run created a Hosting site: the checks would miss its command")
	}

	failures := c.check(lines)
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d commands, %d run through the CLIs (one per shape)", len(lines), c.ran)

	// The checker itself: a copy of deploy.sh with a misspelt flag in the
	// HTTP functions' gcloud command, a value gcloud's parser refuses in
	// RunScheduledJob's, a misspelt flag in a firebase command and a deploy
	// target firebase does not know; each is caught, for what it is.
	planted := []struct{ from, to, says string }{
		{" --trigger-http ", " --triger-http ", "unrecognized arguments: --triger-http"},
		{" --max-instances=20 ", " --max-instances=twenty ", "argument --max-instances"},
		{`projects:addfirebase "$PROJECT" --non-interactive`, `projects:addfirebase "$PROJECT" --non-interactiv`, "unknown option '--non-interactiv'"},
		{"deploy --only auth ", "deploy --only auht ", "'--only auht'"},
	}
	dir := scratchCopy(t, func(s string) string {
		for _, p := range planted {
			if strings.Count(s, p.from) != 1 {
				t.Fatalf("deploy.sh holds %q %d times, not once, to plant a fault in", p.from, strings.Count(s, p.from))
			}
			s = strings.Replace(s, p.from, p.to, 1)
		}
		return s
	})
	out, errOut, code := f.deploy(filepath.Join(dir, "deploy.sh"), "--dry-run", "--project=demo-p", "--region=europe-west1")
	if code != 0 {
		t.Fatalf("dry run of the planted copy: exit %d: %s", code, errOut)
	}
	var changed []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = l[2:]; !slices.Contains(lines, l) {
			changed = append(changed, l)
		}
	}
	caught := c.check(changed)
	for _, p := range planted {
		found := false
		for _, f := range caught {
			_, answer, _ := strings.Cut(f, "\n    exit ")
			found = found || strings.Contains(answer, p.says)
		}
		if !found {
			t.Errorf("the checker missed the planted %q (want an answer saying %q); it caught:\n%s", p.to, p.says, strings.Join(caught, "\n"))
		}
	}
}

type cliChecker struct {
	t        *testing.T
	dir      string // scratch: the CLIs' config and home, the Hosting config
	bin      string // gcloud and firebase, the real ones
	repo     string
	mu       sync.Mutex
	ran      int
	verdicts map[string]string // shape -> failure ("" passed)
}

func newCLIChecker(t *testing.T) *cliChecker {
	t.Helper()
	gcloud, err := exec.LookPath("/usr/bin/gcloud")
	if err != nil {
		t.Fatalf("the gcloud CLI (/usr/bin/gcloud, Debian's google-cloud-cli, which the emulators come with) is needed: %v", err)
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	firebase := filepath.Join(repo, "tools", "node_modules", ".bin", "firebase")
	if _, err := os.Stat(firebase); err != nil {
		t.Fatalf("firebase-tools is needed (make deps): %v", err)
	}
	c := &cliChecker{t: t, dir: t.TempDir(), repo: repo, verdicts: map[string]string{}}
	c.bin = filepath.Join(c.dir, "bin")
	for _, d := range []string{c.bin, filepath.Join(c.dir, "gcloud")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// No network: gcloud is told it is not on Compute Engine (its cached
	// answer; else it looks the metadata server up), and firebase-tools
	// neither probes the metadata server nor fetches its news (CI).
	if err := os.WriteFile(filepath.Join(c.dir, "gcloud", "gce"), []byte("False"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"gcloud": gcloud, "firebase": firebase} {
		if err := os.Symlink(target, filepath.Join(c.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// shapeOf is a command line with the names and free-form values that the
// CLIs take as they come (a function's, a secret's, a job's or an
// account's name, a role, a schedule, a message) replaced, so that
// commands alike but for those are checked once: gcloud takes a second to
// start.
func shapeOf(line string) string {
	for _, r := range shapeRules {
		line = r.re.ReplaceAllString(line, r.to)
	}
	return line
}

const qword = `(?:\\.|[^\s\\])+` // one word as printf %q writes it

var shapeRules = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`(functions deploy |--entry-point=)[A-Za-z]+`), "${1}FN"},
	{regexp.MustCompile(`(secrets (?:versions list|get-iam-policy|add-iam-policy-binding) )[A-Za-z0-9_-]+`), "${1}SECRET"},
	{regexp.MustCompile(`firelock-(?:runtime|build)\b`), "firelock-ACCOUNT"},
	{regexp.MustCompile(`firelock-(?:rollup-counters|sweep-expired|admit-queue)\b`), "firelock-JOB"},
	{regexp.MustCompile(`(--(?:role|schedule|message-body|time-zone|display-name)=)` + qword), "${1}V"},
}

// check runs every distinct command line, a few at a time (gcloud takes
// about a second to start), and returns the failures.
func (c *cliChecker) check(lines []string) []string {
	shapes := map[string]string{} // shape -> the first line of it
	var order []string
	for _, l := range lines {
		tool, _, _ := strings.Cut(l, " ")
		switch tool {
		case "npm", "env":
			continue // the web app's build: not a CLI of the cloud
		case "gcloud", "firebase", "node":
		default:
			return []string{fmt.Sprintf("a command of an unknown tool %q: %s", tool, l)}
		}
		shape := shapeOf(l)
		if _, ok := shapes[shape]; !ok {
			shapes[shape] = l
			order = append(order, shape)
		}
	}
	// The Hosting config first: the firebase deploy that reads it comes after.
	slices.SortStableFunc(order, func(a, b string) int {
		return boolInt(!strings.HasPrefix(a, "node ")) - boolInt(!strings.HasPrefix(b, "node "))
	})
	var failures []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3)
	var mu sync.Mutex
	for _, shape := range order {
		line := shapes[shape]
		if strings.HasPrefix(line, "node ") {
			if f := c.run(line); f != "" {
				failures = append(failures, f)
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if f := c.run(line); f != "" {
				mu.Lock()
				failures = append(failures, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(failures)
	return failures
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run runs one command line as bash reads it, and judges the answer.
func (c *cliChecker) run(line string) string {
	c.mu.Lock()
	if v, ok := c.verdicts[line]; ok {
		c.mu.Unlock()
		return v
	}
	c.ran++
	c.mu.Unlock()
	hosting := filepath.Join(c.dir, "firebase.deploy.json")
	cmdline := strings.ReplaceAll(strings.ReplaceAll(line, "--out=firebase.deploy.json", "--out="+hosting), "--config firebase.deploy.json", "--config "+hosting)
	home := filepath.Join(c.dir, "home")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", cmdline)
	cmd.Dir = c.repo
	cmd.Env = []string{
		"PATH=" + c.bin + string(os.PathListSeparator) + "/usr/bin:/bin",
		"HOME=" + home,
		"CLOUDSDK_CONFIG=" + filepath.Join(c.dir, "gcloud"),
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1",
		"NO_UPDATE_NOTIFIER=1",
		"FIREBASE_CLI_DISABLE_TELEMETRY=1",
		"METADATA_SERVER_DETECTION=none",
		"CI=1",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return fmt.Sprintf("%s: %v", line, err)
	}
	verdict := judge(line, code, out.String())
	c.mu.Lock()
	c.verdicts[line] = verdict
	c.mu.Unlock()
	return verdict
}

// judge: "" when the tool refused the command only for want of
// credentials (or ran it: a local command), else why not.
func judge(line string, code int, out string) string {
	tool, _, _ := strings.Cut(line, " ")
	ok := false
	switch tool {
	case "gcloud":
		ok = code == 0 || code == 1 && (strings.Contains(out, "You do not currently have an active account selected") ||
			strings.Contains(out, "The required property [project] is not currently set"))
	case "firebase":
		ok = code != 0 && strings.Contains(out, "Failed to authenticate, have you run firebase login?")
	case "node":
		ok = code == 0
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s\n    exit %d: %s", line, code, firstLines(out, 4))
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "at ") || strings.Contains(l, "Unable to fetch the CLI MOTD") || strings.TrimSpace(l) == "" {
			continue
		}
		keep = append(keep, l)
		if len(keep) == n {
			break
		}
	}
	return strings.Join(keep, " | ")
}
