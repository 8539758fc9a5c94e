package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"cloud.google.com/go/firestore"
	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Why a second, low-level client: a server timestamp is evaluated when the
// request starts, so the stored acquiredAt differs from the commit's update
// time (in production too). The high-level client drops the commit's
// transform results, which are the exact stored values; without them a
// holder would need a second RPC to learn its own fencing token. Grants and
// renewals therefore go through the Commit RPC directly, and releases too
// (see unretried); everything else through the caller's *firestore.Client.

// The commit client must reach the very database the caller's
// *firestore.Client reaches. The database (project and ID, named ones
// included) is read from the client's document paths. The endpoint and
// credentials cannot be read from a *firestore.Client, so they come from
// WithClientOptions, or, like firestore.NewClient, from
// FIRESTORE_EMULATOR_HOST or Application Default Credentials; the first
// commit of each Locker's client then proves the two reach one database
// (a probe document created through one and deleted through the other),
// once per client and process.

var (
	rawMu sync.Mutex
	// shared clients by emulator host ("" for production), for Lockers
	// without WithClientOptions; never closed, like firestore.NewClient's.
	rawShared = map[string]*vkit.Client{}
	// verified pairs: a *firestore.Client and the commit client proven to
	// reach its database. Weak, so that closed clients can be collected.
	rawVerified = map[verifiedPair]bool{}
)

type verifiedPair struct {
	client weak.Pointer[firestore.Client]
	raw    *vkit.Client
}

// commitClient returns the low-level client for a Locker: one built from
// opts, or the process's shared one for the environment.
func commitClient(ctx context.Context, opts []option.ClientOption) (*vkit.Client, error) {
	if len(opts) > 0 {
		c, err := vkit.NewClient(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("lock: Firestore commit client: %w", err)
		}
		return c, nil
	}
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	rawMu.Lock()
	defer rawMu.Unlock()
	if c := rawShared[host]; c != nil {
		return c, nil
	}
	if host != "" {
		conn, err := grpc.NewClient(host,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(emulatorOwner{}))
		if err != nil {
			return nil, fmt.Errorf("lock: dial Firestore emulator %s: %w", host, err)
		}
		opts = append(opts, option.WithGRPCConn(conn))
	}
	c, err := vkit.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("lock: Firestore commit client: %w", err)
	}
	rawShared[host] = c
	return c, nil
}

// verifyCommitClient proves, once per pair, that l.raw writes where
// l.client reads: a probe document created through the commit client must
// be there for the caller's client to delete. Two RPCs, on the first
// commit only; a transient failure is not remembered.
func (l *Locker) verifyCommitClient(ctx context.Context) error {
	pair := verifiedPair{client: weak.Make(l.client), raw: l.raw}
	rawMu.Lock()
	ok := rawVerified[pair]
	rawMu.Unlock()
	if ok {
		return nil
	}
	id, err := NewExecutionID()
	if err != nil {
		return err
	}
	// The probe is shaped as a lease that ended long ago: should its
	// delete fail (a network fault), SweepEnded and the TTL policy remove
	// it like any dead lease, and no holder ever waits for it.
	probe := l.coll.Doc("firelock-probe-" + id)
	long := time.Unix(0, 0)
	fields, err := encodeFields(map[string]any{FieldOwner: "firelock-probe", FieldAcquiredAt: long, FieldRenewedAt: long,
		FieldLeaseSeconds: int64(1), FieldExpireAt: time.Now().Add(time.Hour)})
	if err != nil {
		return err
	}
	db, _, _ := strings.Cut(probe.Path, "/documents/")
	if _, err := l.raw.Commit(ctx, &pb.CommitRequest{Database: db, Writes: []*pb.Write{{
		Operation:       &pb.Write_Update{Update: &pb.Document{Name: probe.Path, Fields: fields}},
		CurrentDocument: ifMissing(),
	}}}); err != nil {
		return fmt.Errorf("lock: commit client: %w", err)
	}
	if err := l.deleteProbe(ctx, probe); err != nil {
		// Remove it through the commit client, best effort.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		l.raw.Commit(cctx, &pb.CommitRequest{Database: db, Writes: []*pb.Write{{
			Operation: &pb.Write_Delete{Delete: probe.Path},
		}}})
		cancel()
		if !errors.Is(err, errProbeElsewhere) {
			return fmt.Errorf("lock: verify commit client: %w", err)
		}
		return fmt.Errorf("%w: grants would go to a different Firestore than %s; "+
			"make the Locker with lock.WithClientOptions and the options the client was made with", ErrClientMismatch, db)
	}
	rawMu.Lock()
	rawVerified[pair] = true
	rawMu.Unlock()
	runtime.AddCleanup(l.client, func(p verifiedPair) {
		rawMu.Lock()
		delete(rawVerified, p)
		rawMu.Unlock()
	}, pair)
	return nil
}

