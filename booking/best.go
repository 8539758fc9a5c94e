package booking

import (
	"slices"
	"strconv"
)

// Best available (CONTRACT §11): the server picks count free seats for the
// buyer, best first. This file is the choice itself, a pure function of the
// hall; besthold.go reads the hall and claims the chosen block.

// Hall is a screening's seats as a best-available choice sees them: its
// layout, and which seats are free, in layout order (CONTRACT §7a: rows in
// order, then seat numbers ascending; the seat of row r and number n is at
// r*SeatsPerRow + n-1). Rows are listed from the screen back.
type Hall struct {
	Rows        []string
	SeatsPerRow int
	Free        []bool // len(Rows)*SeatsPerRow
}

// Block is a candidate for a request: its seats, by their index in the
// layout order, ascending.
type Block []int

// SeatIDs names a block's seats ("F12").
func (h Hall) SeatIDs(b Block) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = h.Rows[x/h.SeatsPerRow] + strconv.Itoa(x%h.SeatsPerRow+1)
	}
	return out
}

// FreeSeats counts the hall's free seats.
func (h Hall) FreeSeats() int {
	n := 0
	for _, f := range h.Free {
		if f {
			n++
		}
	}
	return n
}

// RowOrder ranks the hall's rows, best first. The rows a screening's
// preference names come first, in its order (labels the layout does not
// have, and repeats, are ignored); the others follow in the default order:
// the row about two thirds of the way back from the screen first (index
// round(2(n-1)/3) of n rows), then outward from it one row at a time, the
// row behind before the row in front at the same distance.
func RowOrder(rows []string, preference []string) []int {
	order := make([]int, 0, len(rows))
	placed := make([]bool, len(rows))
	for _, label := range preference {
		if i := slices.Index(rows, label); i >= 0 && !placed[i] {
			placed[i] = true
			order = append(order, i)
		}
	}
	n := len(rows)
	if n == 0 {
		return order
	}
	target := (2*(n-1) + 1) / 3 // round(2(n-1)/3)
	for d := 0; len(order) < n && d < n; d++ {
		for _, r := range []int{target + d, target - d} {
			if r >= 0 && r < n && !placed[r] {
				placed[r] = true
				order = append(order, r)
			}
		}
	}
	return order
}

// BestBlocks lists the candidates for count seats of hall h, best first,
// rows ranked by RowOrder(h.Rows, preference).
//
// A together block is count free seats side by side in one row. Blocks
// that strand a single free seat beside them (between the block and a
// taken seat or the row's end) all come after every block that strands
// none, so the first candidate strands one only when no block anywhere in
// the hall avoids it. Within each of those two groups, a better row comes
// first, and within a row the block whose middle is nearest the row's
// middle (of two equally near, the one with the lower seat numbers).
//
// With together false, the together blocks come first all the same; when
// there is none, the one candidate is the count best free seats wherever
// they are (by row rank, then nearness to the row's middle). No candidate:
// fewer than count free seats (or, together, no block of count).
//
// Listing every block of an empty hall of 2,000 seats takes about a
// tenth of a millisecond; Best, which stops at the first, a few
// microseconds (BenchmarkBestBlocks).
func BestBlocks(h Hall, preference []string, count int, together bool) []Block {
	if !h.valid(count) {
		return nil
	}
	order := RowOrder(h.Rows, preference)
	starts := make([]int, 0, len(h.Rows)*max(h.SeatsPerRow-count+1, 0))
	h.blocks(order, count, func(start int) bool {
		starts = append(starts, start)
		return true
	})
	if len(starts) == 0 && !together {
		if b := splitSeats(h, order, count); b != nil {
			return []Block{b}
		}
		return nil
	}
	seats := make([]int, len(starts)*count) // one allocation for every block
	out := make([]Block, len(starts))
	for i, start := range starts {
		b := seats[i*count : (i+1)*count : (i+1)*count]
		for j := range b {
			b[j] = start + j
		}
		out[i] = b
	}
	return out
}

// Best is BestBlocks' first candidate (nil: none), without listing the
// rest.
func Best(h Hall, preference []string, count int, together bool) Block {
	if !h.valid(count) {
		return nil
	}
	order := RowOrder(h.Rows, preference)
	var first Block
	h.blocks(order, count, func(start int) bool {
		first = make(Block, count)
		for j := range first {
			first[j] = start + j
		}
		return false
	})
	if first == nil && !together {
		return splitSeats(h, order, count)
	}
	return first
}

func (h Hall) valid(count int) bool {
	return count >= 1 && h.SeatsPerRow >= 1 && len(h.Free) == len(h.Rows)*h.SeatsPerRow
}

// blocks yields the first seat of each together block of count, in
// BestBlocks' order, until yield returns false: the blocks that strand no
// seat row by row in order, then those that do.
func (h Hall) blocks(order []int, count int, yield func(start int) bool) {
	m := h.SeatsPerRow
	type cand struct{ start, off int } // off: distance of the block's middle from the row's middle, doubled
	row := make([]cand, 0, m)
	for pass := range 2 {
		for _, r := range order {
			base := r * m
			row = row[:0]
			for start := 0; start+count <= m; {
				if !h.Free[base+start] {
					start++
					continue
				}
				lo, hi := start, start // the free run around start: [lo, hi)
				for hi < m && h.Free[base+hi] {
					hi++
				}
				for s := lo; s+count <= hi; s++ {
					if strands := s-lo == 1 || hi-(s+count) == 1; strands == (pass == 1) {
						row = append(row, cand{base + s, abs(2*s + count - m)})
					}
				}
				start = hi
			}
			slices.SortFunc(row, func(a, b cand) int {
				if a.off != b.off {
					return a.off - b.off
				}
				return a.start - b.start
			})
			for _, c := range row {
				if !yield(c.start) {
					return
				}
			}
		}
	}
}

// splitSeats is the candidate of a request that need not sit together when
// no block is left: the count best free seats, by row rank and then by
// nearness to the row's middle. None if fewer are free.
func splitSeats(h Hall, order []int, count int) Block {
	m := h.SeatsPerRow
	var b Block
	var row []int
	for _, r := range order {
		row = row[:0]
		for s := range m {
			if h.Free[r*m+s] {
				row = append(row, r*m+s)
			}
		}
		slices.SortStableFunc(row, func(a, c int) int { return abs(2*(a-r*m)+1-m) - abs(2*(c-r*m)+1-m) })
		for _, x := range row {
			if len(b) < count {
				b = append(b, x)
			}
		}
		if len(b) == count {
			slices.Sort(b)
			return b
		}
	}
	return nil
}

// Stranded lists the free seats that are stranded singles: free, with no
// free seat beside them in their row.
func (h Hall) Stranded() []int {
	var out []int
	m := h.SeatsPerRow
	for i, f := range h.Free {
		if !f {
			continue
		}
		s := i % m
		left := s > 0 && h.Free[i-1]
		right := s < m-1 && h.Free[i+1]
		if !left && !right {
			out = append(out, i)
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
