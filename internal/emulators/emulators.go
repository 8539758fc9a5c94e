// Package emulators starts the real Firestore, Pub/Sub and Firebase Auth
// emulators on free loopback ports for tests, benchmarks and the local run.
//
// An emulator whose *_EMULATOR_HOST variable is already set is reused, not
// started. Started emulators run in their own process group and die with the
// process that started them (Linux parent-death signal), so a test binary
// that panics leaves nothing behind.
package emulators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Kind names an emulator.
type Kind string

// The emulators this package can start.
const (
	Firestore Kind = "firestore"
	PubSub    Kind = "pubsub"
	Auth      Kind = "auth"
)

// envVar is the variable the Google and Firebase client libraries read.
var envVar = map[Kind]string{
	Firestore: "FIRESTORE_EMULATOR_HOST",
	PubSub:    "PUBSUB_EMULATOR_HOST",
	Auth:      "FIREBASE_AUTH_EMULATOR_HOST",
}

// FullJIT gives the Java emulators (Firestore, Pub/Sub) the JVM's own
// defaults: both of its compilers and its parallel collector. Programs that
// measure the emulator's speed (cmd/surge, cmd/bench) set it before Start.
// Otherwise the JVM is lean (leanJava): an emulator of a test lives a minute
// or two, and there the optimizing compiler and the parallel collector cost
// more CPU than they save (docs/testing.md: booking's tests 79 → 56
// CPU-seconds, in no more wall time). FIRELOCK_EMULATOR_JAVA_OPTS, when set
// (even empty), replaces both.
var FullJIT bool

// leanJava stops the JVM at its quick compiler (C1) and collects garbage
// on one thread.
const leanJava = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

// javaOptions are the JVM options of a Java emulator started now.
func javaOptions() []string {
	if v, ok := os.LookupEnv("FIRELOCK_EMULATOR_JAVA_OPTS"); ok {
		return strings.Fields(v)
	}
	if FullJIT {
		return nil
	}
	return strings.Fields(leanJava)
}

// Running is a set of emulators, some started here and some reused.
type Running struct {
	mu    sync.Mutex
	hosts map[Kind]string
	procs []*process
}

type process struct {
	kind Kind
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
	// cleanup removes what command made for this process (a config folder).
	cleanup func()
}

// Start makes every kind available: it reuses one named by its environment
// variable or starts one, waits until it answers, and sets the variable so
// the client libraries in this process find it. Stop undoes what Start did.
func Start(ctx context.Context, kinds ...Kind) (*Running, error) {
	r := &Running{hosts: map[Kind]string{}}
	for _, k := range kinds {
		if err := r.start(ctx, k); err != nil {
			r.Stop()
			return nil, err
		}
	}
	return r, nil
}

// Host is the host:port of an emulator of the set.
func (r *Running) Host(k Kind) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hosts[k]
}

// Started reports whether this set started the emulator (rather than reusing one).
func (r *Running) Started(k Kind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.procs {
		if p.kind == k {
			return true
		}
	}
	return false
}

// Stop ends the emulators this set started and waits for them to exit.
func (r *Running) Stop() {
	r.mu.Lock()
	procs := r.procs
	r.procs = nil
	r.mu.Unlock()
	for _, p := range procs {
		p.stop()
		os.Unsetenv(envVar[p.kind])
	}
}

func (r *Running) start(ctx context.Context, k Kind) error {
	if host := os.Getenv(envVar[k]); host != "" {
		if err := waitHealthy(ctx, k, host, nil); err != nil {
			return fmt.Errorf("emulators: %s=%s does not answer: %w", envVar[k], host, err)
		}
		r.mu.Lock()
		r.hosts[k] = host
		r.mu.Unlock()
		return nil
	}
	// A free port can be taken by someone else before the emulator binds it
	// (go test runs packages in parallel, each starting emulators), so a
	// failed start is tried once more on fresh ports.
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		var host string
		if host, err = r.launch(ctx, k); err == nil {
			r.mu.Lock()
			r.hosts[k] = host
			r.mu.Unlock()
			return os.Setenv(envVar[k], host)
		}
		var missing *prerequisiteError
		if ctx.Err() != nil || errors.As(err, &missing) {
			break
		}
	}
	return err
}

// launch starts one emulator process on a fresh port and waits until it
// answers; a process that does not come up is stopped again, and the error
// carries its output.
func (r *Running) launch(ctx context.Context, k Kind) (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cmd, err := command(k, port)
	if err != nil {
		return "", &prerequisiteError{err}
	}
	p := &process{kind: k, cmd: cmd, log: &bytes.Buffer{}, done: make(chan struct{})}
	if cmd.Dir != "" { // command gives a process a working folder only when it made one for it
		p.cleanup = func() { os.RemoveAll(cmd.Dir) }
	}
	cmd.Stdout = &lockedWriter{w: p.log}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if p.cleanup != nil {
			p.cleanup()
		}
		return "", fmt.Errorf("emulators: start %s emulator: %w", k, err)
	}
	go func() { cmd.Wait(); close(p.done) }()

	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err = waitHealthy(wctx, k, host, p.done)
	if err == nil {
		// Whatever answered must be ours: an emulator that lost its port
		// to another process exits, while that process answers for it.
		select {
		case <-p.done:
			err = fmt.Errorf("the %s emulator exited after %s answered (the port was taken)", k, host)
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		p.stop()
		return "", fmt.Errorf("emulators: %s emulator did not come up on %s: %w\n%s", k, host, err, p.output())
	}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	return host, nil
}

