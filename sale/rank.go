package sale

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rankState is the ranking of a sale's early joiners,
// saleRankings/{screeningId}: how many are ranked of the total counted
// when it began, the last draw ranked, whether it is over, and marks laid
// over the early joiners (each order with its exact rank). Written only in
// transactions guarded by the sale's admitter lease, one a tick.
type rankState struct {
	Ranked   int64      `firestore:"ranked"`
	Total    int64      `firestore:"total"`
	Frontier string     `firestore:"frontier"`
	Done     bool       `firestore:"done"`
	Marks    []rankMark `firestore:"marks"`
	// Writes are the commit times of this document's writes before its
	// last (writeBudget).
	Writes []time.Time `firestore:"writes"`
}

// rankMark is an order with the number of places before it in the line.
type rankMark struct {
	Order string `firestore:"order"`
	Rank  int64  `firestore:"rank"`
}

func (a *Admitter) rankingRef(id string) *firestore.DocumentRef {
	return a.s.client.Collection(Rankings).Doc(id)
}

// rank ranks the next page of early joiners. Once the ranking is over, it
// only looks for a straggler (one read).
func (a *Admitter) rank(r *saleRun) error {
	if r.rank.Done {
		late, err := a.s.client.Collection(Draws).Where("screeningId", "==", r.id).Limit(1).Documents(r.sctx).GetAll()
		if err != nil || len(late) == 0 {
			return err
		}
	}
	err := a.rankPage(r, false)
	if status.Code(err) == codes.NotFound {
		// A draw without its place (nothing deletes places, but a draw is
		// no proof): rank the page reading its places, skipping those.
		err = a.rankPage(r, true)
	}
	return err
}

// rankPage ranks the next page of early joiners, best draw first, in one
// guarded transaction: each place gets its order and its draw is deleted.
// The ranking is over once a page comes back short: every early join has
// committed by then (the join window), so a draw found later belongs to a
// join that overran its window; it goes last among the early joiners
// (stragglerPrefix), still before every later joiner.
//
// A draw is created in the commit that creates its place, and deleted in
// the one that gives the place its order, so a draw names a place that
// exists and has no order yet: the page's places are updated without being
// read (issue #51: a read each, 1,000 for the surge's early joiners), on
// the update's precondition that each exists. With readPlaces (after that
// precondition failed) it reads them and skips a place that is missing or
// has an order.
func (a *Admitter) rankPage(r *saleRun, readPlaces bool) error {
	ctx := r.sctx
	draws := a.s.client.Collection(Draws).Where("screeningId", "==", r.id)
	var rs rankState
	var held time.Time
	err := a.s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		rs, held = rankState{}, time.Time{}
		snap, err := readState(tx, a.rankingRef(r.id), &rs)
		if err != nil {
			return err
		}
		if err := r.lease.Guard(tx); err != nil {
			return err
		}
		if b := a.s.o.budget; !b.allows(rs.Writes, snap, snap.ReadTime) {
			held = b.from(rs.Writes, snap) // the next page a moment later
			return nil
		}
		page := rankPage
		if rs.Ranked == 0 && !rs.Done {
			page = firstRankPage
		}
		docs, err := tx.Documents(draws.OrderBy("draw", firestore.Asc).Limit(page)).GetAll()
		if err != nil {
			return err
		}
		if len(docs) == 0 && rs.Done {
			return nil // nothing to write
		}
		if rs.Ranked == 0 && !rs.Done && len(docs) > 0 {
			if rs.Total, err = countOf(ctx, draws, tx); err != nil {
				return err
			}
		}
		refs := make([]*firestore.DocumentRef, len(docs))
		for i, d := range docs {
			refs[i] = a.s.place(d.Ref.ID)
		}
		var places []*firestore.DocumentSnapshot
		if readPlaces {
			if places, err = tx.GetAll(refs); err != nil {
				return err
			}
		}
		spacing := max(1, int64(math.Ceil(float64(rs.Total)/earlyMarks)))
		for i, d := range docs {
			draw, _ := d.Data()["draw"].(string)
			if err := tx.Delete(d.Ref); err != nil {
				return err
			}
			if readPlaces && (!places[i].Exists() || orderOf(places[i]) != "") {
				continue
			}
			order := earlyOrder(draw)
			if rs.Done || draw <= rs.Frontier {
				order = stragglerPrefix + draw
				a.s.o.log.Warn("sale: an early join committed after the ranking passed it; it goes last of the early joiners", "screeningId", r.id, "queueId", d.Ref.ID)
			} else {
				rs.Frontier = draw
				if rs.Ranked%spacing == 0 {
					rs.Marks = append(rs.Marks, rankMark{Order: order, Rank: rs.Ranked})
				}
			}
			rs.Ranked++
			if err := tx.Update(refs[i], []firestore.Update{{Path: "order", Value: order}}); err != nil {
				return err
			}
		}
		rs.Done = rs.Done || len(docs) < page
		rs.Writes = a.s.o.budget.after(rs.Writes, snap)
		return tx.Set(a.rankingRef(r.id), rs)
	})
	if err != nil {
		return err
	}
	if !held.IsZero() {
		r.rankHeld = held
		return nil
	}
	r.rank = rs
	return nil
}

// thin keeps at most n marks, in order: it drops the mark closest to its
// predecessor (by rank) until n are left, so the survivors spread evenly.
func thin(marks []rankMark, n int) []rankMark {
	slices.SortFunc(marks, func(x, y rankMark) int { return cmp.Compare(x.Order, y.Order) })
	for len(marks) > n {
		drop, gap := 1, int64(math.MaxInt64)
		for i := 1; i < len(marks)-1; i++ { // keep the first and the last
			if g := marks[i].Rank - marks[i-1].Rank; g < gap {
				drop, gap = i, g
			}
		}
		marks = slices.Delete(marks, drop, drop+1)
	}
	return marks
}
