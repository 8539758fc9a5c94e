package firelock

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxUpload bounds what Cloud Functions uploads of the source for each
// function (the module: about 1.6 MB today).
const maxUpload = 4 << 20

// Cloud Functions uploads what .gcloudignore lets through, once per
// function: never the CLI's build (bin/firelock, 54 MB), logs, test
// results or node_modules. gcloud itself lists the files (gcloud meta
// list-files-for-upload), for this tree as it is, and for a copy of the
// tracked files with such files planted; without .gcloudignore's
// #!include:.gitignore, the same copy lets them through (the check can
// fail).
func TestDeployUploadsNoBinariesOrLogs(t *testing.T) {
	listed := func(dir string) (files []string, size int64) {
		t.Helper()
		cmd := exec.Command("/usr/bin/gcloud", "meta", "list-files-for-upload", dir)
		cmd.Env = append(os.Environ(), "CLOUDSDK_CONFIG="+t.TempDir(), "CLOUDSDK_CORE_DISABLE_PROMPTS=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gcloud meta list-files-for-upload: %v", err)
		}
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fi, err := os.Stat(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(f))
			size += fi.Size()
		}
		return files, size
	}
	unwanted := func(f string) bool {
		base := filepath.Base(f)
		return strings.HasPrefix(f, "bin/") || strings.HasSuffix(f, ".log") || strings.Contains(f, "node_modules/") ||
			strings.HasSuffix(f, ".test") || base == "firelock" || strings.HasPrefix(f, "web/") || strings.HasSuffix(f, "_test.go") ||
			strings.Contains(f, "test-results/") || base == "firebase.deploy.json"
	}

	files, size := listed(".")
	for _, f := range files {
		if unwanted(f) {
			t.Errorf("this tree uploads %s", f)
		}
	}
	if size > maxUpload || !slices.Contains(files, "go.mod") || !slices.Contains(files, "firelock.go") {
		t.Errorf("this tree uploads %d files, %d bytes (at most %d, with go.mod and firelock.go)", len(files), size, maxUpload)
	}
	t.Logf("this tree uploads %d files, %d bytes", len(files), size)

	// A copy of the tracked files, with a build, logs and results planted.
	tracked, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		t.Skipf("no git checkout: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(tracked)), "\n") {
		if strings.HasPrefix(f, "web/") || strings.HasPrefix(f, "docs/") {
			continue // not uploaded anyway, and most of the copy
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue // deleted in the work tree
		}
		plant(t, filepath.Join(dir, f), b)
	}
	planted := []string{"bin/firelock", "firelock", "surge-functions.log", "bench-functions.log", "functions/functions.test",
		"tools/node_modules/firebase-tools/lib/index.js", "firebase.deploy.json", "firebase-debug.log"}
	for _, f := range planted {
		plant(t, filepath.Join(dir, f), bytes.Repeat([]byte{0x7f}, 6<<20))
	}
	files, size = listed(dir)
	for _, f := range files {
		if slices.Contains(planted, f) {
			t.Errorf("the upload takes the planted %s", f)
		}
	}
	if size > maxUpload {
		t.Errorf("the copy uploads %d bytes, more than %d", size, maxUpload)
	}
	ignore, err := os.ReadFile(".gcloudignore")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gcloudignore"), bytes.ReplaceAll(ignore, []byte("#!include:.gitignore"), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _ = listed(dir)
	if !slices.Contains(files, "bin/firelock") {
		t.Errorf("without #!include:.gitignore the upload still leaves bin/firelock out: the check above proves nothing")
	}
}

func plant(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The shell scripts pass ShellCheck (Debian's shellcheck, which
// scripts/deps.sh installs), and ShellCheck does object to what it should:
// a copy of deploy.sh with an unquoted expansion fails.
func TestShellScriptsPassShellCheck(t *testing.T) {
	shellcheck, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatalf("shellcheck is needed (make deps installs Debian's): %v", err)
	}
	scripts, _ := filepath.Glob("scripts/*.sh")
	scripts = append([]string{"deploy.sh"}, scripts...)
	if out, err := exec.Command(shellcheck, scripts...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", strings.Join(scripts, " "), err, out)
	}
	b, err := os.ReadFile("deploy.sh")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "deploy.sh")
	plant(t, bad, bytes.Replace(b, []byte(`cd "$(dirname "$0")"`), []byte(`cd $(dirname "$0")`), 1))
	if out, err := exec.Command(shellcheck, bad).CombinedOutput(); err == nil || !strings.Contains(string(out), "SC2046") {
		t.Errorf("shellcheck passed an unquoted command substitution: %v\n%s", err, out)
	}
}

