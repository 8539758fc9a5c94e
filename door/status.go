package door

import (
	"context"
	"fmt"
	"sort"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/ticket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Status is a screening's door as operators ask about it (firelock door
// status SCREENING): what the door is, how many tickets are expected and
// in, and each gate's scans.
type Status struct {
	ScreeningID string
	Door        *Config // nil: the screening has no door
	Expected    int64   // valid tickets of the screening
	In          int64   // tickets in now
	Out         int64   // tickets out now (they went in; with reentry)
	Gates       []GateStatus
}

// GateStatus counts one gate's recorded scans, by what they came to.
type GateStatus struct {
	Gate      string
	Scans     int64 // all recorded at the gate
	Admitted  int64
	Exited    int64
	Conflicts int64 // offline admissions of tickets already in
}

// Status counts a screening's door with aggregation queries (count(), a
// read per 1,000 index entries each): 3, then 4 per gate of the door, and
// for gates that no longer belong to the door nothing (they are listed
// with the door's gates only). Errors: booking.ErrScreeningNotFound.
func (s *Service) Status(ctx context.Context, screeningID string) (Status, error) {
	snap, err := s.client.Collection(booking.Screenings).Doc(screeningID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Status{}, fmt.Errorf("%w: %q", booking.ErrScreeningNotFound, screeningID)
	}
	if err != nil {
		return Status{}, err
	}
	st := Status{ScreeningID: screeningID}
	if c, ok, err := ConfigOf(snap); err != nil {
		return Status{}, err
	} else if ok {
		st.Door = &c
	}
	count := func(q firestore.Query) (int64, error) {
		res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
		if err != nil {
			return 0, err
		}
		v, ok := res["n"].(*firestorepb.Value)
		if !ok {
			return 0, fmt.Errorf("door: count() answered %T", res["n"])
		}
		return v.GetIntegerValue(), nil
	}
	tickets := s.client.Collection(ticket.Collection).Where("screeningId", "==", screeningID)
	checkins := s.client.Collection(CheckIns).Where("screeningId", "==", screeningID)
	if st.Expected, err = count(tickets.Where("status", "==", ticket.StatusValid)); err != nil {
		return Status{}, err
	}
	if st.In, err = count(checkins.Where("state", "==", StateIn)); err != nil {
		return Status{}, err
	}
	if st.Out, err = count(checkins.Where("state", "==", StateOut)); err != nil {
		return Status{}, err
	}
	if st.Door == nil {
		return st, nil
	}
	scans := s.client.Collection(booking.Screenings).Doc(screeningID).Collection(Scans)
	for _, g := range st.Door.Gates {
		gs := GateStatus{Gate: g}
		at := scans.Where("gate", "==", g)
		for _, c := range []struct {
			dst *int64
			q   firestore.Query
		}{{&gs.Scans, at}, {&gs.Admitted, at.Where("result", "==", ResultAdmitted)}, {&gs.Exited, at.Where("result", "==", ResultExited)}, {&gs.Conflicts, at.Where("result", "==", ResultConflict)}} {
			if *c.dst, err = count(c.q); err != nil {
				return Status{}, err
			}
		}
		st.Gates = append(st.Gates, gs)
	}
	return st, nil
}

// RecordedScan is a scan as recorded, with its nonce.
type RecordedScan struct {
	Nonce string
	ScanRecord
}

// ScansOf reads every scan recorded for a screening, oldest first (one
// read per scan): for the report's attendance and the door benchmark's
// checks.
func (s *Service) ScansOf(ctx context.Context, screeningID string) ([]RecordedScan, error) {
	snaps, err := s.client.Collection(booking.Screenings).Doc(screeningID).Collection(Scans).Documents(ctx).GetAll()
	if err != nil {
		return nil, err
	}
	out := make([]RecordedScan, 0, len(snaps))
	for _, snap := range snaps {
		var r ScanRecord
		if err := snap.DataTo(&r); err != nil {
			return nil, fmt.Errorf("door: scan %s is malformed: %w", snap.Ref.ID, err)
		}
		out = append(out, RecordedScan{Nonce: snap.Ref.ID, ScanRecord: r})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// CheckInOf reads ticket id's check-in: ok false when it has none (it never
// went in).
func (s *Service) CheckInOf(ctx context.Context, ticketID string) (c CheckIn, ok bool, err error) {
	snap, err := s.client.Collection(CheckIns).Doc(ticketID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return CheckIn{}, false, nil
	}
	if err != nil {
		return CheckIn{}, false, err
	}
	if err := snap.DataTo(&c); err != nil {
		return CheckIn{}, false, err
	}
	return c, true, nil
}