func (p *process) output() string {
	w := p.cmd.Stdout.(*lockedWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	out := p.log.String()
	if len(out) > 4000 {
		out = "..." + out[len(out)-4000:]
	}
	return out
}

func (p *process) stop() {
	if p.cmd.Process == nil {
		return
	}
	if p.cleanup != nil {
		defer p.cleanup()
	}
	// The whole group: the Auth emulator is node under npx, the others may be
	// wrapped in a shell script.
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// prerequisiteError is a start that cannot succeed on another try: something
// the emulator needs is not installed.
type prerequisiteError struct{ error }

func (e *prerequisiteError) Unwrap() error { return e.error }

// command builds the command line of one emulator. Missing prerequisites are
// reported as one message that says what to install.
func command(k Kind, port int) (*exec.Cmd, error) {
	switch k {
	case Firestore:
		java, err := javaPath()
		if err != nil {
			return nil, err
		}
		jar, err := sdkFile("platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
			"google-cloud-cli-firestore-emulator", "cloud-firestore-emulator")
		if err != nil {
			return nil, err
		}
		args := append(javaOptions(), "-Duser.language=en", "-cp", jar,
			"com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
			"--host=127.0.0.1", fmt.Sprintf("--port=%d", port))
		// firelock's own rules inside its repository; elsewhere (a user's
		// module with the test kit) none: admin clients bypass rules.
		if rules, err := RulesFile(); err == nil {
			args = append(args, "--rules="+rules)
		}
		return exec.Command(java, args...), nil
	case PubSub:
		if _, err := javaPath(); err != nil {
			return nil, err
		}
		bin, err := sdkFile("platform/pubsub-emulator/bin/cloud-pubsub-emulator",
			"google-cloud-cli-pubsub-emulator", "pubsub-emulator")
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "--host=127.0.0.1", fmt.Sprintf("--port=%d", port))
		// The script passes JAVA_OPTS to java, after its own defaults.
		cmd.Env = append(os.Environ(), "JAVA_OPTS="+strings.TrimSpace(os.Getenv("JAVA_OPTS")+" "+strings.Join(javaOptions(), " ")))
		return cmd, nil
	case Auth:
		return authCommand(port)
	}
	return nil, fmt.Errorf("emulators: unknown kind %q", k)
}

func javaPath() (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("emulators: java not found on PATH; the Firestore and Pub/Sub emulators need Java 17 or later " +
			"(Debian/Ubuntu: apt-get install openjdk-17-jre-headless)")
	}
	return java, nil
}

// sdkFile finds a file of the Google Cloud SDK: under $CLOUDSDK_ROOT_DIR, the
// Debian package's /usr/lib/google-cloud-sdk, or next to the gcloud on PATH.
func sdkFile(rel, debPackage, component string) (string, error) {
	var roots []string
	if root := os.Getenv("CLOUDSDK_ROOT_DIR"); root != "" {
		roots = append(roots, root)
	}
	roots = append(roots, "/usr/lib/google-cloud-sdk", "/usr/share/google-cloud-sdk", "/google-cloud-sdk")
	if gcloud, err := exec.LookPath("gcloud"); err == nil {
		if real, err := filepath.EvalSymlinks(gcloud); err == nil {
			roots = append(roots, filepath.Dir(filepath.Dir(real)))
		}
	}
	for _, root := range roots {
		p := filepath.Join(root, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("emulators: %s not found in the Google Cloud SDK (looked in %s); install it: "+
		"apt-get install %s, or gcloud components install %s", filepath.Base(rel), strings.Join(roots, ", "), debPackage, component)
}

// RulesFile is the absolute path of the project's firestore.rules.
func RulesFile() (string, error) {
	root, err := ProjectRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "firestore.rules"), nil
}

// ProjectRoot is the directory of firelock's go.mod, found from the working
// directory upwards (tests run in their package directory).
func ProjectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/firelock/firelock\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("emulators: firelock's go.mod not found above the working directory; run from the firelock checkout (make run, make test)")
		}
		dir = parent
	}
}

var (
	portsMu sync.Mutex
	given   = map[int]bool{} // ports FreePort handed out in this process
)

// FreePort returns a free loopback TCP port, never one it returned before
// in this process: the kernel may hand a just-closed port to the next
// caller, and two emulators started side by side must not share one.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("emulators: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
	return 0, errors.New("emulators: no fresh free port after 100 tries")
}

// waitHealthy polls the emulator's HTTP root until it answers 200, the
// process exits or ctx ends.
func waitHealthy(ctx context.Context, k Kind, host string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get("http://" + host + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("the %s emulator exited", k)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// WaitListening waits up to 5s for something to accept connections on a
// loopback port.
func WaitListening(tb testing.TB, port int) {
	tb.Helper()
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("nothing listens on 127.0.0.1:%d", port)
}

// RetryCancelled runs write until it does not fail with codes.Canceled,
// at most 20 times. The Firestore emulator delivers a commit's change to
// the document's listeners inside the commit, and fails the commit with
// CANCELLED ("call already cancelled") when one of them was closed by its
// client and not yet forgotten (a `firelock sale watch` that has exited,
// a shopper's map after its pass); each such commit rids it of one. Tests
// that write a document something just stopped watching use this, so
// that they test what they name and not that fault (docs/surge.md).
func RetryCancelled(write func() error) error {
	var err error
	for range 20 {
		if err = write(); status.Code(err) != codes.Canceled {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Admin authenticates gRPC calls as the Firestore emulator's admin
// ("Bearer owner"), as the Admin SDK does there: rules do not apply.
type Admin struct{}

func (Admin) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

// RequireTransportSecurity is false: the emulator speaks plain gRPC on loopback.
func (Admin) RequireTransportSecurity() bool { return false }
