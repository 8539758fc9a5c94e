// Package firelocktest is firelock's test kit: what firelock's own tests
// use, for tests of your code on top of firelock. It starts the real
// Firestore emulator (or uses the one FIRESTORE_EMULATOR_HOST names), gives
// each test a project of its own, so tests in parallel see only their own
// documents, and puts a fault proxy between a client and the emulator to
// lose, delay or reset its answers: the ambiguous outcomes a Cloud
// Function meets when the network fails mid-call.
//
// The Firestore emulator is the gcloud component cloud-firestore-emulator
// (Debian/Ubuntu: apt-get install google-cloud-cli-firestore-emulator) and
// needs Java 11+. A missing prerequisite fails Main with a message naming
// it.
//
//	func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }
//
//	func TestMyHandler(t *testing.T) {
//		client := firelocktest.NewClient(t) // a fresh project, closed when t ends
//		...
//	}
package firelocktest

import (
	"context"
	"flag"
	"fmt"
	"net"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Emulator names an emulator Main can start.
type Emulator = emulators.Kind

// The emulators Main can start. Firestore is the one firelock needs; PubSub
// (gcloud's pubsub-emulator component) is for code that publishes; Auth is
// the Firebase Auth emulator of firebase-tools, which Main starts only
// inside firelock's own repository (elsewhere, run it yourself and set
// FIREBASE_AUTH_EMULATOR_HOST).
const (
	Firestore = emulators.Firestore
	PubSub    = emulators.PubSub
	Auth      = emulators.Auth
)

// Main is the body of a package's TestMain: it makes the emulators
// available (Firestore when none is named), runs the tests and stops what
// it started, whatever the tests did. An emulator whose *_EMULATOR_HOST
// variable is set already is used, not started. Started emulators die
// with the test binary, even when it panics.
//
//	func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }
func Main(m *testing.M, kinds ...Emulator) int {
	if len(kinds) == 0 {
		kinds = []Emulator{Firestore}
	}
	r, err := emulators.Start(context.Background(), kinds...)
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

// ProjectID returns a fresh project ID: the emulator keeps each project's
// data apart, so a test that uses its own project sees only its own documents.
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
func NewClient(tb testing.TB) *firestore.Client {
	tb.Helper()
	return NewClientFor(tb, ProjectID(tb))
}

// NewClientFor is NewClient for a given project ID.
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

// NewClientVia is NewClientFor reaching the emulator through host
// (a fault proxy in front of it) on a connection of its own. It returns the
// client options it was made with: give them to lock.WithClientOptions so
// the lock's commits take the same path.
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
