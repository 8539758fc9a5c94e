package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
)

// Every way a lease ends badly gives an error a caller can branch on with
// errors.Is, and its message says what happened (issue #52). Each case
// runs on a project (and, where it loses answers, a proxy) of its own.
func TestErrorsSayWhatHappened(t *testing.T) {
	t.Parallel() // its own projects; the cases wait for leases and keep-alives, side by side
	type outcome struct {
		err   error
		after func(t *testing.T) // checks what Firestore holds afterwards
	}
	cases := []struct {
		name string
		run  func(t *testing.T) outcome
		is   []error  // errors.Is must hold for each
		says []string // the message must contain each
	}{{
		// The lease is lost under WithLock (deleted and taken by another);
		// fn, cut off by its context, returns the bare gRPC Canceled of
		// its read. WithLock says the lease was lost, and keeps fn's error.
		name: "lost lease under WithLock",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			// 9 s: the renewal that finds the other holder (a third in) has
			// 6 s to answer; with 3 s a loaded run's came back after the
			// lease and the cause said "not renewed", not who holds it.
			l := newLocker(t, c, lock.WithLeaseDuration(9*time.Second))
			err := l.WithLock(context.Background(), "k", func(ctx context.Context, lease *lock.Lease) error {
				if _, err := c.Collection(coll).Doc("k").Delete(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := newLocker(t, c).TryAcquire(context.Background(), "k"); err != nil {
					t.Fatal(err)
				}
				<-ctx.Done()
				_, err := c.Doc("data/d").Get(ctx)
				return err
			})
			return outcome{err: err}
		},
		is:   []error{lock.ErrNotHeld},
		says: []string{`lock "k"`, "now held by", "Canceled"},
	}, {
		// An operator force-releases the lease (firelock locks release
		// --force) while fn runs; fn's guarded transaction, begun after
		// the keep-alive learnt it, is cut off before Guard can run.
		name: "forced release under WithLock",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			l := newLocker(t, c, lock.WithLeaseDuration(3*time.Second))
			err := l.WithLock(context.Background(), "k", func(ctx context.Context, lease *lock.Lease) error {
				// As an operator does: inspect, force, and inspect again
				// when a renewal (every second here) came in between (a
				// loaded machine's renewal did, 06:34 on 11-29).
				for {
					seen, err := lock.Inspect(context.Background(), c, coll+"/k")
					if err != nil {
						t.Fatal(err)
					}
					err = lock.ForceRelease(context.Background(), c, seen, "olive@example.com", "stuck")
					if err == nil {
						break
					}
					if !errors.Is(err, lock.ErrChanged) {
						t.Fatal(err)
					}
				}
				<-ctx.Done()
				return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
					if err := lease.Guard(tx); err != nil {
						return err
					}
					return tx.Set(c.Doc("data/d"), map[string]any{"v": 1})
				})
			})
			return outcome{err: err, after: func(t *testing.T) {
				if _, err := c.Doc("data/d").Get(context.Background()); err == nil {
					t.Error("the guarded write landed after the forced release")
				}
			}}
		},
		is:   []error{lock.ErrNotHeld},
		says: []string{`lock "k"`, "gone"},
	}, {
		// Guard in a transaction whose context the lost lease ended
		// mid-way: its read fails with a bare Canceled, yet Guard says the
		// lease was lost, and why.
		name: "Guard after the keep-alive's context ended",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			// A lease of 9 s: the renewal that finds the document gone has
			// 6 s to answer before the lease would run out untold (on 3 s,
			// a loaded machine's renewal came back late and the cause was
			// "not renewed", not "gone").
			lease, err := newLocker(t, c, lock.WithLeaseDuration(9*time.Second)).TryAcquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			kctx, stop := lease.KeepAlive(context.Background())
			defer stop()
			err = c.RunTransaction(kctx, func(ctx context.Context, tx *firestore.Transaction) error {
				if _, err := c.Collection(coll).Doc("k").Delete(context.Background()); err != nil {
					t.Fatal(err)
				}
				<-ctx.Done()
				return lease.Guard(tx)
			})
			return outcome{err: err}
		},
		is:   []error{lock.ErrNotHeld},
		says: []string{`lock "k"`, "gone"},
	}, {
		// Work under KeepAlive's context that a lost lease cut off: its
		// own error is gRPC's Canceled, which Explain turns into the loss.
		name: "Explain under KeepAlive's context",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			// A 9-s lease, as the Guard case has: the renewal that finds
			// the document gone has 6 s to answer (CI's run of 11-29 13:20:
			// with 3 s, a loaded machine's renewal came back after the lease
			// and the cause said "not renewed", not "gone").
			lease, err := newLocker(t, c, lock.WithLeaseDuration(9*time.Second)).TryAcquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			kctx, stop := lease.KeepAlive(context.Background())
			defer stop()
			if _, err := c.Collection(coll).Doc("k").Delete(context.Background()); err != nil {
				t.Fatal(err)
			}
			<-kctx.Done()
			_, err = c.Doc("data/d").Get(kctx)
			if errors.Is(err, lock.ErrNotHeld) {
				t.Fatal("a bare RPC error matches ErrNotHeld: nothing left for Explain to do")
			}
			return outcome{err: lock.Explain(kctx, err)}
		},
		is:   []error{lock.ErrNotHeld},
		says: []string{`lock "k"`, "gone", "Canceled"},
	}, {
		// Acquire gives up waiting for a held key: the error is the
		// context's and the last answer's, a *HeldError naming the holder.
		name: "Acquire's timeout",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			holder := newLocker(t, c, lock.WithOwner("the-holder"))
			if _, err := holder.TryAcquire(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
			// Long enough for the first try to be answered on a loaded
			// machine: a deadline inside it ends the wait with no answer.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := newLocker(t, c).Acquire(ctx, "k")
			var held *lock.HeldError
			if !errors.As(err, &held) || held.Holders[0].Owner != "the-holder" {
				t.Errorf("errors.As(*HeldError) on %v: %v", err, held)
			}
			return outcome{err: err}
		},
		is:   []error{context.DeadlineExceeded, lock.ErrHeld},
		says: []string{"waiting for", "the-holder"},
	}, {
		// defer lease.Release(ctx) with a request's context that was
		// cancelled: the release still goes through, within its grace.
		name: "Release after its context was cancelled",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			l := newLocker(t, c)
			lease, err := l.TryAcquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return outcome{err: lease.Release(ctx), after: func(t *testing.T) {
				if n := countDocs(t, c, coll); n != 0 {
					t.Errorf("%d lease documents left after the release", n)
				}
				if _, err := l.TryAcquire(context.Background(), "k"); err != nil {
					t.Errorf("the key after the release: %v", err)
				}
			}}
		},
		is: nil, // success
	}, {
		// The same Locker asks for a key it holds: held, by its own owner,
		// and the message names the option that joins.
		name: "own reentry",
		run: func(t *testing.T) outcome {
			c := firelocktest.NewClient(t)
			l := newLocker(t, c, lock.WithOwner("me"))
			if _, err := l.TryAcquire(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
			_, err := l.TryAcquire(context.Background(), "k")
			return outcome{err: err}
		},
		is:   []error{lock.ErrHeld},
		says: []string{`"k" by me`, "Reentrant()"},
	}, {
		// A grant whose answers come back nearly a lease late (settled by
		// reading back, slower still) is never handed over as a lease that
		// has ended, or is about to, by the holder's own clock.
		// A grant whose answer is lost is settled by reading back once its
		// RPC's bound (a lease) has passed: the grant landed, but its lease
		// has ended by its holder's clock, and is not handed over.
		name: "grant answered after its lease",
		run: func(t *testing.T) outcome {
			const d = 3 * time.Second
			p, l, direct := proxied(t, lock.WithLeaseDuration(d))
			warmUp(t, l)
			if err := p.DropAnswers(time.Minute); err != nil {
				t.Fatal(err)
			}
			// Answers come back only after the grant's bound (a lease):
			// the read-back that settles it is answered, too late.
			healed := time.AfterFunc(d+d/6, p.Heal)
			defer healed.Stop()
			lease, err := l.TryAcquire(context.Background(), "k")
			if err == nil {
				if left := lock.LocalTimeLeft(lease); left <= 0 {
					t.Errorf("TryAcquire handed over a lease that had ended %v before, by its holder's clock", -left)
				}
				return outcome{err: errors.New("handed over: " + lease.Key())}
			}
			return outcome{err: err, after: func(t *testing.T) {
				// Whatever the grant wrote is removed, or ends with its lease.
				next := newLocker(t, direct)
				for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
					lease, err := next.TryAcquire(context.Background(), "k")
					if err == nil {
						lease.Release(context.Background())
						return
					}
					if time.Since(start) > 2*d {
						t.Fatalf("the key is still taken %v after the refused grant: %v", 2*d, err)
					}
				}
			}}
		},
		is:   []error{lock.ErrUnanswered},
		says: []string{"its lease"},
	}}
	// Warm the emulator before eight cases at once make their first
	// commits: run alone, this test is the binary's first, and a cold
	// emulator on a loaded machine took more than the 10 s bound of a
	// client's first commit (the proof of its connection), failing cases
	// before they tested anything.
	warmUp(t, newLocker(t, firelocktest.NewClient(t)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tc.run(t)
			if tc.is == nil && o.err != nil {
				t.Fatalf("err = %v, want success", o.err)
			}
			for _, target := range tc.is {
				if !errors.Is(o.err, target) {
					t.Errorf("err = %v: errors.Is(err, %v) is false", o.err, target)
				}
			}
			for _, s := range tc.says {
				if o.err == nil || !strings.Contains(o.err.Error(), s) {
					t.Errorf("err = %v: want it to say %q", o.err, s)
				}
			}
			if o.after != nil {
				o.after(t)
			}
		})
	}
}
