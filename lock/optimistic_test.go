package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

func increment(field string, calls *atomic.Int64) func(*firestore.DocumentSnapshot) ([]firestore.Update, error) {
	return func(s *firestore.DocumentSnapshot) ([]firestore.Update, error) {
		calls.Add(1)
		var n int64
		if s.Exists() {
			n = s.Data()[field].(int64)
		}
		return []firestore.Update{{Path: field, Value: n + 1}}, nil
	}
}

func TestOptimisticIncrementsLoseNoUpdate(t *testing.T) {
	t.Parallel() // its own project; judged on the counter, not on time
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	doc := c.Doc("data/n")
	if _, err := doc.Set(ctx, map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 25 {
				if _, err := lock.Update(ctx, doc, increment("n", &calls), lock.MaxAttempts(500)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s, err := doc.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Data()["n"].(int64); got != 800 {
		t.Fatalf("n = %d, want 800: an update was lost", got)
	}
	if calls.Load() <= 800 {
		t.Fatalf("fn ran %d times for 800 updates: no conflict happened, so nothing was tested", calls.Load())
	}
	t.Logf("%d attempts for 800 updates", calls.Load())
}

func TestOptimisticStaleSnapshotIsRefused(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	doc := c.Doc("data/n")
	if _, err := doc.Set(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	// Another writer lands between our read and our write.
	_, err := lock.Update(ctx, doc, func(s *firestore.DocumentSnapshot) ([]firestore.Update, error) {
		if _, err := doc.Set(ctx, map[string]any{"n": 100}); err != nil {
			t.Fatal(err)
		}
		return []firestore.Update{{Path: "n", Value: s.Data()["n"].(int64) + 1}}, nil
	}, lock.MaxAttempts(1))
	var ce *lock.ConflictError
	if !errors.Is(err, lock.ErrConflict) || !errors.As(err, &ce) || ce.Attempts != 1 {
		t.Fatalf("err = %v, want a ConflictError after 1 attempt", err)
	}
	s, _ := doc.Get(ctx)
	if s.Data()["n"] != int64(100) {
		t.Fatalf("n = %v: the stale write overwrote the concurrent one", s.Data()["n"])
	}
	// With retries, fn sees the fresh value and the result builds on it.
	var first = true
	if _, err := lock.Update(ctx, doc, func(s *firestore.DocumentSnapshot) ([]firestore.Update, error) {
		if first {
			first = false
			doc.Set(ctx, map[string]any{"n": 200})
		}
		return []firestore.Update{{Path: "n", Value: s.Data()["n"].(int64) + 1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if s, _ := doc.Get(ctx); s.Data()["n"] != int64(201) {
		t.Fatalf("n = %v, want 201", s.Data()["n"])
	}
}

func TestOptimisticFnErrorWritesNothing(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	doc := c.Doc("data/n")
	wr, err := doc.Set(ctx, map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("refuse")
	if _, err := lock.Update(ctx, doc, func(*firestore.DocumentSnapshot) ([]firestore.Update, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's", err)
	}
	if s, _ := doc.Get(ctx); !s.UpdateTime.Equal(wr.UpdateTime) {
		t.Fatal("fn's error still wrote")
	}
}

func TestOptimisticMissingDocument(t *testing.T) {
	c := firelocktest.NewClient(t)
	ctx := context.Background()
	doc := c.Doc("data/new")
	var calls atomic.Int64
	if _, err := lock.Update(ctx, doc, increment("n", &calls)); !errors.Is(err, lock.ErrDocumentMissing) {
		t.Fatalf("err = %v, want ErrDocumentMissing", err)
	}
	if _, err := doc.Get(ctx); err == nil {
		t.Fatal("a missing document was created without CreateIfMissing")
	}
	if _, err := lock.Update(ctx, doc, increment("n", &calls), lock.CreateIfMissing(), lock.WithVersionField("version")); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Update(ctx, doc, increment("n", &calls), lock.WithVersionField("version")); err != nil {
		t.Fatal(err)
	}
	s, _ := doc.Get(ctx)
	if s.Data()["n"] != int64(2) || s.Data()["version"] != int64(2) {
		t.Fatalf("document %v, want n 2 and version 2", s.Data())
	}
}
