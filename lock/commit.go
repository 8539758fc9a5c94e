package lock

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	vkit "cloud.google.com/go/firestore/apiv1"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Why a second, low-level client: a server timestamp is evaluated when the
// request starts, so the stored acquiredAt differs from the commit's update
// time (in production too). The high-level client drops the commit's
// transform results, which are the exact stored values; without them a
// holder would need a second RPC to learn its own fencing token. Grants and
// renewals therefore go through the Commit RPC directly, everything else
// through the caller's *firestore.Client.

var (
	rawMu      sync.Mutex
	rawClients = map[string]*vkit.Client{} // by emulator host ("" for production), shared for the process
)

// rawClient returns the process's low-level Firestore client: for the
// emulator named by FIRESTORE_EMULATOR_HOST with admin credentials, else with
// Application Default Credentials, like firestore.NewClient.
func rawClient(ctx context.Context) (*vkit.Client, error) {
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	rawMu.Lock()
	defer rawMu.Unlock()
	if c := rawClients[host]; c != nil {
		return c, nil
	}
	var opts []option.ClientOption
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
	rawClients[host] = c
	return c, nil
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

// commit sends writes in one atomic Commit RPC.
func (l *Locker) commit(ctx context.Context, writes []*pb.Write) ([]written, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	db, _, ok := strings.Cut(writes[0].GetUpdate().GetName()+writes[0].GetDelete(), "/documents/")
	if !ok {
		return nil, fmt.Errorf("lock: unexpected document name %q", writes[0].GetUpdate().GetName())
	}
	resp, err := l.raw.Commit(ctx, &pb.CommitRequest{Database: db, Writes: writes})
	if err != nil {
		return nil, err
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
// hold only strings, integers, booleans, floats, times and nulls.
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
	}
	return nil, fmt.Errorf("unsupported type %T (use string, bool, int, int64, float64, time.Time or nil)", v)
}