var errProbeElsewhere = errors.New("the probe is not there through the caller's client")

// deleteProbe deletes the probe through the caller's client. Not found
// there, it was written elsewhere (errProbeElsewhere) only if the commit
// client, which created it, still finds it: else the delete reached its
// database after all, in a first attempt whose answer was lost and which
// the client library sent again (the retry found nothing to delete).
func (l *Locker) deleteProbe(ctx context.Context, probe *firestore.DocumentRef) error {
	_, err := probe.Delete(ctx, firestore.Exists)
	if status.Code(err) != codes.NotFound {
		return err
	}
	_, gerr := l.raw.GetDocument(ctx, &pb.GetDocumentRequest{Name: probe.Path})
	switch {
	case status.Code(gerr) == codes.NotFound:
		return nil
	case gerr != nil:
		return fmt.Errorf("the probe's delete found nothing (%v), and the probe could not be read through the commit client: %w", err, gerr)
	}
	return errProbeElsewhere
}

// emulatorOwner authenticates as the emulator's admin, as the high-level
// client does: rules do not apply to server code.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (emulatorOwner) RequireTransportSecurity() bool { return false }

// written is what one committed lease write left in the document.
type written struct {
	updateTime time.Time   // the document's update time: the precondition of our next write
	stamps     []time.Time // the server timestamps' stored values, in transform order
}

// unretried makes a commit fail at the first ambiguous error instead of
// being sent again by the client library: a release must learn that its
// first attempt may have landed, since a retry of it would then fail its
// precondition. (Grants and renewals settle retries by what they read back.)
var unretried = gax.WithRetry(nil)

// grantRetry sends a grant again only on ResourceExhausted, a refusal
// before anything was written. The client library's default also sends
// it again on Unavailable, which a commit that landed and lost its answer
// gets too: the retry then fails its own precondition (the grant it
// repeats stands), and the grant could only be told from another's by a
// read that the caller's deadline may cut off, leaving it standing
// unknown. A grant that failed ambiguously is settled by reading it back
// (settleGrant) and, if nothing landed, committed again after a fresh read
// (tryAcquireAll).
var grantRetry = gax.WithRetry(func() gax.Retryer {
	return gax.OnCodes([]codes.Code{codes.ResourceExhausted}, gax.Backoff{
		Initial: 100 * time.Millisecond, Max: 60 * time.Second, Multiplier: 1.3,
	})
})

// commit sends writes in one atomic Commit RPC.
func (l *Locker) commit(ctx context.Context, writes []*pb.Write, opts ...gax.CallOption) (_ []written, err error) {
	if len(writes) == 0 {
		return nil, nil
	}
	ctx, end := traceCommit(ctx, len(writes))
	defer end(&err)
	db, _, ok := strings.Cut(writes[0].GetUpdate().GetName()+writes[0].GetDelete(), "/documents/")
	if !ok {
		return nil, fmt.Errorf("lock: unexpected document name %q", writes[0].GetUpdate().GetName())
	}
	if err := l.verified(ctx); err != nil {
		return nil, err
	}
	bctx, cancel := l.bounded(ctx)
	defer cancel()
	resp, err := l.raw.Commit(bctx, &pb.CommitRequest{Database: db, Writes: writes}, opts...)
	if err != nil {
		return nil, l.unanswered(ctx, bctx, err)
	}
	out := make([]written, len(resp.WriteResults))
	for i, wr := range resp.WriteResults {
		out[i].updateTime = wr.GetUpdateTime().AsTime()
		for _, v := range wr.GetTransformResults() {
			out[i].stamps = append(out[i].stamps, v.GetTimestampValue().AsTime())
		}
	}
	return out, nil
}

