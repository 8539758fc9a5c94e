package firelock

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/payment"
	stripe "github.com/stripe/stripe-go/v85"
)

// pendingFunctions are in deploy.sh's table ahead of their Go handlers,
// which other branches add (CONTRACT §13 and §14). Once one is registered
// (in functions.HTTPFunctions), it leaves this list.
var pendingFunctions = []string{}

// deployedHTTPFunctions is every HTTP function deploy.sh deploys with
// payments: those the functions register, and the pending ones.
func deployedHTTPFunctions(t *testing.T) []string {
	t.Helper()
	all := slices.Clone(functions.HTTPFunctions)
	for _, fn := range pendingFunctions {
		if slices.Contains(all, fn) {
			t.Errorf("%s is registered now: remove it from pendingFunctions in deploy_test.go", fn)
			continue
		}
		all = append(all, fn)
	}
	return all
}

// fakeProject puts fake gcloud, firebase and npm on PATH, standing for a
// Google Cloud project whose state lives in files under dir/state: what
// they create, later queries find. Each call is logged, one line each,
// quoted as bash would read it (printf %q). Fresh, the project has no API
// enabled, no database, no service account, no Firebase, no web app; it
// has the secrets a test puts there (haveSecrets).
type fakeProject struct {
	t       *testing.T
	path    string // PATH with the fakes first
	state   string
	logFile string
}

const fakeScript = `#!/usr/bin/env bash
state=STATE
{ printf '%s' "$(basename "$0")"; printf ' %q' "$@"; printf '\n'; } >> "$state/calls.log"
tool=$(basename "$0")
flag() { # flag NAME: the value of --NAME=V or --NAME V among the call's arguments
  local prev="" a
  for a in "${ARGS[@]}"; do
    case "$a" in "--$1="*) echo "${a#*=}"; return ;; esac
    if [ "$prev" = "--$1" ]; then echo "$a"; return; fi
    prev=$a
  done
}
ARGS=("$@")
if [ -n "${FAKE_FAIL:-}" ] && [[ "$tool $*" == *"$FAKE_FAIL"* ]]; then echo "ERROR: (gcloud) planted failure" >&2; exit 1; fi
notfound() { echo "ERROR: (gcloud) NOT_FOUND: $*" >&2; exit 1; }
if [ "$tool" = npm ]; then exit 0; fi
if [ "$tool" = firebase ]; then
  case "$1" in
    projects:list) if [ -e "$state/firebase" ]; then echo '{"status":"success","result":[{"projectId":"demo-p"}]}'; else echo '{"status":"success","result":[]}'; fi ;;
    projects:addfirebase) touch "$state/firebase" ;;
    apps:list) if [ -e "$state/app" ]; then echo '{"status":"success","result":[{"displayName":"firelock-web","appId":"1:42:web:abc","platform":"WEB"}]}'; else echo '{"status":"success","result":[]}'; fi ;;
    apps:create) touch "$state/app"; [ -e "$state/site" ] || echo "1:42:web:abc" > "$state/site" ;;
    hosting:sites:list)
      if [ -e "$state/site" ]; then printf '{"status":"success","result":{"sites":[{"name":"projects/demo-p/sites/demo-p","type":"DEFAULT_SITE","appId":"%s"}]}}\n' "$(cat "$state/site")"
      else echo '{"status":"success","result":{"sites":[]}}'; fi ;;
    hosting:sites:create) flag app > "$state/site" ;;
    deploy) c=$(flag config); if [ -n "$c" ]; then cp "$c" "$state/hosting-config.json"; fi ;;
  esac
  exit 0
fi
case "$1 $2 $3" in
  "auth list "*) echo me@example.com ;;
  "services list "*) cat "$state/apis" 2>/dev/null ;;
  "services enable "*) for a in "$@"; do case "$a" in *.googleapis.com) echo "$a" >> "$state/apis" ;; esac; done ;;
  "firestore databases describe") if [ -e "$state/db" ]; then cat "$state/db"; else notfound "database (default)"; fi ;;
  "firestore databases create") printf 'FIRESTORE_NATIVE\t%s\n' "$(flag location)" > "$state/db" ;;
  "functions runtimes list") printf 'go125\ngo126\n' ;;
  "secrets versions list") if [ -e "$state/secret-$4" ]; then cat "$state/secret-$4"; else notfound "secret $4"; fi ;;
  "secrets get-iam-policy "*) cat "$state/secretroles-$3" 2>/dev/null ;;
  "secrets add-iam-policy-binding "*) flag role >> "$state/secretroles-$3" ;;
  "iam service-accounts describe") [ -e "$state/sa-${4%%@*}" ] || notfound "service account $4" ;;
  "iam service-accounts create") touch "$state/sa-$4" ;;
  "projects get-iam-policy "*) f=$(flag filter); cat "$state/roles-${f##*:}" 2>/dev/null ;;
  "projects add-iam-policy-binding "*) m=$(flag member); flag role >> "$state/roles-${m#serviceAccount:}" ;;
  "functions deploy "*) touch "$state/fn-$3" ;;
  "functions describe RunScheduledJob") [ -e "$state/fn-RunScheduledJob" ] && echo "projects/demo-p/locations/$(flag region)/triggers/runscheduledjob-1" ;;
  "functions describe "*) if [ -e "$state/fn-$3" ]; then echo "projects/demo-p/locations/$(flag region)/functions/$3"; else notfound "function $3"; fi ;;
  "eventarc triggers describe") echo "projects/demo-p/subscriptions/eventarc-$(flag location)-runscheduledjob-1-sub-9" ;;
  "run services get-iam-policy") cat "$state/invokers" 2>/dev/null ;;
  "functions add-invoker-policy-binding "*) echo roles/run.invoker >> "$state/invokers" ;;
  "pubsub topics describe") [ -e "$state/topic" ] || notfound topic ;;
  "pubsub topics create") touch "$state/topic" ;;
  "scheduler jobs describe") [ -e "$state/job-$4" ] || notfound "job $4" ;;
  "scheduler jobs create") touch "$state/job-$5" ;;
esac
exit 0
`

