package telemetry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var instruments = []string{LockAcquireDuration, LockLeaseLost, BookingRequests, BookingDuration, SaleAdmissions, SaleWaiting, SaleActivePasses, JobsRuns, Payments, AppCheckVerifications, CheckIns}

// docs/metrics.md names every instrument with its Cloud Monitoring type,
// and the dashboard and alerts of docs/monitoring/ use only real metric
// types and labels: a renamed instrument fails here, not in production.
func TestDocsNameTheInstrumentsAsCloudMonitoringSeesThem(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range instruments {
		if !strings.Contains(string(doc), "`"+name+"`") || !strings.Contains(string(doc), "workload.googleapis.com/"+name) {
			t.Errorf("docs/metrics.md does not name %s and workload.googleapis.com/%s", name, name)
		}
	}
	known := map[string]bool{}
	for _, name := range instruments {
		known[name] = true
	}
	labels := map[string]bool{}
	for _, k := range []string{string(Result), string(Operation), string(Code), string(Screening), string(Job), string(Outcome)} {
		labels[strings.ReplaceAll(k, ".", "_")] = true
	}
	typeRE := regexp.MustCompile(`workload\.googleapis\.com/([a-z_.]+[a-z])`)
	labelRE := regexp.MustCompile(`metric\.label\.([a-z_]+)`)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "monitoring", "*.json"))
	if len(files) < 3 {
		t.Fatalf("docs/monitoring holds %v: want the dashboard and two alerts", files)
	}
	for _, f := range append(files, filepath.Join(root, "docs", "metrics.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".json") {
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		for _, m := range typeRE.FindAllStringSubmatch(string(b), -1) {
			if !known[m[1]] {
				t.Errorf("%s: workload.googleapis.com/%s is no instrument of CONTRACT §9", f, m[1])
			}
		}
		for _, m := range labelRE.FindAllStringSubmatch(string(b), -1) {
			if !labels[m[1]] {
				t.Errorf("%s: metric.label.%s is no attribute of CONTRACT §9", f, m[1])
			}
		}
	}
}
