package firelock

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/payment"
	stripe "github.com/stripe/stripe-go/v85"
)

// fakeTools puts fake gcloud, firebase and npm on PATH: each records its
// arguments, one line per call. gcloud offers the runtimes go125 and go126
// and finds no topic or scheduler job.
func fakeTools(t *testing.T) (pathEnv, logFile string) {
	t.Helper()
	dir := t.TempDir()
	logFile = filepath.Join(dir, "calls.log")
	script := `#!/usr/bin/env bash
echo "${VITE_FUNCTIONS_URL:+VITE_FUNCTIONS_URL=$VITE_FUNCTIONS_URL }$(basename "$0") $*" >> "` + logFile + `"
case "$*" in
  *"runtimes list"*) printf 'go125\ngo126\n' ;;
  *"secrets describe"*) for s in ${FAKE_NO_SECRETS:-}; do [[ "$*" == *"describe $s "* ]] && exit 1; done; exit 0 ;;
  *describe*) exit 1 ;;
esac
exit 0
`
	for _, name := range []string{"gcloud", "firebase", "npm"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH"), logFile
}

func runDeploy(t *testing.T, pathEnv string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"deploy.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+pathEnv, "FIRELOCK_PROJECT=", "GOOGLE_CLOUD_PROJECT=", "FIRELOCK_REGION=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func calls(t *testing.T, logFile string) string {
	b, err := os.ReadFile(logFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestDeployDryRunPrintsEveryCommand(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project", "demo-p", "--region=europe-west1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	const secrets = ` --set-secrets=STRIPE_SECRET_KEY=STRIPE_SECRET_KEY:latest\,STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET:latest\,FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:latest`
	var want []string
	for _, fn := range functions.HTTPFunctions {
		want = append(want, `+ gcloud functions deploy `+fn+` --gen2 --runtime=go126 --region=europe-west1 --project=demo-p --source=. --entry-point=`+fn+` --trigger-http --allow-unauthenticated --set-env-vars=\^\;\^FIRELOCK_ALLOWED_ORIGINS=https://demo-p.web.app\,https://demo-p.firebaseapp.com\;FIRELOCK_METRICS=cloud\;FIRELOCK_TRACES=cloud\;FIRELOCK_APPCHECK=monitor\;FIRELOCK_APPCHECK_APPS=`+secrets)
	}
	want = append(want,
		`+ gcloud pubsub topics create scheduled-jobs --project=demo-p`,
		`+ gcloud functions deploy RunScheduledJob --gen2 --runtime=go126 --region=europe-west1 --project=demo-p --source=. --entry-point=RunScheduledJob --trigger-topic=scheduled-jobs --retry --timeout=540s --set-env-vars=FIRELOCK_METRICS=cloud\,FIRELOCK_TRACES=cloud`+secrets,
		`+ gcloud pubsub subscriptions update SUBSCRIPTION-OF-RunScheduledJob --project=demo-p --ack-deadline=600 --min-retry-delay=10s --max-retry-delay=600s`,
		`+ gcloud scheduler jobs create pubsub firelock-rollup-counters --location=europe-west1 --project=demo-p --schedule=0\ \*\ \*\ \*\ \* --time-zone=Etc/UTC --topic=scheduled-jobs --message-body=\{\"job\":\ \"rollupCounters\"\,\ \"schedule\":\ \"0\ \*\ \*\ \*\ \*\"\,\ \"timeZone\":\ \"Etc/UTC\"\}`,
		`+ gcloud scheduler jobs create pubsub firelock-sweep-expired --location=europe-west1 --project=demo-p --schedule=\*\ \*\ \*\ \*\ \* --time-zone=Etc/UTC --topic=scheduled-jobs --message-body=\{\"job\":\ \"sweepExpired\"\,\ \"schedule\":\ \"\*\ \*\ \*\ \*\ \*\"\,\ \"timeZone\":\ \"Etc/UTC\"\}`,
		`+ gcloud scheduler jobs create pubsub firelock-admit-queue --location=europe-west1 --project=demo-p --schedule=\*\ \*\ \*\ \*\ \* --time-zone=Etc/UTC --topic=scheduled-jobs --message-body=\{\"job\":\ \"admitQueue\"\,\ \"schedule\":\ \"\*\ \*\ \*\ \*\ \*\"\,\ \"timeZone\":\ \"Etc/UTC\"\}`,
		`+ firebase deploy --only firestore:rules\,firestore:indexes --project demo-p --non-interactive`,
		`+ npm --prefix web ci --no-audit --no-fund`,
		`+ env VITE_FUNCTIONS_URL=https://europe-west1-demo-p.cloudfunctions.net npm --prefix web run build`,
		`+ firebase deploy --only hosting --project demo-p --non-interactive`,
		`+ gcloud firestore fields ttls update expireAt --collection-group=locks --enable-ttl --project=demo-p --async`,
		`+ gcloud firestore fields ttls update expireAt --collection-group=seatLocks --enable-ttl --project=demo-p --async`,
		`+ gcloud firestore fields ttls update expireAt --collection-group=mutex_critical_data --enable-ttl --project=demo-p --async`,
	)
	got := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dry run printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	// A dry run only asks; it changes nothing.
	for _, line := range strings.Split(strings.TrimSpace(calls(t, logFile)), "\n") {
		if !strings.Contains(line, "runtimes list") && !strings.Contains(line, "describe") {
			t.Errorf("dry run ran %q", line)
		}
	}
}

func TestDeployRunsCommandsAndUpdatesExistingSchedulerJobs(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	// This time the scheduler jobs and the topic exist.
	dir := strings.SplitN(pathEnv, string(os.PathListSeparator), 2)[0]
	gcloud := filepath.Join(dir, "gcloud")
	b, _ := os.ReadFile(gcloud)
	os.WriteFile(gcloud, bytes.Replace(b, []byte("*describe*) exit 1"), []byte(`*"functions describe"*) echo projects/demo-p/locations/us-central1/triggers/runscheduledjob-1 ;;
  *"eventarc triggers describe runscheduledjob-1"*) echo projects/demo-p/subscriptions/eventarc-us-central1-runscheduledjob-1-sub-9 ;;
  *describe*) exit 0`), 1), 0o755)
	_, errOut, code := runDeploy(t, pathEnv, "--project=demo-p", "--region=us-central1", "--schedule", "*/15 * * * *", "--admit-schedule=*/2 * * * *",
		"--allowed-origins", "https://tickets.example.com,http://localhost:5173")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	log := calls(t, logFile)
	for _, want := range []string{
		"gcloud functions deploy BookSeats --gen2 --runtime=go126 --region=us-central1",
		"--set-env-vars=^;^FIRELOCK_ALLOWED_ORIGINS=https://tickets.example.com,http://localhost:5173,https://demo-p.web.app,https://demo-p.firebaseapp.com;FIRELOCK_METRICS=cloud;FIRELOCK_TRACES=cloud;FIRELOCK_APPCHECK=monitor;FIRELOCK_APPCHECK_APPS=",
		"gcloud functions deploy RunScheduledJob",
		"gcloud scheduler jobs update pubsub firelock-rollup-counters --location=us-central1 --project=demo-p --schedule=*/15 * * * *",
		`--message-body={"job": "rollupCounters", "schedule": "*/15 * * * *", "timeZone": "Etc/UTC"}`,
		"gcloud pubsub subscriptions update eventarc-us-central1-runscheduledjob-1-sub-9 --project=demo-p --ack-deadline=600 --min-retry-delay=10s --max-retry-delay=600s",
		"gcloud functions deploy JoinQueue --gen2 --runtime=go126 --region=us-central1",
		"gcloud scheduler jobs update pubsub firelock-admit-queue --location=us-central1 --project=demo-p --schedule=*/2 * * * *",
		`--message-body={"job": "admitQueue", "schedule": "*/2 * * * *", "timeZone": "Etc/UTC"}`,
		"firebase deploy --only firestore:rules,firestore:indexes --project demo-p",
		"npm --prefix web ci",
		"VITE_FUNCTIONS_URL=https://us-central1-demo-p.cloudfunctions.net npm --prefix web run build",
		"firebase deploy --only hosting --project demo-p",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("no call %q in:\n%s", want, log)
		}
	}
	if strings.Contains(log, "topics create") {
		t.Error("created a topic that exists")
	}
}

func TestDeployWithoutHostingLeavesTheWebAppAndItsOriginsOut(t *testing.T) {
	pathEnv, _ := fakeTools(t)
	out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--no-hosting")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `--set-env-vars=\^\;\^FIRELOCK_ALLOWED_ORIGINS=\;FIRELOCK_METRICS=cloud\;FIRELOCK_TRACES=cloud\;FIRELOCK_APPCHECK=monitor\;FIRELOCK_APPCHECK_APPS= --set-secrets`) {
		t.Errorf("origins were not left empty:\n%s", out)
	}
	for _, unwanted := range []string{"npm", "deploy --only hosting", "web.app"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("--no-hosting would still run %q:\n%s", unwanted, out)
		}
	}
}

// --no-metrics and --no-traces deploy every function with the export off.
func TestDeployWithoutMetricsOrTracesTurnsTheirExportOff(t *testing.T) {
	pathEnv, _ := fakeTools(t)
	for _, c := range []struct{ flag, env string }{{"--no-metrics", "FIRELOCK_METRICS"}, {"--no-traces", "FIRELOCK_TRACES"}} {
		out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", c.flag)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.flag, code, errOut)
		}
		if n := strings.Count(out, c.env+"=off"); n != len(functions.HTTPFunctions)+1 || strings.Contains(out, c.env+"=cloud") {
			t.Errorf("%s: %d functions deployed with %s=off, want all %d and none with cloud:\n%s", c.flag, n, c.env, len(functions.HTTPFunctions)+1, out)
		}
	}
}

