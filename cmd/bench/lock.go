package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/lock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func init() {
	scenarios = append(scenarios,
		scenario{"lock", "lock acquire+release, uncontended", benchUncontended},
		scenario{"lock", "lock 16-way race on one key", benchRace16},
		scenario{"lock", "lock acquire latency vs bare create", benchAcquireLatency},
		scenario{"lock", "lock 64 keys under N workers", benchManyKeys},
	)
}

var errSeedHeld = errors.New("seed: lock held")

// seedAcquire is the seed texts' lock: a transaction that reads the lock
// document and creates it if absent. Release is a plain delete.
func seedAcquire(ctx context.Context, c *firestore.Client, ref *firestore.DocumentRef, owner string) error {
	return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		if s.Exists() {
			return errSeedHeld
		}
		return tx.Create(ref, map[string]any{"owner": owner, "acquiredAt": firestore.ServerTimestamp})
	})
}

func isHeld(err error) bool { return errors.Is(err, lock.ErrHeld) || errors.Is(err, errSeedHeld) }

// benchUncontended: one worker acquires and releases. keys > 1 cycles over
// that many keys, so no key is written twice within a millisecond: the
// emulator spaces writes to one document by at least 1ms (its timestamps
// tick in ms), which on a single hot key costs more than an RPC.
func benchUncontended(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	const name = "lock acquire+release, uncontended"
	l, err := newLocker(c, "locks")
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	var rs []result
	for _, keys := range []int{256, 1} {
		suffix := fmt.Sprintf(" (%d keys)", keys)
		rs = append(rs, measure(ctx, name, "firelock TryAcquire+Release"+suffix, 1, cfg.duration, func(ctx context.Context, w, i int) error {
			lease, err := l.TryAcquire(ctx, fmt.Sprint("u", i%keys))
			if err != nil {
				return err
			}
			return lease.Release(ctx)
		}, nil))
		rs = append(rs, measure(ctx, name, "baseline: tx get+create, delete"+suffix, 1, cfg.duration, func(ctx context.Context, w, i int) error {
			ref := c.Collection("seedlocks").Doc(fmt.Sprint("u", i%keys))
			if err := seedAcquire(ctx, c, ref, "me"); err != nil {
				return err
			}
			_, err := ref.Delete(ctx)
			return err
		}, nil))
	}
	return rs, []comparison{{name, "ops/s (256 keys)", rs[0].OpsPerS, rs[1].OpsPerS, ratio(rs[0].OpsPerS, rs[1].OpsPerS), "higher"}}, nil
}

// benchRace16: 16 goroutines race for one free key; a round is decided when
// all have their answer (one winner, fifteen held).
func benchRace16(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	const name, racers = "lock 16-way race on one key", 16
	lockers := make([]*lock.Locker, racers)
	for i := range lockers {
		var err error
		if lockers[i], err = newLocker(c, "locks"); err != nil {
			return nil, nil, err
		}
		defer lockers[i].Close()
	}
	round := func(acquire func(ctx context.Context, r int) error) (time.Duration, bool) {
		var wins, held atomic.Int32
		var ready, wg sync.WaitGroup
		gate := make(chan struct{})
		ready.Add(racers)
		for r := range racers {
			wg.Go(func() {
				ready.Done()
				<-gate
				switch err := acquire(ctx, r); {
				case err == nil:
					wins.Add(1)
				case isHeld(err):
					held.Add(1)
				}
			})
		}
		ready.Wait()
		start := time.Now()
		close(gate)
		wg.Wait()
		return time.Since(start), wins.Load() == 1 && held.Load() == racers-1
	}
	runRounds := func(variant string, n int, acquire func(key string) func(ctx context.Context, r int) error) result {
		var lat []time.Duration
		bad := 0
		start := time.Now()
		before := stats.Snapshot()
		for i := range n {
			d, ok := round(acquire(fmt.Sprintf("race-%d", i)))
			if !ok {
				bad++
			}
			lat = append(lat, d)
		}
		r := summarize(name, variant, lat, bad, time.Since(start))
		r.RPCsPerOp = rpcsPer(before, n*racers)
		r.Note = "ops are rounds; p50 is the median time to decide a round; errors are rounds without exactly one winner; RPCs per racer's try"
		return r
	}
	fl := runRounds("firelock TryAcquire", cfg.rounds, func(key string) func(context.Context, int) error {
		return func(ctx context.Context, r int) error { _, err := lockers[r].TryAcquire(ctx, key); return err }
	})
	seed := runRounds("baseline: tx get+create", min(cfg.rounds, 5), func(key string) func(context.Context, int) error {
		ref := c.Collection("seedlocks").Doc(key)
		return func(ctx context.Context, r int) error { return seedAcquire(ctx, c, ref, fmt.Sprint(r)) }
	})
	return []result{fl, seed}, []comparison{{name, "median round ms", fl.P50ms, seed.P50ms, ratio(fl.P50ms, seed.P50ms), "lower"}}, nil
}

