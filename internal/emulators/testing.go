package emulators

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
	gonanoid "github.com/matoous/go-nanoid/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// RunTests is the body of a package's TestMain: it starts the emulators,
// runs the tests and stops the emulators again, whatever the tests did.
//
//	func TestMain(m *testing.M) { os.Exit(emulators.RunTests(m, emulators.Firestore)) }
func RunTests(m *testing.M, kinds ...Kind) int {
	r, err := Start(context.Background(), kinds...)
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

// NewFirestore returns an admin client (rules do not apply to it) for a
// fresh project of the running Firestore emulator, closed when tb ends.
func NewFirestore(tb testing.TB) *firestore.Client {
	tb.Helper()
	return NewFirestoreFor(tb, ProjectID(tb))
}

// NewFirestoreFor is NewFirestore for a given project ID.
func NewFirestoreFor(tb testing.TB, projectID string) *firestore.Client {
	tb.Helper()
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		tb.Fatal("FIRESTORE_EMULATOR_HOST is not set: call emulators.RunTests from TestMain")
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

// NewFirestoreVia is NewFirestoreFor reaching the emulator through host
// (a fault proxy in front of it) on a connection of its own. It returns the
// client options it was made with: give them to lock.WithClientOptions so
// the lock's commits take the same path.
func NewFirestoreVia(tb testing.TB, host, projectID string) (*firestore.Client, []option.ClientOption) {
	tb.Helper()
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(EmulatorAdmin{}),
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

// EmulatorAdmin authenticates gRPC calls as the Firestore emulator's admin
// ("Bearer owner"), as the Admin SDK does there: rules do not apply.
type EmulatorAdmin struct{}

func (EmulatorAdmin) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

// RequireTransportSecurity is false: the emulator speaks plain gRPC on loopback.
func (EmulatorAdmin) RequireTransportSecurity() bool { return false }

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