func TestDeployChecksSettingsUpFront(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no settings", nil, 2, "missing --project --region"},
		{"no region", []string{"--project", "demo-p"}, 2, "missing --region"},
		{"flag without value", []string{"--project"}, 2, "--project needs a value"},
		{"unknown flag", []string{"--project=p", "--region=r", "--force"}, 2, "unknown argument: --force"},
		{"unknown runtime", []string{"--project=p", "--region=r", "--runtime=go999", "--dry-run"}, 1, "runtime go999 is not offered in r; offered: go125 go126"},
		{"origin with a path", []string{"--project=p", "--region=r", "--allowed-origins=https://a.example/app", "--dry-run"}, 2, "is not scheme://host[:port]"},
		{"wildcard origin", []string{"--project=p", "--region=r", "--allowed-origins=*", "--dry-run"}, 2, "is not scheme://host[:port]"},
		{"schedule not 5-field cron", []string{"--project=p", "--region=r", "--schedule", "0 0 * * * *", "--dry-run"}, 2, "is not a 5-field cron expression"},
		{"admit schedule not 5-field cron", []string{"--project=p", "--region=r", "--admit-schedule", "* * *", "--dry-run"}, 2, "is not a 5-field cron expression"},
		// Each admitQueue run admits until the next tick, within the 540 s
		// timeout: longer gaps would leave a sale unadmitted (issue #29.7).
		{"hourly admit schedule", []string{"--project=p", "--region=r", "--admit-schedule", "0 * * * *", "--dry-run"}, 2, "leaves up to 60 minutes between runs"},
		{"admit every 10 minutes", []string{"--project=p", "--region=r", "--admit-schedule", "*/10 * * * *", "--dry-run"}, 2, "leaves up to 10 minutes between runs"},
		{"admit schedule with a gap in the list", []string{"--project=p", "--region=r", "--admit-schedule", "0-30/6,31-59 * * * *", "--dry-run"}, 2, "leaves up to 6 minutes between runs"},
		{"admit in office hours only", []string{"--project=p", "--region=r", "--admit-schedule", "* 9-17 * * *", "--dry-run"}, 2, "leaves up to 1440 minutes between runs"},
		{"admit schedule of unknown syntax", []string{"--project=p", "--region=r", "--admit-schedule", "L * * * *", "--dry-run"}, 2, "is not a minute field this check knows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runDeploy(t, pathEnv, c.args...)
			if code != c.code || !strings.Contains(errOut, c.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, errOut, c.code, c.msg)
			}
		})
	}
	for _, line := range strings.Split(strings.TrimSpace(calls(t, logFile)), "\n") {
		if line != "" && !strings.Contains(line, "runtimes list") {
			t.Errorf("a refused deploy ran %q", line)
		}
	}
}

