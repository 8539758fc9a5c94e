package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
)

func init() {
	for _, writers := range []int{1, 8, 32} {
		scenarios = append(scenarios, scenario{"optimistic", fmt.Sprintf("read-modify-write, %d writers", writers), benchOptimistic(writers)})
	}
}

// benchOptimistic: writers increment one field of one document, with
// lock.Update against RunTransaction (the Go client's pessimistic
// read-write transaction). Attempts per success count calls of the body.
func benchOptimistic(writers int) func(context.Context, *firestore.Client, config) ([]result, []comparison, error) {
	return func(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
		name := fmt.Sprintf("read-modify-write, %d writers", writers)
		run := func(variant string, op func(ctx context.Context, doc *firestore.DocumentRef, calls *atomic.Int64) error) (result, error) {
			doc := c.Collection("optimistic").Doc(fmt.Sprint(time.Now().UnixNano()))
			if _, err := doc.Set(ctx, map[string]any{"n": 0}); err != nil {
				return result{}, err
			}
			var calls atomic.Int64
			r := measure(ctx, name, variant, writers, cfg.duration, func(ctx context.Context, w, i int) error {
				return op(ctx, doc, &calls)
			}, nil)
			if r.Ops > 0 {
				r.Note = fmt.Sprintf("%.2f attempts per success", float64(calls.Load())/float64(r.Ops))
			}
			return r, nil
		}
		body := func(calls *atomic.Int64, s *firestore.DocumentSnapshot) []firestore.Update {
			calls.Add(1)
			return []firestore.Update{{Path: "n", Value: s.Data()["n"].(int64) + 1}}
		}
		opt, err := run("firelock lock.Update", func(ctx context.Context, doc *firestore.DocumentRef, calls *atomic.Int64) error {
			_, err := lock.Update(ctx, doc, func(s *firestore.DocumentSnapshot) ([]firestore.Update, error) {
				return body(calls, s), nil
			}, lock.MaxAttempts(100))
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		tx, err := run("baseline: RunTransaction", func(ctx context.Context, doc *firestore.DocumentRef, calls *atomic.Int64) error {
			return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				s, err := tx.Get(doc)
				if err != nil {
					return err
				}
				return tx.Update(doc, body(calls, s))
			})
		})
		if err != nil {
			return nil, nil, err
		}
		return []result{opt, tx}, []comparison{{name, "updates/s", opt.OpsPerS, tx.OpsPerS, ratio(opt.OpsPerS, tx.OpsPerS), "higher"}}, nil
	}
}
