package main

import (
	"context"
	"errors"
	"io"
	"net"
	"path"
	"sync/atomic"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// commitTap is a transparent gRPC proxy on loopback in front of the
// Firestore emulator that hands the documents of every Commit passing
// through it and succeeded to onWrite, as rpcstats' OnWrite does for a
// client's own Commits. A refused commit wrote nothing and is not counted.
//
// It exists for the lock package: a Locker commits through a client of its
// own, dialled from FIRESTORE_EMULATOR_HOST, that no interceptor on the
// functions' clients sees. The admitter's lease on each sale
// (locks/admit-{id}, renewed every few seconds) and the job runs' leases
// are written that way. With FIRESTORE_EMULATOR_HOST pointing at the tap,
// those writes are counted too; every other client dials the emulator
// itself, so nothing is counted twice.
type commitTap struct {
	addr    string
	srv     *grpc.Server
	backend *grpc.ClientConn
	onWrite func(doc string, at time.Time)
	writes  atomic.Int64 // every write of every Commit relayed that succeeded
}

func startCommitTap(emulatorHost string, onWrite func(doc string, at time.Time)) (*commitTap, error) {
	backend, err := grpc.NewClient(emulatorHost, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		backend.Close()
		return nil, err
	}
	t := &commitTap{addr: lis.Addr().String(), backend: backend, onWrite: onWrite}
	t.srv = grpc.NewServer(grpc.UnknownServiceHandler(t.forward), grpc.ForceServerCodec(rawCodec{}))
	go t.srv.Serve(lis)
	return t, nil
}

func (t *commitTap) stop() {
	t.srv.Stop()
	t.backend.Close()
}

// forward relays one call, any method, message by message.
func (t *commitTap) forward(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return status.Error(codes.Internal, "commit tap: no method")
	}
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(in.Context(), md.Copy()))
	defer cancel()
	out, err := t.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	commit := path.Base(method) == "Commit"
	request := make(chan []byte, 1)
	go func() {
		for first := true; ; first = false {
			var m []byte
			if err := in.RecvMsg(&m); err != nil {
				if errors.Is(err, io.EOF) {
					out.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if commit && first {
				request <- m // the answer cannot come before the request is sent on
			}
			if err := out.SendMsg(&m); err != nil {
				return
			}
		}
	}()
	var answer []byte // a Commit's answer: its commit time
	for first := true; ; first = false {
		var m []byte
		err := out.RecvMsg(&m)
		if first {
			if h, herr := out.Header(); herr == nil {
				in.SendHeader(h)
			}
			if err == nil && commit {
				answer = m
			}
		}
		if err != nil {
			in.SetTrailer(out.Trailer())
			if commit && errors.Is(err, io.EOF) { // answered OK: its writes applied
				select {
				case req := <-request:
					t.record(req, answer)
				default:
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := in.SendMsg(&m); err != nil {
			return err
		}
	}
}

// record hands the writes of Commit req to onWrite, at the commit's time
// as its answer says (Firestore's clock: the commits themselves are
// counted per window, not their answers, which the network may bunch).
func (t *commitTap) record(req, answer []byte) {
	var c pb.CommitRequest
	if proto.Unmarshal(req, &c) != nil {
		return
	}
	now := time.Now()
	var r pb.CommitResponse
	if proto.Unmarshal(answer, &r) == nil && r.GetCommitTime() != nil {
		now = r.GetCommitTime().AsTime()
	}
	t.writes.Add(int64(len(c.Writes)))
	for _, w := range c.Writes {
		switch op := w.Operation.(type) {
		case *pb.Write_Update:
			t.onWrite(op.Update.GetName(), now)
		case *pb.Write_Delete:
			t.onWrite(op.Delete, now)
		case *pb.Write_Transform:
			t.onWrite(op.Transform.GetDocument(), now)
		}
	}
}

// rawCodec passes messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