// Admit schedules that tick at least every 5 minutes of every hour pass.
func TestDeployAcceptsAdmitSchedulesWithoutGaps(t *testing.T) {
	pathEnv, _ := fakeTools(t)
	for _, s := range []string{"* * * * *", "*/5 * * * *", "0-59/2 * * * *", "1,4,7,10,13,16,19,22,25,28,31,34,37,40,43,46,49,52,55,58 * * * *", "0-30,31-59/5 * * * *"} {
		if _, errOut, code := runDeploy(t, pathEnv, "--project=p", "--region=r", "--admit-schedule", s, "--time-zone", "Europe/London", "--dry-run"); code != 0 {
			t.Errorf("admit schedule %q: exit %d: %s", s, code, errOut)
		}
	}
}

// Payments (CONTRACT §10): the Stripe secrets must exist in Secret Manager
// before anything is deployed; --no-payments deploys without them and
// without the two payment functions; a deploy says where Stripe's webhook
// goes, which events it takes, and the API version stripe-go pins.
func TestDeployTakesStripesSecretsFromSecretManager(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--stripe-key-secret=stripe-live-key")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	log := calls(t, logFile)
	for _, want := range []string{"gcloud secrets describe stripe-live-key --project=demo-p", "gcloud secrets describe STRIPE_WEBHOOK_SECRET --project=demo-p"} {
		if !strings.Contains(log, want) {
			t.Errorf("no call %q in:\n%s", want, log)
		}
	}
	for _, want := range []string{
		"--entry-point=CheckoutHold --trigger-http --allow-unauthenticated",
		"--entry-point=StripeWebhook --trigger-http --allow-unauthenticated",
		`--set-secrets=STRIPE_SECRET_KEY=stripe-live-key:latest\,STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET:latest`,
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

	t.Setenv("FAKE_NO_SECRETS", "STRIPE_SECRET_KEY STRIPE_WEBHOOK_SECRET")
	out, errOut, code = runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1")
	if code != 1 || !strings.Contains(errOut, "secret STRIPE_SECRET_KEY does not exist") || strings.Contains(out, "functions deploy") {
		t.Fatalf("without the secrets: exit %d, printed %q, %s", code, out, errOut)
	}
	out, errOut, code = runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--no-payments")
	if code != 0 || strings.Contains(out, "CheckoutHold") || strings.Contains(out, "StripeWebhook") || strings.Contains(out, "STRIPE") || strings.Contains(errOut, "webhook") ||
		strings.Count(out, "--set-secrets=FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:latest") != len(functions.HTTPFunctions)-2+1 {
		t.Fatalf("--no-payments: exit %d:\n%s\n%s", code, out, errOut)
	}
}

// Tickets (CONTRACT §13): the ticket key must exist in Secret Manager
// before anything is deployed, payments or not, and every function gets it
// (they sign the tickets of the bookings they confirm).
func TestDeployTakesTheTicketKeyFromSecretManager(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--no-payments", "--ticket-key-secret=door-key")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(calls(t, logFile), "gcloud secrets describe door-key --project=demo-p") {
		t.Errorf("the ticket key's secret was not looked for:\n%s", calls(t, logFile))
	}
	if n := strings.Count(out, "--set-secrets=FIRELOCK_TICKET_KEY=door-key:latest"); n != len(functions.HTTPFunctions)-2+1 {
		t.Errorf("%d functions get the ticket key, want every one deployed (%d):\n%s", n, len(functions.HTTPFunctions)-1, out)
	}
	for _, fn := range []string{"CheckIn", "TransferTicket", "TicketKeys"} {
		if !strings.Contains(out, "--entry-point="+fn+" --trigger-http --allow-unauthenticated") {
			t.Errorf("%s is not deployed:\n%s", fn, out)
		}
	}
	t.Setenv("FAKE_NO_SECRETS", "FIRELOCK_TICKET_KEY")
	out, errOut, code = runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1")
	if code != 1 || !strings.Contains(errOut, "secret FIRELOCK_TICKET_KEY (the ticket keys) does not exist") || strings.Contains(out, "functions deploy") {
		t.Fatalf("without the ticket key: exit %d, printed %q, %s", code, out, errOut)
	}
}