func newFakeProject(t *testing.T) *fakeProject {
	t.Helper()
	dir := t.TempDir()
	f := &fakeProject{t: t, state: filepath.Join(dir, "state"), logFile: filepath.Join(dir, "state", "calls.log")}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, f.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.Replace(fakeScript, "STATE", f.state, 1)
	for _, name := range []string{"gcloud", "firebase", "npm"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.path = bin + string(os.PathListSeparator) + os.Getenv("PATH")
	return f
}

// haveSecrets puts the secrets in the project, each at version 3.
func (f *fakeProject) haveSecrets(names ...string) {
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(f.state, "secret-"+n), []byte("3\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fakeProject) calls() []string {
	b, err := os.ReadFile(f.logFile)
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	os.Remove(f.logFile)
	return lines
}

// deploy runs the script (deploy.sh, or another copy) with the fakes.
func (f *fakeProject) deploy(script string, args ...string) (stdout, stderr string, code int) {
	f.t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+f.path, "FIRELOCK_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "FIRELOCK_REGION=",
		"FIRELOCK_APPCHECK=", "FIRELOCK_ALLOWED_ORIGINS=", "VITE_RECAPTCHA_SITE_KEY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// changes are the calls that change something (no query).
func changes(calls []string) []string {
	var out []string
	query := regexp.MustCompile(`^(gcloud (auth list|services list|\S+ (\S+ )?(describe|list|get-iam-policy))|firebase (projects:list|apps:list|hosting:sites:list))\b`)
	for _, c := range calls {
		if !query.MatchString(c) {
			out = append(out, c)
		}
	}
	return out
}

func lineWith(lines []string, parts ...string) int {
	for i, l := range lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return i
		}
	}
	return -1
}

// The dry run prints every command a deploy to a fresh project runs, in
// order, and calls nothing: no gcloud, firebase or npm, not even a query.
// Every function is deployed with its project (GOOGLE_CLOUD_PROJECT: the
// Admin SDK checks ID tokens against it) and the runtime service account.
func TestDeployDryRunPrintsEveryCommand(t *testing.T) {
	f := newFakeProject(t)
	out, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project", "demo-p", "--region=europe-west1", "--firestore-location=eur3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if calls := f.calls(); len(calls) > 0 {
		t.Errorf("the dry run called:\n%s", strings.Join(calls, "\n"))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "? ") && !strings.HasPrefix(l, "+ ") {
			t.Errorf("a line neither query nor change: %q", l)
		}
	}
	const sa = "--service-account=firelock-runtime@demo-p.iam.gserviceaccount.com"
	const build = "--build-service-account=projects/demo-p/serviceAccounts/firelock-build@demo-p.iam.gserviceaccount.com"
	const secrets = `--set-secrets=STRIPE_SECRET_KEY=STRIPE_SECRET_KEY:1\,STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET:1\,FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:1`
	for _, fn := range deployedHTTPFunctions(t) {
		want := `+ gcloud functions deploy ` + fn + ` --gen2 --runtime=go126 --region=europe-west1 --project=demo-p --source=. ` + sa + ` ` + build +
			` --entry-point=` + fn + ` --trigger-http --allow-unauthenticated --concurrency=80 --cpu=1 --memory=512Mi --max-instances=100` +
			` --set-env-vars=\^\;\^GOOGLE_CLOUD_PROJECT=demo-p\;FIRELOCK_ALLOWED_ORIGINS=https://demo-p.web.app\,https://demo-p.firebaseapp.com\;FIRELOCK_METRICS=cloud\;FIRELOCK_TRACES=cloud\;FIRELOCK_APPCHECK=monitor\;FIRELOCK_APPCHECK_APPS= ` +
			secrets + ` --quiet`
		if n := strings.Count(out, "\n"+want+"\n"); n != 1 {
			t.Errorf("%s deployed %d times as\n%s\nin:\n%s", fn, n, want, out)
		}
	}
	// Every function, HTTP or not: its project and its account.
	deploys := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "+ gcloud functions deploy ") {
			deploys++
			for _, want := range []string{`GOOGLE_CLOUD_PROJECT=demo-p\;`, " " + sa + " ", " " + build + " "} {
				if !strings.Contains(l, want) {
					t.Errorf("a function deployed without %s: %s", want, l)
				}
			}
		}
	}
	if want := len(deployedHTTPFunctions(t)) + 1; deploys != want {
		t.Errorf("%d functions deployed, want %d", deploys, want)
	}
	for _, want := range []string{
		`+ gcloud functions deploy RunScheduledJob --gen2 --runtime=go126 --region=europe-west1 --project=demo-p --source=. ` + sa + ` ` + build + ` --entry-point=RunScheduledJob --trigger-topic=scheduled-jobs --trigger-service-account=firelock-runtime@demo-p.iam.gserviceaccount.com --retry --timeout=540s --concurrency=1 --cpu=1 --memory=512Mi --max-instances=20 --set-env-vars=\^\;\^GOOGLE_CLOUD_PROJECT=demo-p\;FIRELOCK_METRICS=cloud\;FIRELOCK_TRACES=cloud ` + secrets + ` --quiet`,
		`+ gcloud pubsub subscriptions update SUBSCRIPTION-OF-RunScheduledJob --project=demo-p --ack-deadline=600 --min-retry-delay=10s --max-retry-delay=600s --quiet`,
		`+ gcloud scheduler jobs create pubsub firelock-admit-queue --location=europe-west1 --project=demo-p --schedule=\*\ \*\ \*\ \*\ \* --time-zone=Etc/UTC --topic=scheduled-jobs --message-body=\{\"job\":\ \"admitQueue\"\,\ \"schedule\":\ \"\*\ \*\ \*\ \*\ \*\"\,\ \"timeZone\":\ \"Etc/UTC\"\} --quiet`,
		`+ env VITE_FUNCTIONS_URL=https://europe-west1-demo-p.cloudfunctions.net npm --prefix web run build`,
	} {
		if lineWith(lines, want) < 0 {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
	// The order: the web app's build (a failed build changes nothing), the
	// APIs, the database, the accounts and their roles, Firebase, then the
	// rules and indexes before the functions that query them, the invoker
	// after the function it invokes, and the web app's deploy last.
	order := [][]string{
		{"+ npm --prefix web ci"},
		{"+ env VITE_FUNCTIONS_URL=https://europe-west1-demo-p.cloudfunctions.net npm --prefix web run build"},
		{"? gcloud services list --enabled"},
		{"+ gcloud services enable", "firestore.googleapis.com", "iam.googleapis.com", "secretmanager.googleapis.com", "firebasehosting.googleapis.com"},
		{"? gcloud firestore databases describe --database=\\(default\\)"},
		{"? gcloud secrets versions list FIRELOCK_TICKET_KEY"},
		{"+ gcloud firestore databases create --database=\\(default\\) --location=eur3 --type=firestore-native"},
		{"+ gcloud iam service-accounts create firelock-runtime"},
		{"+ gcloud iam service-accounts create firelock-build"},
		{"+ gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/datastore.user --condition=None"},
		{"+ gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/monitoring.metricWriter"},
		{"+ gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/cloudtrace.agent"},
		{"+ gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/firebaseauth.viewer"},
		{"+ gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-build@demo-p.iam.gserviceaccount.com --role=roles/cloudbuild.builds.builder"},
		{"+ gcloud secrets add-iam-policy-binding STRIPE_SECRET_KEY", "--role=roles/secretmanager.secretAccessor"},
		{"+ gcloud secrets add-iam-policy-binding FIRELOCK_TICKET_KEY", "--member=serviceAccount:firelock-runtime@", "--role=roles/secretmanager.secretAccessor"},
		{"+ firebase projects:addfirebase demo-p --non-interactive"},
		{"+ firebase apps:create WEB firelock-web --project demo-p --non-interactive"},
		{"+ firebase deploy --only auth --project demo-p --non-interactive"},
		{`+ firebase deploy --only firestore:rules\,firestore:indexes --project demo-p --non-interactive`},
		{"+ gcloud functions deploy BookSeats"},
		{"+ gcloud pubsub topics create scheduled-jobs"},
		{"+ gcloud functions deploy RunScheduledJob"},
		{"+ gcloud functions add-invoker-policy-binding RunScheduledJob --region=europe-west1 --project=demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com"},
		{"+ gcloud scheduler jobs create pubsub firelock-rollup-counters"},
		{`+ node scripts/hosting-config.mjs --site=demo-p --region=europe-west1`, "--out=firebase.deploy.json"},
		{"+ firebase deploy --only hosting --config firebase.deploy.json --project demo-p --non-interactive"},
	}
	at := -1
	for _, parts := range order {
		i := lineWith(lines, parts...)
		if i < 0 {
			t.Errorf("no line with %q", parts)
			continue
		}
		if i < at {
			t.Errorf("%q comes before the step above it", parts)
		}
		at = i
	}
	for _, bad := range []string{":latest", "ttls update", "*detect-project-id*"} {
		if strings.Contains(out, bad) {
			t.Errorf("the dry run prints %q", bad)
		}
	}
	if !strings.Contains(errOut, "dry run: nothing was changed") {
		t.Errorf("the dry run does not say it changed nothing: %s", errOut)
	}
}

// A fresh project is set up by the first deploy, in order and without a
// prompt; a second deploy finds everything in place and changes nothing
// of the setup, only deploys again. The secrets are pinned to the version
// found; Hosting's config routes its rewrites to the functions' region.
func TestDeploySetsUpAFreshProjectOnceAndThenChangesNothingThere(t *testing.T) {
	f := newFakeProject(t)
	f.haveSecrets("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "FIRELOCK_TICKET_KEY")
	args := []string{"--project=demo-p", "--region=us-central1", "--firestore-location=nam5", "--schedule", "*/15 * * * *", "--admit-schedule=*/2 * * * *",
		"--allowed-origins", "https://tickets.example.com,http://localhost:5173"}
	_, errOut, code := f.deploy("deploy.sh", args...)
	if code != 0 || strings.Contains(errOut, "stopped:") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := changes(f.calls())
	for _, want := range [][]string{
		{"gcloud services enable", "cloudfunctions.googleapis.com", "--quiet"},
		{"gcloud firestore databases create --database=\\(default\\) --location=nam5 --type=firestore-native --project=demo-p --quiet"},
		{"gcloud iam service-accounts create firelock-runtime"},
		{"gcloud projects add-iam-policy-binding demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/firebaseauth.viewer --condition=None --quiet"},
		{"gcloud secrets add-iam-policy-binding STRIPE_WEBHOOK_SECRET", "--role=roles/secretmanager.secretAccessor"},
		{"firebase projects:addfirebase demo-p"},
		{"firebase apps:create WEB firelock-web"},
		{"gcloud functions deploy BookSeats --gen2 --runtime=go126 --region=us-central1", `--set-secrets=STRIPE_SECRET_KEY=STRIPE_SECRET_KEY:3\,STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET:3\,FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:3`},
		{"FIRELOCK_ALLOWED_ORIGINS=https://tickets.example.com\\,http://localhost:5173\\,https://demo-p.web.app\\,https://demo-p.firebaseapp.com\\;"},
		{"gcloud pubsub subscriptions update eventarc-us-central1-runscheduledjob-1-sub-9 --project=demo-p --ack-deadline=600"},
		{"gcloud scheduler jobs create pubsub firelock-admit-queue", `--schedule=\*/2\ \*\ \*\ \*\ \*`},
		{"firebase deploy --only hosting --config firebase.deploy.json --project demo-p"},
	} {
		if lineWith(first, want...) < 0 {
			t.Errorf("the first deploy did not run %q; it ran:\n%s", want, strings.Join(first, "\n"))
		}
	}
	var cfg struct {
		Hosting struct {
			Site     string
			Rewrites []struct {
				Source   string
				Function struct{ FunctionID, Region string }
			}
		}
	}
	if err := readJSON(filepath.Join(f.state, "hosting-config.json"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Hosting.Site != "demo-p" || len(cfg.Hosting.Rewrites) == 0 {
		t.Errorf("Hosting's config: %+v", cfg.Hosting)
	}
	for _, r := range cfg.Hosting.Rewrites {
		if r.Function.FunctionID != "" && r.Function.Region != "us-central1" {
			t.Errorf("the rewrite of %s goes to %s in %q, not us-central1", r.Source, r.Function.FunctionID, r.Function.Region)
		}
	}

	_, errOut, code = f.deploy("deploy.sh", args...)
	if code != 0 {
		t.Fatalf("second deploy: exit %d: %s", code, errOut)
	}
	second := changes(f.calls())
	setup := regexp.MustCompile(`services enable|databases create|service-accounts create|add-iam-policy-binding|add-invoker-policy-binding|addfirebase|apps:create|sites:create|topics create|scheduler jobs create`)
	for _, c := range second {
		if setup.MatchString(c) {
			t.Errorf("the second deploy set up again: %s", c)
		}
	}
	if lineWith(second, "gcloud scheduler jobs update pubsub firelock-rollup-counters") < 0 || lineWith(second, "gcloud functions deploy JoinQueue") < 0 {
		t.Errorf("the second deploy did not deploy again:\n%s", strings.Join(second, "\n"))
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Without a secret, or without a database and no --firestore-location, a
// deploy lists every problem and stops having changed nothing but the
// APIs. The webhook comes in its order: register the endpoint (its URL is
// known), store its signing secret, then deploy.
func TestDeployStopsBeforeChangingAnythingWhenSomethingIsMissing(t *testing.T) {
	f := newFakeProject(t)
	f.haveSecrets("STRIPE_SECRET_KEY")
	_, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=europe-west1")
	if code != 1 || strings.Contains(errOut, "stopped:") {
		t.Fatalf("exit %d, want 1 with the problems listed: %s", code, errOut)
	}
	for _, want := range []string{"no (default) Firestore database: pass --firestore-location", "STRIPE_WEBHOOK_SECRET FIRELOCK_TICKET_KEY", "--no-payments"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the deploy does not say %q:\n%s", want, errOut)
		}
	}
	steps := []string{"register the webhook endpoint at Stripe now", "https://europe-west1-demo-p.cloudfunctions.net/StripeWebhook",
		"then store the signing secret", "gcloud secrets create STRIPE_WEBHOOK_SECRET --data-file=- --project=demo-p", "run this deploy again"}
	at := -1
	for _, s := range steps {
		i := strings.Index(errOut, s)
		if i < 0 || i < at {
			t.Errorf("%q is missing or out of order in:\n%s", s, errOut)
		}
		at = i
	}
	for _, c := range changes(f.calls()) {
		if !strings.HasPrefix(c, "gcloud services enable ") && !strings.HasPrefix(c, "npm ") { // npm: the web app's build, local
			t.Errorf("a deploy that stopped changed: %s", c)
		}
	}
}

// A command that fails midway stops the deploy there, saying so; the same
// deploy run again goes on and finishes.
func TestDeployStopsAtAFailureAndGoesOnWhenRunAgain(t *testing.T) {
	f := newFakeProject(t)
	f.haveSecrets("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "FIRELOCK_TICKET_KEY")
	t.Setenv("FAKE_FAIL", "gcloud functions deploy JoinQueue")
	_, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=europe-west1", "--firestore-location=eur3")
	if code != 1 || !strings.Contains(errOut, "deploy.sh: stopped: the command above failed (exit 1)") {
		t.Fatalf("exit %d, want 1 saying it stopped: %s", code, errOut)
	}
	calls := changes(f.calls())
	if last := calls[len(calls)-1]; !strings.HasPrefix(last, "gcloud functions deploy JoinQueue ") {
		t.Errorf("the deploy went on after the failure, to %s", last)
	}
	t.Setenv("FAKE_FAIL", "")
	if _, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=europe-west1", "--firestore-location=eur3"); code != 0 {
		t.Fatalf("run again: exit %d: %s", code, errOut)
	}
	if calls := changes(f.calls()); lineWith(calls, "firebase deploy --only hosting") < 0 || lineWith(calls, "services enable") >= 0 {
		t.Errorf("run again, the deploy did not finish, or set up again:\n%s", strings.Join(calls, "\n"))
	}
}

// --no-hosting leaves the web app alone: no build, no Hosting deploy, and
// (in a dry run, which cannot know of a site) no Hosting origins; in a
// project with a site, its origins stay allowed.
func TestDeployWithoutHostingLeavesTheWebAppAlone(t *testing.T) {
	f := newFakeProject(t)
	out, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--no-hosting")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `--set-env-vars=\^\;\^GOOGLE_CLOUD_PROJECT=demo-p\;FIRELOCK_ALLOWED_ORIGINS=\;FIRELOCK_METRICS=cloud\;FIRELOCK_TRACES=cloud\;FIRELOCK_APPCHECK=monitor\;FIRELOCK_APPCHECK_APPS= --set-secrets`) {
		t.Errorf("origins were not left empty:\n%s", out)
	}
	for _, unwanted := range []string{"npm", "deploy --only hosting", "web.app", "hosting:sites:create", "hosting-config"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("--no-hosting would still run %q:\n%s", unwanted, out)
		}
	}

	// A project whose web app was deployed before: --no-hosting leaves it
	// alone, and its origins allowed. And functions left out this time
	// (--no-payments) are said to be still deployed, not deleted.
	f.haveSecrets("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "FIRELOCK_TICKET_KEY")
	if _, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=us-central1", "--firestore-location=nam5"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f.calls()
	_, errOut, code = f.deploy("deploy.sh", "--project=demo-p", "--region=us-central1", "--no-hosting", "--no-payments")
	if code != 0 {
		t.Fatalf("--no-hosting --no-payments: exit %d: %s", code, errOut)
	}
	calls := changes(f.calls())
	if i := lineWith(calls, "gcloud functions deploy BookSeats", `FIRELOCK_ALLOWED_ORIGINS=https://demo-p.web.app\,https://demo-p.firebaseapp.com\;`); i < 0 {
		t.Errorf("--no-hosting dropped the deployed web app's origins:\n%s", strings.Join(calls, "\n"))
	}
	for _, unwanted := range []string{"npm", "deploy --only hosting", "hosting:sites:create", "CheckoutHold", "functions delete"} {
		if lineWith(calls, unwanted) >= 0 {
			t.Errorf("--no-hosting --no-payments ran %q", unwanted)
		}
	}
	for _, fn := range []string{"CheckoutHold", "StripeWebhook"} {
		if !strings.Contains(errOut, "note: "+fn+", deployed before, is still deployed") {
			t.Errorf("the deploy does not say %s is still deployed:\n%s", fn, errOut)
		}
	}
}

// --no-metrics and --no-traces deploy every function with the export off.
func TestDeployWithoutMetricsOrTracesTurnsTheirExportOff(t *testing.T) {
	f := newFakeProject(t)
	n := len(deployedHTTPFunctions(t)) + 1
	for _, c := range []struct{ flag, env string }{{"--no-metrics", "FIRELOCK_METRICS"}, {"--no-traces", "FIRELOCK_TRACES"}} {
		out, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", c.flag)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.flag, code, errOut)
		}
		if got := strings.Count(out, c.env+"=off"); got != n || strings.Contains(out, c.env+"=cloud") {
			t.Errorf("%s: %d functions deployed with %s=off, want all %d and none with cloud:\n%s", c.flag, got, c.env, n, out)
		}
	}
}

func TestDeployChecksSettingsUpFront(t *testing.T) {
	f := newFakeProject(t)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no settings", nil, 2, "missing --project --region"},
		{"no region", []string{"--project", "demo-p"}, 2, "missing --region"},
		{"flag without value", []string{"--project"}, 2, "--project needs a value"},
		{"flag with an empty value", []string{"--project=demo-p", "--region", ""}, 2, "--region needs a value"},
		{"unknown flag", []string{"--project=demo-p", "--region=us-central1", "--force"}, 2, "unknown argument: --force"},
		{"project ID of capitals", []string{"--project=Demo_P", "--region=us-central1"}, 2, "--project Demo_P is not a project ID"},
		{"region that is a zone", []string{"--project=demo-p", "--region=europe-west1-b"}, 2, "--region europe-west1-b is not a region name"},
		{"region with a typo", []string{"--project=demo-p", "--region=europewest1"}, 2, "--region europewest1 is not a region name"},
		{"database location with spaces", []string{"--project=demo-p", "--region=us-central1", "--firestore-location=eur 3"}, 2, "is not a Firestore location"},
		{"concurrency on a fraction of a vCPU", []string{"--project=demo-p", "--region=us-central1", "--cpu=0.5"}, 2, "--concurrency 80 needs --cpu 1 or more"},
		{"concurrency of zero", []string{"--project=demo-p", "--region=us-central1", "--concurrency=0"}, 2, "--concurrency 0: want a whole number from 1 to 1000"},
		{"concurrency past 1000", []string{"--project=demo-p", "--region=us-central1", "--concurrency=5000"}, 2, "--concurrency 5000: want a whole number from 1 to 1000"},
		{"cpu that is no number", []string{"--project=demo-p", "--region=us-central1", "--cpu=one"}, 2, "--cpu one: want a fraction of a vCPU"},
		{"memory without a unit", []string{"--project=demo-p", "--region=us-central1", "--memory=512"}, 2, "--memory 512: want a size in Mi or Gi"},
		{"no instances", []string{"--project=demo-p", "--region=us-central1", "--max-instances=0"}, 2, "--max-instances 0: want a whole number"},
		{"secret name with a slash", []string{"--project=demo-p", "--region=us-central1", "--ticket-key-secret=keys/ticket"}, 2, "is not a Secret Manager secret ID"},
		{"origin with a path", []string{"--project=demo-p", "--region=us-central1", "--allowed-origins=https://a.example/app", "--dry-run"}, 2, "is not scheme://host[:port]"},
		{"wildcard origin", []string{"--project=demo-p", "--region=us-central1", "--allowed-origins=*", "--dry-run"}, 2, "is not scheme://host[:port]"},
		{"schedule not 5-field cron", []string{"--project=demo-p", "--region=us-central1", "--schedule", "0 0 * * * *", "--dry-run"}, 2, "is not a 5-field cron expression"},
		{"admit schedule not 5-field cron", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "* * *", "--dry-run"}, 2, "is not a 5-field cron expression"},
		// Each admitQueue run admits until the next tick, within the 540 s
		// timeout: longer gaps would leave a sale unadmitted (issue #29.7).
		{"hourly admit schedule", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "0 * * * *", "--dry-run"}, 2, "leaves up to 60 minutes between runs"},
		{"admit every 10 minutes", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "*/10 * * * *", "--dry-run"}, 2, "leaves up to 10 minutes between runs"},
		{"admit schedule with a gap in the list", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "0-30/6,31-59 * * * *", "--dry-run"}, 2, "leaves up to 6 minutes between runs"},
		{"admit in office hours only", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "* 9-17 * * *", "--dry-run"}, 2, "leaves up to 1440 minutes between runs"},
		{"admit schedule of unknown syntax", []string{"--project=demo-p", "--region=us-central1", "--admit-schedule", "L * * * *", "--dry-run"}, 2, "is not a minute field this check knows"},
		{"cpu between whole numbers", []string{"--project=demo-p", "--region=us-central1", "--cpu=1.5"}, 2, "--cpu 1.5: want a fraction of a vCPU from 0.08"},
		{"three vCPUs", []string{"--project=demo-p", "--region=us-central1", "--cpu=3"}, 2, "--cpu 3: want"},
		{"instances past Cloud Run's limit", []string{"--project=demo-p", "--region=us-central1", "--max-instances=99999999"}, 2, "--max-instances 99999999: want a whole number from 1 to 1000"},
		{"runtime that is no ID", []string{"--project=demo-p", "--region=us-central1", "--runtime=go-126;"}, 2, "--runtime go-126; is not a runtime ID"},
		// Values that would reach the functions' environment or the jobs'
		// messages in another shape are refused.
		{"time zone that breaks the message", []string{"--project=demo-p", "--region=us-central1", "--time-zone", `Europe/Paris", "job": "x`}, 2, "is not a time zone name"},
		{"app IDs that set another variable", []string{"--project=demo-p", "--region=us-central1", "--app-check-apps=1:1:web:a;FIRELOCK_APPCHECK=off"}, 2, "is not a Firebase app ID"},
		{"unknown App Check mode", []string{"--project=demo-p", "--region=us-central1", "--app-check", "sometimes"}, 2, "want enforce, monitor or off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := f.deploy("deploy.sh", c.args...)
			if code != c.code || !strings.Contains(errOut, c.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, errOut, c.code, c.msg)
			}
			if calls := f.calls(); len(calls) > 0 {
				t.Errorf("a refused deploy called:\n%s", strings.Join(calls, "\n"))
			}
		})
	}
	// One vCPU a request: concurrency 1 on half a vCPU is fine.
	if _, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--cpu=0.5", "--concurrency=1", "--memory=512Mi"); code != 0 {
		t.Errorf("--cpu 0.5 --concurrency 1: exit %d: %s", code, errOut)
	}
}

