// Package rpcstats counts what a Firestore client costs, on the wire: RPCs
// by method, documents read (found or missing, batched gets, query results,
// listener deliveries) and documents written (each write of each Commit),
// by a gRPC interceptor on the client's connection. Benchmarks, load tests
// and cost tests use it, so costs are counted, not estimated.
package rpcstats

import (
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Stats accumulates counts. Safe for concurrent use.
type Stats struct {
	mu sync.Mutex
	c  Counts
	// OnWrite, if set, is called with every document a Commit wrote, once
	// the commit answered success, e.g. to find the hottest documents, and
	// the commit's time (Firestore's clock, as the answer says: writes
	// counted per window are the commits themselves, not their answers,
	// which the network may bunch up). A refused commit (a failed
	// precondition, an aborted transaction) wrote nothing, so it is not
	// counted: Firestore's per-document write rate and its bill count
	// applied writes.
	OnWrite func(doc string, at time.Time)
}

// Counts is a snapshot of Stats.
type Counts struct {
	RPCs   map[string]int // by method name (Commit, BatchGetDocuments, RunQuery, Listen, ...)
	Reads  int            // documents read (a missing document in a batched get counts too)
	Writes int            // writes of Commits that succeeded
	// ReadsBy splits Reads by the streaming method that carried them
	// (BatchGetDocuments, RunQuery, Listen, RunAggregationQuery).
	ReadsBy map[string]int
	// Resent counts documents a listener was sent again unchanged: the
	// emulator sends a query listener its whole result set on every
	// change (200 documents for one changed seat of 200), where Firestore
	// sends, and bills, the changed document only. Not in Reads.
	Resent int
}

// Calls is the total number of RPCs.
func (c Counts) Calls() int {
	n := 0
	for _, v := range c.RPCs {
		n += v
	}
	return n
}

// Sub returns c − prev.
func (c Counts) Sub(prev Counts) Counts {
	out := Counts{RPCs: map[string]int{}, Reads: c.Reads - prev.Reads, Writes: c.Writes - prev.Writes, ReadsBy: map[string]int{}, Resent: c.Resent - prev.Resent}
	for k, v := range c.RPCs {
		if d := v - prev.RPCs[k]; d != 0 {
			out.RPCs[k] = d
		}
	}
	for k, v := range c.ReadsBy {
		if d := v - prev.ReadsBy[k]; d != 0 {
			out.ReadsBy[k] = d
		}
	}
	return out
}

// String lists the RPCs by method, e.g. "Commit 1, BatchGetDocuments 1".
func (c Counts) String() string {
	keys := make([]string, 0, len(c.RPCs))
	for k := range c.RPCs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c.RPCs[k])
	}
	return fmt.Sprintf("%d RPCs (%s), %d reads, %d writes", c.Calls(), strings.Join(parts, ", "), c.Reads, c.Writes)
}

// Snapshot returns the counts so far.
func (s *Stats) Snapshot() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.c
	out.RPCs = make(map[string]int, len(s.c.RPCs))
	for k, v := range s.c.RPCs {
		out.RPCs[k] = v
	}
	out.ReadsBy = make(map[string]int, len(s.c.ReadsBy))
	for k, v := range s.c.ReadsBy {
		out.ReadsBy[k] = v
	}
	return out
}

func (s *Stats) add(method string, reads, writes int) {
	s.mu.Lock()
	if s.c.RPCs == nil {
		s.c.RPCs = map[string]int{}
	}
	if method != "" {
		s.c.RPCs[method]++
	}
	s.c.Reads += reads
	s.c.Writes += writes
	s.mu.Unlock()
}

func (s *Stats) resent() {
	s.mu.Lock()
	s.c.Resent++
	s.mu.Unlock()
}

// addReads counts reads carried by a streaming answer of kind.
func (s *Stats) addReads(kind string, reads int) {
	s.mu.Lock()
	if s.c.ReadsBy == nil {
		s.c.ReadsBy = map[string]int{}
	}
	s.c.ReadsBy[kind] += reads
	s.c.Reads += reads
	s.mu.Unlock()
}