// App Check (CONTRACT §12): the HTTP functions are deployed in monitor by
// default; --app-check enforce and --app-check-apps go to each of them, and
// a mode that is none of the three is refused before anything runs.
func TestDeploySetsAppCheckMonitorByDefault(t *testing.T) {
	pathEnv, logFile := fakeTools(t)
	t.Setenv("VITE_RECAPTCHA_SITE_KEY", "")
	out, errOut, code := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--app-check", "enforce", "--app-check-apps=1:1:web:a,1:1:ios:b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The web app sends tokens only when built with a site key: enforce
	// without one is said out loud.
	if !strings.Contains(errOut, "VITE_RECAPTCHA_SITE_KEY is not set") {
		t.Errorf("enforce without VITE_RECAPTCHA_SITE_KEY gave no warning: %q", errOut)
	}
	t.Setenv("VITE_RECAPTCHA_SITE_KEY", "6Lc-site-key")
	if _, errOut, _ := runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1", "--app-check", "enforce"); strings.Contains(errOut, "VITE_RECAPTCHA_SITE_KEY") {
		t.Errorf("enforce with a site key warned: %q", errOut)
	}
	if n := strings.Count(out, `FIRELOCK_APPCHECK=enforce\;FIRELOCK_APPCHECK_APPS=1:1:web:a\,1:1:ios:b`); n != len(functions.HTTPFunctions) {
		t.Errorf("%d HTTP functions deployed with enforce and the apps, want %d:\n%s", n, len(functions.HTTPFunctions), out)
	}
	out, _, _ = runDeploy(t, pathEnv, "--dry-run", "--project=demo-p", "--region=us-central1")
	if n := strings.Count(out, `FIRELOCK_APPCHECK=monitor\;`); n != len(functions.HTTPFunctions) {
		t.Errorf("%d HTTP functions deployed with monitor by default, want %d", n, len(functions.HTTPFunctions))
	}
	if _, errOut, code := runDeploy(t, pathEnv, "--project=demo-p", "--region=us-central1", "--app-check", "sometimes"); code != 2 || !strings.Contains(errOut, "want enforce, monitor or off") {
		t.Errorf("--app-check sometimes: exit %d, %q", code, errOut)
	}
	if log := calls(t, logFile); strings.Contains(log, "functions deploy") {
		t.Errorf("a refused mode deployed something:\n%s", log)
	}
}
