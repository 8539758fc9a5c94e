package main

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/counter"
)

func init() {
	scenarios = append(scenarios,
		scenario{"counter", "counter increments under N writers", benchIncrements},
		scenario{"counter", "count read, 10 shards", benchCountRead(10)},
		scenario{"counter", "count read, 100 shards", benchCountRead(100)},
	)
}

// benchIncrements: N writers bump one counter. Baseline: the seed's single
// document updated in a transaction (read count, write count+1).
func benchIncrements(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	name := fmt.Sprintf("counter increments under %d writers", cfg.concurrency)
	var rs []result
	for _, shards := range []int{10, 1} {
		ctr, err := counter.Create(ctx, c, fmt.Sprintf("bench-%d-%d", shards, time.Now().UnixNano()), shards)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, measure(ctx, name, fmt.Sprintf("firelock Increment, %d shards", shards), cfg.concurrency, cfg.duration,
			func(ctx context.Context, w, i int) error { return ctr.Increment(ctx, 1) }, nil))
	}
	doc := c.Collection("seedcounters").Doc(fmt.Sprint(time.Now().UnixNano()))
	if _, err := doc.Set(ctx, map[string]any{"count": 0}); err != nil {
		return nil, nil, err
	}
	seed := measure(ctx, name, "baseline: 1 document, transactions", cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
		return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			s, err := tx.Get(doc)
			if err != nil {
				return err
			}
			return tx.Update(doc, []firestore.Update{{Path: "count", Value: s.Data()["count"].(int64) + 1}})
		})
	}, nil)
	rs = append(rs, seed)
	return rs, []comparison{{name, "increments/s (10 shards)", rs[0].OpsPerS, seed.OpsPerS, ratio(rs[0].OpsPerS, seed.OpsPerS), "higher"}}, nil
}

// benchCountRead: the exact count by one aggregation query versus reading
// every shard document and adding them up.
func benchCountRead(shards int) func(context.Context, *firestore.Client, config) ([]result, []comparison, error) {
	return func(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
		name := fmt.Sprintf("count read, %d shards", shards)
		ctr, err := counter.Create(ctx, c, fmt.Sprintf("read-%d-%d", shards, time.Now().UnixNano()), shards)
		if err != nil {
			return nil, nil, err
		}
		for i := range shards {
			if err := ctr.Increment(ctx, int64(i)); err != nil {
				return nil, nil, err
			}
		}
		agg := measure(ctx, name, "firelock Count (1 aggregation)", 1, cfg.duration, func(ctx context.Context, w, i int) error {
			_, err := ctr.Count(ctx)
			return err
		}, nil)
		agg.Note = "1 RPC; billed 1 read per 1000 shards"
		shardsColl := c.Collection(counter.Collection).Doc(ctr.ID()).Collection("shards")
		all := measure(ctx, name, "baseline: read every shard", 1, cfg.duration, func(ctx context.Context, w, i int) error {
			snaps, err := shardsColl.Documents(ctx).GetAll()
			var sum int64
			for _, s := range snaps {
				sum += s.Data()["count"].(int64)
			}
			return err
		}, nil)
		all.Note = fmt.Sprintf("1 streaming RPC; billed %d reads", shards)
		return []result{agg, all}, []comparison{{name, "p50 ms", agg.P50ms, all.P50ms, ratio(agg.P50ms, all.P50ms), "lower"}}, nil
	}
}