// Admit schedules that tick at least every 5 minutes of every hour pass.
func TestDeployAcceptsAdmitSchedulesWithoutGaps(t *testing.T) {
	f := newFakeProject(t)
	for _, s := range []string{"* * * * *", "*/5 * * * *", "0-59/2 * * * *", "1,4,7,10,13,16,19,22,25,28,31,34,37,40,43,46,49,52,55,58 * * * *", "0-30,31-59/5 * * * *"} {
		if _, errOut, code := f.deploy("deploy.sh", "--project=demo-p", "--region=us-central1", "--admit-schedule", s, "--time-zone", "Europe/London", "--dry-run"); code != 0 {
			t.Errorf("admit schedule %q: exit %d: %s", s, code, errOut)
		}
	}
}

// Payments (CONTRACT §10): the Stripe secrets come from Secret Manager,
// pinned; --no-payments deploys without them and without the two payment
// functions, but with the ticket key; a deploy says where Stripe's webhook
// goes, which events it takes, and the API version stripe-go pins.
func TestDeployTakesItsSecretsFromSecretManager(t *testing.T) {
	f := newFakeProject(t)
	out, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--stripe-key-secret=stripe-live-key", "--ticket-key-secret=tickets-2026")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"? gcloud secrets versions list stripe-live-key --project=demo-p",
		"? gcloud secrets versions list tickets-2026 --project=demo-p",
		"+ gcloud secrets add-iam-policy-binding stripe-live-key --project=demo-p --member=serviceAccount:firelock-runtime@demo-p.iam.gserviceaccount.com --role=roles/secretmanager.secretAccessor",
		"--entry-point=CheckoutHold --trigger-http --allow-unauthenticated",
		"--entry-point=StripeWebhook --trigger-http --allow-unauthenticated",
		`--set-secrets=STRIPE_SECRET_KEY=stripe-live-key:1\,STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET:1\,FIRELOCK_TICKET_KEY=tickets-2026:1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("would not run %q:\n%s", want, out)
		}
	}
	for _, want := range append([]string{"https://us-central1-demo-p.cloudfunctions.net/StripeWebhook", stripe.APIVersion}, payment.EventTypes...) {
		if !strings.Contains(errOut, want) {
			t.Errorf("the deploy does not print %q:\n%s", want, errOut)
		}
	}
	out, errOut, code = f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--no-payments")
	if code != 0 || strings.Contains(out, "functions deploy CheckoutHold") || strings.Contains(out, "functions deploy StripeWebhook") ||
		strings.Contains(out, "STRIPE") || strings.Contains(errOut, "webhook") || !strings.Contains(out, `--set-secrets=FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:1 `) {
		t.Fatalf("--no-payments: exit %d:\n%s\n%s", code, out, errOut)
	}
}

// App Check (CONTRACT §12): the HTTP functions are deployed in monitor by
// default; --app-check enforce and --app-check-apps go to each of them.
func TestDeploySetsAppCheckMonitorByDefault(t *testing.T) {
	f := newFakeProject(t)
	n := len(deployedHTTPFunctions(t))
	out, errOut, code := f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--app-check", "enforce", "--app-check-apps=1:1:web:a,1:1:ios:b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The web app sends tokens only when built with a site key: enforce
	// without one is said out loud.
	if !strings.Contains(errOut, "VITE_RECAPTCHA_SITE_KEY is not set") {
		t.Errorf("enforce without VITE_RECAPTCHA_SITE_KEY gave no warning: %q", errOut)
	}
	t.Setenv("VITE_RECAPTCHA_SITE_KEY", "6Lc-site-key")
	cmd := exec.Command("bash", "deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1", "--app-check", "enforce")
	cmd.Env = append(os.Environ(), "PATH="+f.path)
	if b, _ := cmd.CombinedOutput(); strings.Contains(string(b), "VITE_RECAPTCHA_SITE_KEY is not set") {
		t.Errorf("enforce with a site key warned: %s", b)
	}
	if got := strings.Count(out, `FIRELOCK_APPCHECK=enforce\;FIRELOCK_APPCHECK_APPS=1:1:web:a\,1:1:ios:b`); got != n {
		t.Errorf("%d HTTP functions deployed with enforce and the apps, want %d:\n%s", got, n, out)
	}
	out, _, _ = f.deploy("deploy.sh", "--dry-run", "--project=demo-p", "--region=us-central1")
	if got := strings.Count(out, `FIRELOCK_APPCHECK=monitor\;`); got != n {
		t.Errorf("%d HTTP functions deployed with monitor by default, want %d", got, n)
	}
}

// --setup sets the project up and deploys nothing.
func TestDeploySetupAloneDeploysNothing(t *testing.T) {
	f := newFakeProject(t)
	out, errOut, code := f.deploy("deploy.sh", "--setup", "--dry-run", "--project=demo-p", "--region=us-central1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"+ gcloud services enable", "+ gcloud iam service-accounts create firelock-runtime", "+ firebase apps:create WEB firelock-web"} {
		if !strings.Contains(out, want) {
			t.Errorf("--setup does not run %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"functions deploy", "deploy --only firestore", "deploy --only hosting", "scheduler jobs", "npm", "runtimes list"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("--setup runs %q:\n%s", unwanted, out)
		}
	}
	// Without the secrets yet: the setup goes through (they come before the deploy).
	_, errOut, code = f.deploy("deploy.sh", "--setup", "--project=demo-p", "--region=us-central1", "--firestore-location=eur3")
	if code != 0 {
		t.Fatalf("--setup without secrets: exit %d: %s", code, errOut)
	}
	for _, c := range f.calls() {
		if strings.Contains(c, "functions deploy") || strings.Contains(c, "deploy --only hosting") {
			t.Errorf("--setup ran %s", c)
		}
	}
}

// The table: one line per HTTP function. A function's own flags go after
// the shared ones (and win), on that function alone; a firebase.json
// rewrite to a function the deploy leaves out is refused before anything
// runs.
func TestDeployTableTakesPerFunctionFlagsAndRewritesMustNameDeployedFunctions(t *testing.T) {
	f := newFakeProject(t)
	dir := scratchCopy(t, func(s string) string {
		return strings.Replace(s, `"JoinQueue       core"`, `"JoinQueue       core --max-instances=300 --timeout=30s"`, 1)
	})
	out, errOut, code := f.deploy(filepath.Join(dir, "deploy.sh"), "--dry-run", "--project=demo-p", "--region=us-central1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		own := strings.Contains(l, "--max-instances=100") && strings.HasSuffix(l, "--max-instances=300 --timeout=30s --quiet")
		switch {
		case strings.Contains(l, "functions deploy JoinQueue ") && !own:
			t.Errorf("JoinQueue without its own flags last: %s", l)
		case !strings.Contains(l, "functions deploy JoinQueue ") && strings.Contains(l, "--max-instances=300"):
			t.Errorf("another function took JoinQueue's flags: %s", l)
		}
	}
	fb, err := os.ReadFile(filepath.Join(dir, "firebase.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "firebase.json"), bytes.Replace(fb, []byte(`"rewrites": [`), []byte(`"rewrites": [{ "source": "/pay", "function": { "functionId": "CheckoutHold" } },`), 1), 0o644)
	out, errOut, code = f.deploy(filepath.Join(dir, "deploy.sh"), "--dry-run", "--project=demo-p", "--region=us-central1", "--no-payments")
	if code != 1 || !strings.Contains(errOut, "firebase.json rewrites /pay to the function CheckoutHold, which this deploy does not deploy") || strings.Contains(out, "+ ") {
		t.Errorf("a rewrite to a function left out: exit %d, printed\n%s\n%s", code, out, errOut)
	}
}

// scratchCopy is a directory holding deploy.sh, as edit changes it, and
// what it reads (firebase.json, scripts/hosting-config.mjs).
func scratchCopy(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"deploy.sh", "firebase.json", "scripts/hosting-config.mjs"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "deploy.sh" {
			b = []byte(edit(string(b)))
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDeployUsageSaysWhatItDoes(t *testing.T) {
	f := newFakeProject(t)
	out, _, code := f.deploy("deploy.sh", "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"--setup", "--firestore-location", "--concurrency", "--cpu", "--memory", "--max-instances", "--ticket-key-secret", "firelock-runtime@PROJECT.iam.gserviceaccount.com", "Register it at Stripe first"} {
		if !strings.Contains(out, want) {
			t.Errorf("the usage does not say %q", want)
		}
	}
}
