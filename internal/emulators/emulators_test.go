package emulators

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// go test ./... starts one Auth emulator per package that needs ID tokens,
// all at once; firebase-tools instances must not collide on their hub and
// logging ports or their per-project locator file.
func TestAuthEmulatorsStartSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three firebase-tools processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 3
	sets := make([]*Running, n)
	hosts := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sets[i] = &Running{hosts: map[Kind]string{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hosts[i], errs[i] = sets[i].launch(ctx, Auth)
		}()
	}
	wg.Wait()
	defer func() {
		for _, r := range sets {
			r.Stop()
		}
	}()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		if seen[hosts[i]] {
			t.Fatalf("two instances report %s", hosts[i])
		}
		seen[hosts[i]] = true
		if err := waitHealthy(ctx, Auth, hosts[i], nil); err != nil {
			t.Fatalf("instance %d on %s: %v", i, hosts[i], err)
		}
	}
}

func TestMissingPrerequisiteIsNotRetried(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("FIRESTORE_EMULATOR_HOST", "")
	_, err := Start(context.Background(), Firestore)
	if err == nil {
		t.Fatal("Start without java on PATH succeeded")
	}
	var missing *prerequisiteError
	if !errors.As(err, &missing) {
		t.Fatalf("error %v is not reported as a missing prerequisite", err)
	}
	if !strings.Contains(err.Error(), "java") {
		t.Fatalf("error %q does not say what to install", err)
	}
}