// benchAcquireLatency interleaves a bare create RPC and a TryAcquire of a
// free key, so both see the same emulator load.
func benchAcquireLatency(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	const name = "lock acquire latency vs bare create"
	l, err := newLocker(c, "locks")
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	var acq, create []time.Duration
	var acqRPCs, createRPCs int // counted around each call: the two interleave
	errs := 0
	deadline := time.Now().Add(cfg.duration)
	start := time.Now()
	for i := 0; time.Now().Before(deadline); i++ {
		before, t := stats.Snapshot(), time.Now()
		if _, err := c.Collection("plain").Doc(fmt.Sprintf("d%d", i)).Create(ctx, map[string]any{"owner": "x", "at": firestore.ServerTimestamp}); err != nil {
			errs++
		} else {
			create = append(create, time.Since(t))
		}
		createRPCs += stats.Snapshot().Sub(before).Calls()
		before, t = stats.Snapshot(), time.Now()
		if _, err := l.TryAcquire(ctx, fmt.Sprintf("k%d", i)); err != nil {
			errs++
		} else {
			acq = append(acq, time.Since(t))
		}
		acqRPCs += stats.Snapshot().Sub(before).Calls()
	}
	el := time.Since(start) / 2
	fl := summarize(name, "firelock TryAcquire (free key)", acq, errs, el)
	base := summarize(name, "baseline: one bare create RPC", create, 0, el)
	perAcq, perCreate := float64(acqRPCs)/float64(max(len(acq), 1)), float64(createRPCs)/float64(max(len(create), 1))
	fl.RPCsPerOp, base.RPCsPerOp = &perAcq, &perCreate
	return []result{fl, base}, []comparison{{name, "p50 ms", fl.P50ms, base.P50ms, ratio(fl.P50ms, base.P50ms), "lower"}}, nil
}

// benchManyKeys: N workers each take a random key of 64 (waiting when held),
// hold it briefly, release it.
func benchManyKeys(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	name := fmt.Sprintf("lock 64 keys under %d workers", cfg.concurrency)
	lockers := make([]*lock.Locker, cfg.concurrency)
	for i := range lockers {
		var err error
		if lockers[i], err = newLocker(c, "locks", lock.WithBackoff(5*time.Millisecond, 200*time.Millisecond)); err != nil {
			return nil, nil, err
		}
		defer lockers[i].Close()
	}
	key := func() string { return fmt.Sprintf("m%d", rand.IntN(64)) }
	fl := measure(ctx, name, "firelock Acquire+Release", cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
		lease, err := lockers[w].Acquire(ctx, key())
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	}, nil)
	seed := measure(ctx, name, "baseline: tx get+create, retry, delete", cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
		ref := c.Collection("seedlocks").Doc(key())
		for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
			err := seedAcquire(ctx, c, ref, fmt.Sprint(w))
			if err == nil {
				break
			}
			if !errors.Is(err, errSeedHeld) {
				return err
			}
			time.Sleep(time.Duration(rand.Int64N(int64(wait))))
		}
		_, err := ref.Delete(ctx)
		return err
	}, nil)
	return []result{fl, seed}, []comparison{{name, "ops/s", fl.OpsPerS, seed.OpsPerS, ratio(fl.OpsPerS, seed.OpsPerS), "higher"}}, nil
}
