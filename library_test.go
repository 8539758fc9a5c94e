package firelock

import (
	"os/exec"
	"strings"
	"testing"
)

// The library stands alone (issue #52): lock, jobs and counter, and the
// test kit, reach nothing of the cinema app, so a user's module that
// imports them builds none of it.
func TestLibraryReachesNothingOfTheApp(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./lock", "./jobs", "./counter", "./firelocktest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	app := []string{"booking", "sale", "payment", "functions", "report", "ticket", "door", "cmd/"}
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, "github.com/firelock/firelock/")
		if !ok {
			continue
		}
		for _, a := range app {
			if rest == a || strings.HasPrefix(rest, strings.TrimSuffix(a, "/")+"/") {
				t.Errorf("the library reaches the app's %s", pkg)
			}
		}
	}
}