// verified proves the commit client on its first commit (two RPCs and,
// maybe, a dial; nothing once proven): bounded apart from the commit
// itself.
func (l *Locker) verified(ctx context.Context) error {
	vctx, cancel := context.WithTimeout(ctx, max(l.rpcTimeout(), 10*time.Second))
	defer cancel()
	if err := l.verifyCommitClient(vctx); err != nil {
		return l.unanswered(ctx, vctx, err)
	}
	return nil
}

// bounded is ctx with a deadline for one RPC of the lock: about a lease
// (at least a second, at most a minute), so that a call the server never
// answers (a half-open connection, a lost stream) ends, is settled as
// ambiguous, and is tried again, even when the caller's context has no
// deadline.
func (l *Locker) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.rpcTimeout())
}

func (l *Locker) rpcTimeout() time.Duration { return min(max(l.lease, time.Second), time.Minute) }

// unanswered says ErrUnanswered for an RPC ended by its own bound (bctx)
// while the caller's ctx was live.
func (l *Locker) unanswered(ctx, bctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && bctx.Err() != nil {
		return fmt.Errorf("%w after %v: %w", ErrUnanswered, l.rpcTimeout(), err)
	}
	return err
}

// stampNow sets fields to the server's request time.
func stampNow(fields ...string) []*pb.DocumentTransform_FieldTransform {
	ts := make([]*pb.DocumentTransform_FieldTransform, len(fields))
	for i, f := range fields {
		ts[i] = &pb.DocumentTransform_FieldTransform{
			FieldPath:     f,
			TransformType: &pb.DocumentTransform_FieldTransform_SetToServerValue{SetToServerValue: pb.DocumentTransform_FieldTransform_REQUEST_TIME},
		}
	}
	return ts
}

func ifMissing() *pb.Precondition {
	return &pb.Precondition{ConditionType: &pb.Precondition_Exists{Exists: false}}
}

func ifUpdatedAt(t time.Time) *pb.Precondition {
	return &pb.Precondition{ConditionType: &pb.Precondition_UpdateTime{UpdateTime: timestamppb.New(t)}}
}

// encodeFields turns plain Go values into Firestore values. Lease documents
// hold only strings (and lists of them), integers, booleans, floats, times
// and nulls.
func encodeFields(m map[string]any) (map[string]*pb.Value, error) {
	out := make(map[string]*pb.Value, len(m))
	for k, v := range m {
		pv, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("lock: field %q: %w", k, err)
		}
		out[k] = pv
	}
	return out, nil
}

func encodeValue(v any) (*pb.Value, error) {
	switch x := v.(type) {
	case nil:
		return &pb.Value{ValueType: &pb.Value_NullValue{}}, nil
	case string:
		return &pb.Value{ValueType: &pb.Value_StringValue{StringValue: x}}, nil
	case bool:
		return &pb.Value{ValueType: &pb.Value_BooleanValue{BooleanValue: x}}, nil
	case int:
		return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: int64(x)}}, nil
	case int64:
		return &pb.Value{ValueType: &pb.Value_IntegerValue{IntegerValue: x}}, nil
	case float64:
		return &pb.Value{ValueType: &pb.Value_DoubleValue{DoubleValue: x}}, nil
	case time.Time:
		return &pb.Value{ValueType: &pb.Value_TimestampValue{TimestampValue: timestamppb.New(x)}}, nil
	case []string:
		vs := make([]*pb.Value, len(x))
		for i, e := range x {
			vs[i] = &pb.Value{ValueType: &pb.Value_StringValue{StringValue: e}}
		}
		return &pb.Value{ValueType: &pb.Value_ArrayValue{ArrayValue: &pb.ArrayValue{Values: vs}}}, nil
	}
	return nil, fmt.Errorf("unsupported type %T (use string, []string, bool, int, int64, float64, time.Time or nil)", v)
}
