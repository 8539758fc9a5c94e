// Package firelocktest is the test kit for code built on firelock: what
// firelock's own tests use, for your tests of your functions. It runs them
// against the real Firestore emulator, not a fake: a lease, a job run and
// a counter behave in a test as they do deployed.
//
//   - Main, in TestMain, starts the emulator once per test binary (or uses
//     the one FIRESTORE_EMULATOR_HOST names) and stops it afterwards.
//   - NewClient gives each test a project of its own (demo-<random>), so
//     tests run in parallel without seeing each other's documents, and
//     nothing is left to clean up.
//   - NewProxy puts a fault-injecting proxy between a client and the
//     emulator (NewClientVia): it loses answers after the server processed
//     the request, delays or resets them, the ambiguous outcomes a Cloud
//     Function meets when the network fails mid-call.
//
// A test file of your own:
//
//	func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }
//
//	func TestReportRunsOnce(t *testing.T) {
//		t.Parallel()
//		client := firelocktest.NewClient(t) // a fresh project, closed when t ends
//		locker, err := lock.New(client, "locks")
//		...
//	}
//
// Costs: Main starts one emulator per test binary (a JVM: a few seconds);
// a client is a connection; a project costs nothing to make or drop.
//
// Prerequisites: the emulator is the gcloud component
// cloud-firestore-emulator (Debian/Ubuntu: apt-get install
// google-cloud-cli-firestore-emulator) and needs Java 17 or later; a
// missing one fails Main with a message naming what to install. Outside
// firelock's repository it starts without security rules: the kit's
// clients are admin clients, which rules do not apply to. To test your
// rules with a client SDK, run the emulator yourself (firebase
// emulators:start) and set FIRESTORE_EMULATOR_HOST: Main uses it.
package firelocktest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/internal/emulators"
	gonanoid "github.com/matoous/go-nanoid/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// Emulator names an emulator Main can start.
type Emulator string

// The emulators Main can start. Firestore is the one firelock needs; PubSub
// (gcloud's pubsub-emulator component) is for code that publishes; Auth is
// the Firebase Auth emulator of firebase-tools, which Main starts only
// inside firelock's own repository (elsewhere, run it yourself and set
// FIREBASE_AUTH_EMULATOR_HOST).
const (
	Firestore Emulator = Emulator(emulators.Firestore)
	PubSub    Emulator = Emulator(emulators.PubSub)
	Auth      Emulator = Emulator(emulators.Auth)
)

// Main is the body of a package's TestMain: it makes the emulators
// available (Firestore when none is named), runs the tests and stops what
// it started, whatever the tests did, and returns the exit code. An
// emulator whose *_EMULATOR_HOST variable is set already is used, not
// started; one it starts gets that variable set, so the client libraries
// find it. Started emulators die with the test binary, even when it
// panics. An emulator that cannot start (a prerequisite missing: the
// message names it) fails the binary with exit code 2 before any test.
//
//	func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }
func Main(m *testing.M, kinds ...Emulator) int {
	if len(kinds) == 0 {
		kinds = []Emulator{Firestore}
	}
	start := make([]emulators.Kind, len(kinds))
	for i, k := range kinds {
		start[i] = emulators.Kind(k)
	}
	r, err := emulators.Start(context.Background(), start...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer r.Stop()
	return m.Run()
}

// SideBySide lets up to n of a package's parallel tests (t.Parallel) run
// at once, instead of GOMAXPROCS (2 on a small machine), unless
// -test.parallel was given on the command line. Call it first in TestMain:
// it parses the test flags. For tests that mostly wait (for leases to end,
// runs to finish, answers held back by a fault proxy), each on a project of
// its own; tests that measure how long something took, or that change
// process-wide state (planted bugs, environment variables, goroutine
// counts), stay sequential: parallel tests start only once every
// sequential test of the package has finished.
func SideBySide(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(n))
	}
}

// ProjectID returns a fresh project ID, demo-<12 random characters>: the
// emulator keeps each project's data apart, so a test that uses its own
// project sees only its own documents. No RPC.
func ProjectID(tb testing.TB) string {
	tb.Helper()
	id, err := gonanoid.Generate("abcdefghijklmnopqrstuvwxyz0123456789", 12)
	if err != nil {
		tb.Fatal(err)
	}
	return "demo-" + id
}

// NewClient returns an admin client (rules do not apply to it) for a
// fresh project of the running Firestore emulator, closed when tb ends.
// No RPC: the connection opens on first use. It fails tb unless Main (or
// FIRESTORE_EMULATOR_HOST) named an emulator.
func NewClient(tb testing.TB) *firestore.Client {
	tb.Helper()
	return NewClientFor(tb, ProjectID(tb))
}

// NewClientFor is NewClient for a given project ID, which must start with
// demo- (so nothing can reach a real project): a second client of a test's
// project, to read what Firestore holds past a fault proxy, say.
func NewClientFor(tb testing.TB, projectID string) *firestore.Client {
	tb.Helper()
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		tb.Fatal("FIRESTORE_EMULATOR_HOST is not set: call firelocktest.Main from TestMain")
	}
	if !strings.HasPrefix(projectID, "demo-") {
		tb.Fatalf("project %q: test projects start with demo- so nothing can reach a real project", projectID)
	}
	c, err := firestore.NewClient(context.Background(), projectID)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// NewClientVia is NewClientFor reaching the emulator through host (a
// Proxy's Addr) on a connection of its own, closed when tb ends. It returns
// the client options it was made with: give them to lock.WithClientOptions
// so the lock's commits take the same path. No RPC.
func NewClientVia(tb testing.TB, host, projectID string) (*firestore.Client, []option.ClientOption) {
	tb.Helper()
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulators.Admin{}),
		// A fault proxy's faults last a few hundred ms: reconnect as soon
		// as it heals, not after gRPC's default backoff (1 s, growing to
		// 2 min), which would keep a connection down long after.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		tb.Fatal(err)
	}
	opts := []option.ClientOption{option.WithGRPCConn(conn)}
	c, err := firestore.NewClient(context.Background(), projectID, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return c, opts
}
