package door

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/firelock/firelock/ticket"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// tappedDoor is a door Service whose client reaches the emulator through a
// fault proxy; its tap runs before each unary RPC, so a test can start a
// fault right before an exact call.
type tappedDoor struct {
	*env
	proxy *firelocktest.Proxy
	svc   *Service
	mu    sync.Mutex
	tap   func(method string, req any)
}

func newTappedDoor(t *testing.T) *tappedDoor {
	t.Helper()
	e := newEnv(t)
	td := &tappedDoor{env: e, proxy: firelocktest.NewProxy(t, os.Getenv("FIRESTORE_EMULATOR_HOST"))}
	conn, err := grpc.NewClient(td.proxy.Addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulators.Admin{}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			td.mu.Lock()
			f := td.tap
			td.mu.Unlock()
			if f != nil {
				f(method, req)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := firestore.NewClient(context.Background(), e.project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	td.svc = New(c, e.keys)
	return td
}

// loseNextCommitAnswer drops every answer from right before the next
// Commit of a transaction until healAfter: the commit lands, its caller
// hears nothing (and the client library sends it again, which Firestore
// refuses: the transaction is closed).
func (td *tappedDoor) loseNextCommitAnswer(t *testing.T, healAfter time.Duration) {
	var once sync.Once
	td.mu.Lock()
	td.tap = func(method string, req any) {
		if c, ok := req.(*pb.CommitRequest); ok && len(c.Transaction) > 0 {
			once.Do(func() {
				if err := td.proxy.DropAnswers(200 * time.Millisecond); err != nil {
					t.Error(err)
				}
				time.AfterFunc(healAfter, td.proxy.Heal)
			})
		}
	}
	td.mu.Unlock()
}

// A CheckIn whose commit landed but whose answer was lost finds its own
// check-in when it reads again (the nonce), and answers admitted: one
// entry, one scan recorded. Sent again by its caller, it answers the same.
func TestACheckInWhoseAnswerIsLostAnswersAdmittedOnce(t *testing.T) {
	t.Parallel()
	td := newTappedDoor(t)
	ctx := context.Background()
	tk := td.book("s1", "A1", "alice")
	r := td.scan(tk.Code, "A")
	td.loseNextCommitAnswer(t, time.Second)
	got, err := td.svc.CheckIn(ctx, r)
	if err != nil || got.Result != ResultAdmitted {
		t.Fatalf("a scan whose commit's answer was lost: %+v %v, want admitted", got, err)
	}
	if td.proxy.Faults() == 0 {
		t.Fatal("no answer was lost: the test proves nothing")
	}
	again, err := td.svc.CheckIn(ctx, r)
	if err != nil || again != got {
		t.Fatalf("sent again: %+v %v, want %+v", again, err, got)
	}
	td.checkOneEntry(tk, r.Nonce)
}

// A CheckIn whose caller gave up (the answer lost until after its
// deadline) and sends it again with the same nonce: the retry answers what
// the first attempt did, admitted or refused, and nothing more is written.
func TestACheckInRetriedAfterItsCallGaveUpAnswersTheSame(t *testing.T) {
	t.Parallel()
	td := newTappedDoor(t)
	tk := td.book("s1", "A1", "alice")
	for _, c := range []struct {
		gate, want string
	}{{"A", ResultAdmitted}, {"B", ResultAlreadyIn}} {
		r := td.scan(tk.Code, c.gate)
		td.loseNextCommitAnswer(t, 2500*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := td.svc.CheckIn(ctx, r)
		cancel()
		if err == nil || Code(err) != "unavailable" {
			t.Fatalf("%s at %s, its answer lost past the deadline: %v, want unavailable", c.want, c.gate, err)
		}
		time.Sleep(2 * time.Second) // healed
		got, err := td.svc.CheckIn(context.Background(), r)
		var refused *Refusal
		switch {
		case c.want == ResultAdmitted && (err != nil || got.Result != ResultAdmitted):
			t.Fatalf("the retry: %+v %v, want admitted", got, err)
		case c.want == ResultAlreadyIn && (!errors.As(err, &refused) || refused.Result != ResultAlreadyIn || refused.Gate != "A"):
			t.Fatalf("the retry: %v, want already_in at A", err)
		}
		if rec := td.record("s1", r.Nonce); rec.Result != c.want {
			t.Fatalf("recorded %+v, want %s", rec, c.want)
		}
	}
	if scans, checkins := td.docs("s1"); scans != 2 || checkins != 1 {
		t.Fatalf("%d scans and %d check-ins recorded, want 2 and 1", scans, checkins)
	}
}

// checkOneEntry: the ticket has one check-in, by nonce, and s1 one scan.
func (td *tappedDoor) checkOneEntry(tk ticket.Ticket, nonce string) {
	td.t.Helper()
	c, ok := td.checkIn(tk.ID)
	if !ok || c.Nonce != nonce || c.Seq != 1 {
		td.t.Fatalf("check-in %+v (%v), want the entry of %s", c, ok, nonce)
	}
	if scans, checkins := td.docs("s1"); scans != 1 || checkins != 1 {
		td.t.Fatalf("%d scans and %d check-ins, want one of each", scans, checkins)
	}
}