// firebase.json and firestore.indexes.json pass firebase-tools' own checks
// (its config schema; the indexes' validation, which firebase deploy runs
// before any call), the config deploy.sh gives Hosting does too, and the
// indexes declare the TTL policy on the leases' expireAt (a later firebase
// deploy --force of the indexes would delete a policy they left out). Each
// check is shown failing on a planted fault.
func TestFirebaseConfigsPassFirebaseToolsChecks(t *testing.T) {
	tools, err := filepath.Abs("tools/node_modules/firebase-tools/lib")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tools); err != nil {
		t.Fatalf("firebase-tools is needed (make deps): %v", err)
	}
	node := func(script string, args ...string) (string, error) {
		cmd := exec.Command("node", append([]string{"-e", script, tools}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const validateConfig = `
const v = require(process.argv[1] + "/firebaseConfigValidate.js");
const c = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const ok = v.getValidator()(c);
if (!ok) { for (const e of v.getValidator().errors) console.log(v.getErrorMessage(e)); process.exit(1); }`
	const validateIndexes = `
const { FirestoreApi } = require(process.argv[1] + "/firestore/api.js");
const spec = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const api = new FirestoreApi();
api.validateSpec(api.upgradeOldSpec(spec));`

	hosting := filepath.Join(t.TempDir(), "firebase.deploy.json")
	if out, err := exec.Command("node", "scripts/hosting-config.mjs", "--site=demo-p", "--region=europe-west1",
		"--functions="+strings.Join(deployedHTTPFunctions(t), ","), "--out="+hosting).CombinedOutput(); err != nil {
		t.Fatalf("hosting-config: %v\n%s", err, out)
	}
	for _, f := range []string{"firebase.json", hosting} {
		if out, err := node(validateConfig, f); err != nil {
			t.Errorf("%s fails firebase-tools' schema: %v\n%s", f, err, out)
		}
	}
	if out, err := node(validateIndexes, "firestore.indexes.json"); err != nil {
		t.Errorf("firestore.indexes.json fails firebase-tools' validation: %v\n%s", err, out)
	}

	var indexes struct {
		FieldOverrides []struct {
			CollectionGroup, FieldPath string
			TTL                        bool
			Indexes                    []any
		}
	}
	if err := readJSON("firestore.indexes.json", &indexes); err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"locks", "seatLocks", "mutex_critical_data"} {
		found := false
		for _, o := range indexes.FieldOverrides {
			if o.CollectionGroup == group && o.FieldPath == "expireAt" {
				found = o.TTL && len(o.Indexes) == 0
			}
		}
		if !found {
			t.Errorf("firestore.indexes.json has no TTL policy on %s.expireAt (with the field left out of single-field indexes)", group)
		}
	}

	// Hosting's config: the site, and each rewrite to a deployed function
	// in the functions' region.
	var cfg map[string]any
	if err := readJSON(hosting, &cfg); err != nil {
		t.Fatal(err)
	}
	h := cfg["hosting"].(map[string]any)
	routed := map[string]string{}
	for _, r := range h["rewrites"].([]any) {
		r := r.(map[string]any)
		if fn, ok := r["function"].(map[string]any); ok {
			routed[r["source"].(string)] = fn["functionId"].(string) + "@" + fn["region"].(string)
		}
	}
	if h["site"] != "demo-p" || routed["/SaleState"] != "SaleState@europe-west1" || routed["/TicketKeys"] != "TicketKeys@europe-west1" {
		t.Errorf("Hosting's config: site %v, rewrites %v", h["site"], routed)
	}

	// The checks fail on planted faults: an unknown key in a rewrite, and
	// a field override without its indexes.
	dir := t.TempDir()
	fb, _ := os.ReadFile("firebase.json")
	plant(t, filepath.Join(dir, "firebase.json"), bytes.Replace(fb, []byte(`"functionId"`), []byte(`"functionID"`), 1))
	if out, err := node(validateConfig, filepath.Join(dir, "firebase.json")); err == nil {
		t.Errorf("the schema passed a rewrite with functionID:\n%s", out)
	}
	ix, _ := os.ReadFile("firestore.indexes.json")
	var spec map[string]any
	if err := json.Unmarshal(ix, &spec); err != nil {
		t.Fatal(err)
	}
	overrides := spec["fieldOverrides"].([]any)
	delete(overrides[len(overrides)-1].(map[string]any), "indexes")
	ix, _ = json.Marshal(spec)
	plant(t, filepath.Join(dir, "firestore.indexes.json"), ix)
	if out, err := node(validateIndexes, filepath.Join(dir, "firestore.indexes.json")); err == nil {
		t.Errorf("the indexes' validation passed an override without indexes:\n%s", out)
	}
}
