package rpcstats_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/internal/testkit/rpcstats"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }

// Writes and OnWrite count what Firestore applied: the writes of commits
// that succeeded. A refused commit (here a create of a document that
// exists) costs an RPC and writes nothing. Reads count documents, a
// missing one in a batched get too.
func TestCountsAppliedWritesAndDocumentsRead(t *testing.T) {
	ctx := context.Background()
	var s rpcstats.Stats
	var mu sync.Mutex
	var written []string
	var at []time.Time
	s.OnWrite = func(doc string, t time.Time) {
		mu.Lock()
		written, at = append(written, doc), append(at, t)
		mu.Unlock()
	}
	c, err := rpcstats.NewClient(ctx, firelocktest.ProjectID(t), &s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := c.Collection("stats").Doc("a"), c.Collection("stats").Doc("b")

	before := s.Snapshot()
	if _, err := a.Create(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, map[string]any{"n": 2}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	got := s.Snapshot().Sub(before)
	if got.RPCs["Commit"] != 2 || got.Writes != 1 || got.Reads != 0 {
		t.Fatalf("a create and a refused create: %v; want 2 Commits, 1 write, 0 reads", got)
	}
	mu.Lock()
	if len(written) != 1 || written[0] != a.Path {
		t.Fatalf("OnWrite saw %v, want only %s", written, a.Path)
	}
	mu.Unlock()
	// The time OnWrite gets is the commit's, by Firestore's clock: the
	// document's update time.
	snap, err := a.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.UpdateTime.Equal(at[0]) {
		t.Fatalf("OnWrite's time %v, the write's update time %v", at[0], snap.UpdateTime)
	}

	before = s.Snapshot()
	if _, err := c.GetAll(ctx, []*firestore.DocumentRef{a, b}); err != nil {
		t.Fatal(err)
	}
	got = s.Snapshot().Sub(before)
	if got.RPCs["BatchGetDocuments"] != 1 || got.Reads != 2 || got.Writes != 0 || got.ReadsBy["BatchGetDocuments"] != 2 || len(got.ReadsBy) != 1 {
		t.Fatalf("a batched get of one document found and one missing: %v, reads by method %v; want 1 RPC, 2 reads by BatchGetDocuments", got, got.ReadsBy)
	}

	before = s.Snapshot()
	batch := c.Batch()
	batch.Set(b, map[string]any{"n": 3})
	batch.Delete(a)
	if _, err := batch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Sub(before); got.RPCs["Commit"] != 1 || got.Writes != 2 {
		t.Fatalf("a batch of a set and a delete: %v; want 1 Commit, 2 writes", got)
	}
}

// A query listener is counted as Firestore bills it: a read per document
// added or changed, not per document sent. The emulator sends the whole
// result set again on every change (200 documents for one changed of
// 200); those are Resent, not Reads.
func TestAListenerCountsChangedDocumentsOnly(t *testing.T) {
	ctx := context.Background()
	project := firelocktest.ProjectID(t)
	admin, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	col := admin.Collection("listened")
	for i := range 50 {
		if _, err := col.Doc(fmt.Sprint(i)).Set(ctx, map[string]any{"v": 0}); err != nil {
			t.Fatal(err)
		}
	}
	s := &rpcstats.Stats{}
	c, err := rpcstats.NewClient(ctx, project, s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	it := c.Collection("listened").Snapshots(lctx)
	defer it.Stop()
	next := func() *firestore.QuerySnapshot {
		t.Helper()
		snap, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	if snap := next(); len(snap.Changes) != 50 {
		t.Fatalf("the first snapshot has %d changes, want 50", len(snap.Changes))
	}
	before := s.Snapshot()
	for i := range 5 {
		if _, err := col.Doc(fmt.Sprint(i)).Set(ctx, map[string]any{"v": 1}); err != nil {
			t.Fatal(err)
		}
		for changed := 0; changed == 0; {
			changed = len(next().Changes)
		}
	}
	got := s.Snapshot().Sub(before)
	if got.ReadsBy["Listen"] != 5 || got.Reads != 5 {
		t.Fatalf("5 documents changed under a listener: %d reads (%v), %d resent; want 5 reads", got.Reads, got.ReadsBy, got.Resent)
	}
	t.Logf("5 changes: 5 reads, %d documents resent unchanged", got.Resent)
}