// DialOptions are the interceptors that count into s.
func (s *Stats) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(s.unary), grpc.WithChainStreamInterceptor(s.stream)}
}

func (s *Stats) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	writes := 0
	if c, ok := req.(*pb.CommitRequest); ok && err == nil {
		writes = len(c.Writes)
		if f := s.OnWrite; f != nil {
			at := time.Now()
			if r, ok := reply.(*pb.CommitResponse); ok && r.GetCommitTime() != nil {
				at = r.GetCommitTime().AsTime()
			}
			for _, w := range c.Writes {
				f(docOf(w), at)
			}
		}
	}
	s.add(path.Base(method), 0, writes)
	return err
}

func docOf(w *pb.Write) string {
	switch op := w.Operation.(type) {
	case *pb.Write_Update:
		return op.Update.GetName()
	case *pb.Write_Delete:
		return op.Delete
	case *pb.Write_Transform:
		return op.Transform.GetDocument()
	}
	return ""
}

func (s *Stats) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	s.add(path.Base(method), 0, 0)
	if err != nil {
		return nil, err
	}
	return &countingStream{ClientStream: cs, s: s, seen: map[string]*timestamppb.Timestamp{}}, nil
}

// countingStream counts the documents a streaming answer carries.
type countingStream struct {
	grpc.ClientStream
	s *Stats
	// seen: a listener's documents as last sent, by name (update time).
	seen map[string]*timestamppb.Timestamp
}

func (c *countingStream) RecvMsg(m any) error {
	err := c.ClientStream.RecvMsg(m)
	if err != nil {
		return err
	}
	reads, kind := 0, ""
	switch r := m.(type) {
	case *pb.BatchGetDocumentsResponse:
		if r.GetFound() != nil || r.GetMissing() != "" {
			reads, kind = 1, "BatchGetDocuments"
		}
	case *pb.RunQueryResponse:
		if r.GetDocument() != nil {
			reads, kind = 1, "RunQuery"
		}
	case *pb.ListenResponse:
		if dc := r.GetDocumentChange(); dc != nil {
			doc := dc.GetDocument()
			if last, ok := c.seen[doc.GetName()]; ok && proto.Equal(last, doc.GetUpdateTime()) {
				c.s.resent()
				return nil
			}
			c.seen[doc.GetName()] = doc.GetUpdateTime()
			reads, kind = 1, "Listen"
		}
	case *pb.RunAggregationQueryResponse:
		if r.GetResult() != nil {
			reads, kind = 1, "RunAggregationQuery" // billed per 1,000 index entries scanned, at least one
		}
	}
	if reads > 0 {
		c.s.addReads(kind, reads)
	}
	return nil
}

// NewClient returns a Firestore client for project whose RPCs count into s:
// on its own connection to the emulator when FIRESTORE_EMULATOR_HOST is
// set (as firestore.NewClient would dial it), else with the interceptors
// added to the default connection. Close the client when done.
func NewClient(ctx context.Context, project string, s *Stats) (*firestore.Client, error) {
	opts, err := s.ClientOptions()
	if err != nil {
		return nil, err
	}
	return firestore.NewClient(ctx, project, opts...)
}

// ClientOptions are the options NewClient builds its client with, for
// other Firestore clients whose RPCs should count into s too (the lock's
// commit client: lock.WithClientOptions). On the emulator each call dials
// a connection of its own, which the client built on it closes.
func (s *Stats) ClientOptions() ([]option.ClientOption, error) {
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		var opts []option.ClientOption
		for _, o := range s.DialOptions() {
			opts = append(opts, option.WithGRPCDialOption(o))
		}
		return opts, nil
	}
	conn, err := grpc.NewClient(host, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}),
	}, s.DialOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("rpcstats: dial the Firestore emulator %s: %w", host, err)
	}
	return []option.ClientOption{option.WithGRPCConn(conn)}, nil
}

// emulatorOwner authenticates as the emulator's admin, as firestore.NewClient does.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (emulatorOwner) RequireTransportSecurity() bool { return false }
