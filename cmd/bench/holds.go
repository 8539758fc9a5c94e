package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/booking"
)

func init() {
	scenarios = append(scenarios,
		scenario{"booking", "holds, distinct seats (hold+confirm vs book)", benchHoldConfirm},
		scenario{"booking", "hold, one hot seat (409 latency)", benchHoldHot},
	)
}

// benchHoldConfirm: a checkout (hold, then confirm) on distinct seats
// against a one-step booking (what the hold's second step costs), and
// against the seed's one-step transaction per seat.
func benchHoldConfirm(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	name := fmt.Sprintf("holds, distinct seats, %d clients", cfg.concurrency)
	svc := booking.New(c)
	defer svc.Close()
	var rs []result
	for _, v := range []struct {
		variant string
		op      func(ctx context.Context, screening, seat string, w, i int) error
	}{
		{"firelock Hold+ConfirmHold", func(ctx context.Context, screening, seat string, w, i int) error {
			uid := fmt.Sprint("u", w)
			h, _, err := svc.Hold(ctx, fmt.Sprint("w", w), booking.Request{UID: uid, ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint(screening, "-", w, "-", i)}, 0)
			if err != nil {
				return err
			}
			_, _, err = svc.ConfirmHold(ctx, uid, h.ID)
			return err
		}},
		{"baseline: firelock booking.Book", func(ctx context.Context, screening, seat string, w, i int) error {
			_, _, err := svc.Book(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint(screening, "-", w, "-", i)})
			return err
		}},
		{"baseline: tx per seat, no lease", func(ctx context.Context, screening, seat string, w, i int) error {
			return seedBook(ctx, c, screening, seat, fmt.Sprint("u", w))
		}},
	} {
		screening := fmt.Sprint("checkout-", time.Now().UnixNano())
		if err := bigScreening(ctx, c, screening); err != nil {
			return nil, nil, err
		}
		var next atomic.Int64
		rs = append(rs, measure(ctx, name, v.variant, cfg.concurrency, cfg.duration, func(ctx context.Context, w, i int) error {
			return v.op(ctx, screening, seatN(next.Add(1)), w, i)
		}, nil))
	}
	return rs, []comparison{
		{name, "checkouts/s vs bookings/s", rs[0].OpsPerS, rs[1].OpsPerS, ratio(rs[0].OpsPerS, rs[1].OpsPerS), "higher"},
		{name, "checkouts/s vs the seed's tx per seat", rs[0].OpsPerS, rs[2].OpsPerS, ratio(rs[0].OpsPerS, rs[2].OpsPerS), "higher"},
		{"RPCs per checkout", "counted RPCs, hold+confirm vs a booking", *rs[0].RPCsPerOp, *rs[1].RPCsPerOp, ratio(*rs[0].RPCsPerOp, *rs[1].RPCsPerOp), "lower"},
	}, nil
}

// benchHoldHot: every client wants to hold the same seat; the losers must
// learn it at once (seat_held, seat_busy). Latency of the 409s, against
// the seed's transaction per seat.
func benchHoldHot(ctx context.Context, c *firestore.Client, cfg config) ([]result, []comparison, error) {
	name := fmt.Sprintf("hold, one hot seat, %d clients", cfg.concurrency)
	svc := booking.New(c)
	defer svc.Close()
	lost := func(err error) bool {
		return errors.Is(err, booking.ErrSeatHeld) || errors.Is(err, booking.ErrSeatTaken) || errors.Is(err, booking.ErrSeatBusy) || errors.Is(err, errSeedTaken)
	}
	var rs []result
	for _, v := range []struct {
		variant string
		op      func(ctx context.Context, screening, seat string, w, i int) error
	}{
		{"firelock booking.Hold (409s)", func(ctx context.Context, screening, seat string, w, i int) error {
			_, _, err := svc.Hold(ctx, fmt.Sprint("w", w), booking.Request{UID: fmt.Sprint("u", w), ScreeningID: screening, Seats: []string{seat}, RequestID: fmt.Sprint(screening, "-", w, "-", i)}, 0)
			return err
		}},
		{"baseline: tx per seat (409s)", func(ctx context.Context, screening, seat string, w, i int) error {
			return seedBook(ctx, c, screening, seat, fmt.Sprint("u", w))
		}},
	} {
		r, err := hotRounds(ctx, c, name, v.variant, cfg, v.op, lost)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, r)
	}
	return rs, []comparison{{name, "409 p99 ms", rs[0].P99ms, rs[1].P99ms, ratio(rs[0].P99ms, rs[1].P99ms), "lower"}}, nil
}
