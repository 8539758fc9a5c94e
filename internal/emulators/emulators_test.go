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

// The Java emulators run lean by default, as the JVM's defaults when a
// program asks (FullJIT), and as FIRELOCK_EMULATOR_JAVA_OPTS says wherever
// it is set, even empty.
func TestJavaEmulatorsTakeTheirJVMOptions(t *testing.T) {
	firestoreArgs := func() string {
		t.Helper()
		cmd, err := command(Firestore, 1)
		if err != nil {
			t.Skip(err) // no Java or emulator here: nothing to start
		}
		return strings.Join(cmd.Args, " ")
	}
	pubsubEnv := func() string {
		t.Helper()
		cmd, err := command(PubSub, 1)
		if err != nil {
			t.Skip(err)
		}
		last := "" // os/exec passes the last of a name's values
		for _, e := range cmd.Env {
			if strings.HasPrefix(e, "JAVA_OPTS=") {
				last = e
			}
		}
		return last
	}
	if got := firestoreArgs(); !strings.Contains(got, " "+leanJava+" -Duser.language=en") {
		t.Errorf("firestore by default: %q, want the lean options before the class path", got)
	}
	if got := pubsubEnv(); got != "JAVA_OPTS="+leanJava {
		t.Errorf("pubsub by default: %q, want JAVA_OPTS=%s", got, leanJava)
	}
	FullJIT = true
	got := firestoreArgs()
	FullJIT = false
	if strings.Contains(got, "-XX:") {
		t.Errorf("firestore with FullJIT: %q, want the JVM's defaults", got)
	}
	t.Setenv("FIRELOCK_EMULATOR_JAVA_OPTS", "")
	if got := firestoreArgs(); strings.Contains(got, "-XX:") {
		t.Errorf("firestore with FIRELOCK_EMULATOR_JAVA_OPTS empty: %q, want no options", got)
	}
	t.Setenv("FIRELOCK_EMULATOR_JAVA_OPTS", "-Xmx1g")
	if got := firestoreArgs(); !strings.Contains(got, " -Xmx1g -Duser.language=en") || strings.Contains(got, "-XX:") {
		t.Errorf("firestore with FIRELOCK_EMULATOR_JAVA_OPTS=-Xmx1g: %q, want just that", got)
	}
	t.Setenv("JAVA_OPTS", "-Dx=1")
	if got := pubsubEnv(); got != "JAVA_OPTS=-Dx=1 -Xmx1g" {
		t.Errorf("pubsub with JAVA_OPTS set: %q, want it kept, the options after it", got)
	}
}
