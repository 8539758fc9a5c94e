package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func init() {
	scenarios = append(scenarios,
		scenario{"booking", "booking, distinct seats", benchBookingDistinct},
		scenario{"booking", "booking, one hot seat (409 latency)", benchBookingHot},
		scenario{"booking", "booking scaling, distinct seats", benchBookingScaling},
	)
}

var errSeedTaken = errors.New("seed: seat taken")

// seedBook is the seed's booking: one transaction per seat, no lease.
func seedBook(ctx context.Context, c *firestore.Client, screening, seat, uid string) error {
	ref := c.Collection(booking.Screenings).Doc(screening).Collection("seats").Doc(seat)
	return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		if s.Exists() {
			return errSeedTaken
		}
		return tx.Create(ref, map[string]any{"status": "booked", "uid": uid, "bookedAt": firestore.ServerTimestamp})
	})
}

func bigScreening(ctx context.Context, c *firestore.Client, id string) error {
	var rows []string
	for r := 'A'; r <= 'Z'; r++ {
		rows = append(rows, string(r))
	}
	_, err := c.Collection(booking.Screenings).Doc(id).Set(ctx, booking.Screening{Title: "bench", Rows: rows, SeatsPerRow: 999})
	return err
}

// seatN is the n-th seat of a 26x999 screening.
func seatN(n int64) string { return fmt.Sprintf("%c%d", 'A'+rune(n/999%26), 1+n%999) }

func benchBookingDistinct(ctx context.Context, c *firestore.Client, cfg config) ([]result, comparison, error) {
	name := fmt.Sprintf("booking, distinct seats, %d clients", cfg.concurrency)
	svc := booking.New(c)
	var rs []result
	for _, v := range []struct {
		variant string
		book    func(ctx context.Context, screening string, seat string, w, i int) error
	}{
		{"firelock booking.Book", func(ctx context.Context, screening, seat string, w, i int) error {
			_, _, err := svc.Book(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint(w, "-", i)})
			return err
		}},
		{"baseline: tx per seat, no lease", func(ctx context.Context, screening, seat string, w, i int) error {
			return seedBook(ctx, c, screening, seat, fmt.Sprint("u", w))
		}},
	} {
		screening := fmt.Sprint("distinct-", time.Now().UnixNano())
		if err := bigScreening(ctx, c, screening); err != nil {
			return nil, comparison{}, err
		}
		var next atomic.Int64
		rs = append(rs, measure(ctx, name, v.variant, cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
			return v.book(ctx, screening, seatN(next.Add(1)), w, i)
		}, nil))
	}
	return rs, comparison{name, "bookings/s", rs[0].OpsPerS, rs[1].OpsPerS, ratio(rs[0].OpsPerS, rs[1].OpsPerS), "higher"}, nil
}

// benchBookingScaling: distinct seats at growing concurrency. No global
// serialization means throughput grows with clients until the machine (here
// the emulator on the same cores) is the limit.
func benchBookingScaling(ctx context.Context, c *firestore.Client, cfg config) ([]result, comparison, error) {
	const name = "booking scaling, distinct seats"
	svc := booking.New(c)
	screening := fmt.Sprint("scale-", time.Now().UnixNano())
	if err := bigScreening(ctx, c, screening); err != nil {
		return nil, comparison{}, err
	}
	var next atomic.Int64
	var rs []result
	for _, clients := range []int{1, 4, 16, cfg.concurrency} {
		rs = append(rs, measure(ctx, name, fmt.Sprintf("firelock booking.Book, %d clients", clients), clients, cfg.duration, func(ctx context.Context, w, i int) error {
			_, _, err := svc.Book(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seatN(next.Add(1))}, RequestID: fmt.Sprint(clients, "-", w, "-", i)})
			return err
		}, nil))
	}
	last := rs[len(rs)-1]
	return rs, comparison{name, fmt.Sprintf("bookings/s, %d vs 1 client", cfg.concurrency), last.OpsPerS, rs[0].OpsPerS, ratio(last.OpsPerS, rs[0].OpsPerS), "higher"}, nil
}

// benchBookingHot: every client wants the same seat; one wins, the others
// must learn they lost. The winner opens the next round on the next seat of
// the same screening (warm caches, as for a real screening). Latency of the 409s.
func benchBookingHot(ctx context.Context, c *firestore.Client, cfg config) ([]result, comparison, error) {
	name := fmt.Sprintf("booking, one hot seat, %d clients", cfg.concurrency)
	svc := booking.New(c)
	lost := func(err error) bool {
		return errors.Is(err, booking.ErrSeatTaken) || errors.Is(err, booking.ErrSeatBusy) || errors.Is(err, errSeedTaken)
	}
	var rs []result
	for _, v := range []struct {
		variant string
		book    func(ctx context.Context, screening, seat string, w, i int) error
	}{
		{"firelock booking.Book (409s)", func(ctx context.Context, screening, seat string, w, i int) error {
			_, _, err := svc.Book(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint(w, "-", i)})
			return err
		}},
		{"baseline: tx per seat (409s)", func(ctx context.Context, screening, seat string, w, i int) error {
			return seedBook(ctx, c, screening, seat, fmt.Sprint("u", w))
		}},
	} {
		r, err := hotRounds(ctx, c, name, v.variant, cfg, v.book, lost)
		if err != nil {
			return nil, comparison{}, err
		}
		rs = append(rs, r)
	}
	return rs, comparison{name, "409 p99 ms", rs[0].P99ms, rs[1].P99ms, ratio(rs[0].P99ms, rs[1].P99ms), "lower"}, nil
}

// hotRounds runs rounds on one hot seat of a fresh screening: every client
// tries the round's seat; whoever wins opens the next round on the next
// seat (warm caches, as for a real screening). The result is the latency
// of the losing answers.
func hotRounds(ctx context.Context, c *firestore.Client, name, variant string, cfg config,
	try func(ctx context.Context, screening, seat string, w, i int) error, lost func(error) bool) (result, error) {
	screening := fmt.Sprint("hot-", time.Now().UnixNano())
	if err := bigScreening(ctx, c, screening); err != nil {
		return result{}, err
	}
	var round atomic.Int64
	var losses durations
	r := measure(ctx, name, variant, cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
		rd := round.Load()
		t := time.Now()
		err := try(ctx, screening, seatN(rd), w, i)
		if lost(err) {
			losses.add(time.Since(t))
			return err
		}
		if err == nil { // the seat is gone: the winner opens the next round
			round.CompareAndSwap(rd, rd+1)
		}
		return err
	}, lost)
	lr := summarize(name, variant, losses.ds, r.Errors, time.Duration(float64(time.Second)*float64(r.Ops)/max(r.OpsPerS, 1)))
	lr.Note = fmt.Sprintf("latency of %d 409 answers; %d answers in all at %.1f/s, %d rounds", len(losses.ds), r.Ops, r.OpsPerS, round.Load())
	return lr, nil
}

// durations collects latencies from many goroutines.
type durations struct {
	mu sync.Mutex
	ds []time.Duration
}

func (d *durations) add(x time.Duration) {
	d.mu.Lock()
	d.ds = append(d.ds, x)
	d.mu.Unlock()
}
