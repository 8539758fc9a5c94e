package booking

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// hallOf draws a hall: one string a row, from the screen back, '.' a free
// seat and 'x' a taken one; rows are labelled A, B, ...
func hallOf(rows ...string) Hall {
	h := Hall{SeatsPerRow: len(rows[0])}
	for i, r := range rows {
		h.Rows = append(h.Rows, string(rune('A'+i)))
		for _, c := range r {
			h.Free = append(h.Free, c == '.')
		}
	}
	return h
}

// named lists the candidates' seats, "A1 A2" each.
func named(h Hall, bs []Block) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strings.Join(h.SeatIDs(b), " ")
	}
	return out
}

func TestRowOrder(t *testing.T) {
	labels := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('A' + i))
		}
		return out
	}
	for _, c := range []struct {
		name       string
		rows       int
		preference []string
		want       string
	}{
		{"ten rows: two thirds back, then outward, behind first", 10, nil, "GHFIEJDCBA"},
		{"three rows", 3, nil, "BCA"},
		{"one row", 1, nil, "A"},
		{"two rows", 2, nil, "BA"},
		{"a preference first, the rest by default", 4, []string{"C", "A"}, "CADB"},
		{"unknown labels and repeats are ignored", 4, []string{"Z", "B", "B", "AA"}, "BCDA"},
		{"a whole preference", 3, []string{"A", "B", "C"}, "ABC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := labels(c.rows)
			var got strings.Builder
			for _, r := range RowOrder(rows, c.preference) {
				got.WriteString(rows[r])
			}
			if got.String() != c.want {
				t.Fatalf("RowOrder = %s, want %s", got.String(), c.want)
			}
		})
	}
}

func TestBestBlocks(t *testing.T) {
	for _, c := range []struct {
		name       string
		hall       Hall
		preference []string
		count      int
		together   bool
		want       []string // the first candidates, in order
		all        bool     // want is every candidate
		none       bool     // no candidate at all
	}{
		{
			name: "default preference: the middle of the row two thirds back",
			hall: hallOf("......", "......", "......"), count: 2, together: true,
			// B3 B4 strands nothing; B1 B2 and B5 B6 are next, as near the middle
			// as each other, the lower seats first; then row C, behind.
			want: []string{"B3 B4", "B1 B2", "B5 B6", "C3 C4"},
		},
		{
			name: "orphan rule: the middle block would strand A3, so the pair at the end",
			hall: hallOf("...x.."), count: 2, together: true,
			want: []string{"A5 A6", "A2 A3", "A1 A2"}, all: true,
		},
		{
			name: "orphan rule across rows: a worse row that strands nothing beats the best row",
			// Row B is best (two thirds back of three); its only pairs strand a seat.
			hall: hallOf("......", "x...x.", "......"), count: 2, together: true,
			want: []string{"C3 C4", "C1 C2", "C5 C6", "A3 A4", "A1 A2", "A5 A6", "B3 B4", "B2 B3"},
		},
		{
			name: "orphan rule: when every block strands a seat, the best of them",
			hall: hallOf("...x"), count: 2, together: true,
			want: []string{"A2 A3", "A1 A2"}, all: true,
		},
		{
			name: "row ends: a single left at the end of a row is stranded too",
			// Row A (front) has five free: four of them leave A1 or A5 alone.
			// Row B, the better, has four free beside a taken seat: an exact fit.
			hall: hallOf(".....", "x...."), count: 4, together: true,
			want: []string{"B2 B3 B4 B5", "A1 A2 A3 A4", "A2 A3 A4 A5"}, all: true,
		},
		{
			name: "row ends: an exact fit against the row's end strands nothing",
			hall: hallOf("xx.."), count: 2, together: true,
			want: []string{"A3 A4"}, all: true,
		},
		{
			name: "a hall with only split seats: no block together",
			hall: hallOf(".x.x.x", "x.x.x."), count: 2, together: true,
			none: true,
		},
		{
			name: "a hall with only split seats, together false: the best single seats",
			// Row B (best of two) has B2 B4 B6: B4 is nearest its middle, then B2
			// and B6 are as near, B2 first.
			hall: hallOf(".x.x.x", "x.x.x."), count: 2, together: false,
			want: []string{"B2 B4"}, all: true,
		},
		{
			name: "split seats spill into the next row",
			hall: hallOf(".x.x.x", "x.x.x."), count: 4, together: false,
			want: []string{"A3 B2 B4 B6"}, all: true,
		},
		{
			name: "together false takes a block when one is left",
			hall: hallOf("......", ".x.x.x"), count: 2, together: false,
			want: []string{"A3 A4", "A1 A2", "A5 A6"},
		},
		{
			name: "together false: fewer free seats than asked",
			hall: hallOf("x.x", "xxx"), count: 2, together: false,
			none: true,
		},
		{
			name: "count 1: the middle seat of the best row",
			// B2 and B4 would each strand a seat at the row's end: they come
			// after every seat of the hall that strands none.
			hall: hallOf(".....", ".....", "....."), count: 1, together: true,
			want: []string{"B3", "B1", "B5", "C3"},
		},
		{
			name: "count 1: a seat that would strand its neighbour comes last",
			// A1 and A2 alone of row A: either strands the other.
			hall: hallOf("..xxx"), count: 1, together: true,
			want: []string{"A2", "A1"}, all: true,
		},
		{
			name: "count 1 fills a lone seat before splitting a pair",
			hall: hallOf(".x..x"), count: 1, together: true,
			want: []string{"A1", "A3", "A4"}, all: true,
		},
		{
			name: "the cap: 10 together in a row of 20, in its middle",
			hall: hallOf(strings.Repeat(".", 20)), count: 10, together: true,
			want: []string{"A6 A7 A8 A9 A10 A11 A12 A13 A14 A15"},
		},
		{
			name: "the cap: 10 fill a row of 10 exactly, and not a row with 9 free",
			hall: hallOf(strings.Repeat(".", 10), strings.Repeat(".", 9)+"x"), count: 10, together: true,
			want: []string{"A1 A2 A3 A4 A5 A6 A7 A8 A9 A10"}, all: true,
		},
		{
			name: "more than a row holds: none",
			hall: hallOf("........", "........"), count: 9, together: true,
			none: true,
		},
		{
			name: "a custom preference: the front row first",
			hall: hallOf("....", "....", "...."), preference: []string{"A"}, count: 2, together: true,
			want: []string{"A1 A2", "A3 A4", "B1 B2"},
		},
		{
			name: "a custom preference keeps the orphan rule",
			hall: hallOf("x...", "...."), preference: []string{"A", "B"}, count: 2, together: true,
			want: []string{"B1 B2", "B3 B4", "A2 A3", "A3 A4", "B2 B3"},
		},
		{
			name: "a full hall: none",
			hall: hallOf("xxxx", "xxxx"), count: 1, together: false,
			none: true,
		},
		{
			name: "count 0: none",
			hall: hallOf("...."), count: 0, together: true,
			none: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := named(c.hall, BestBlocks(c.hall, c.preference, c.count, c.together))
			if c.none {
				if len(got) != 0 {
					t.Fatalf("candidates %q, want none", got)
				}
				return
			}
			if c.all && !slices.Equal(got, c.want) {
				t.Fatalf("candidates %q, want exactly %q", got, c.want)
			}
			if len(got) < len(c.want) || !slices.Equal(got[:len(c.want)], c.want) {
				t.Fatalf("candidates %q, want them to begin %q", got, c.want)
			}
		})
	}
}

// Against a brute force on random halls: every together candidate is count
// free seats side by side in one row, each such block is listed once, and
// no block that strands a seat comes before one that strands none.
func TestBestBlocksListsEveryBlockOnceWithTheOrphanRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		rows, m := 1+rng.IntN(6), 1+rng.IntN(12)
		h := Hall{SeatsPerRow: m}
		for r := range rows {
			h.Rows = append(h.Rows, string(rune('A'+r)))
		}
		p := rng.Float64()
		for range rows * m {
			h.Free = append(h.Free, rng.Float64() < p)
		}
		count := 1 + rng.IntN(5)
		got := BestBlocks(h, nil, count, true)
		for _, together := range []bool{true, false} {
			all, first := BestBlocks(h, nil, count, together), Best(h, nil, count, together)
			if (len(all) == 0) != (first == nil) || (first != nil && !slices.Equal(all[0], first)) {
				t.Fatalf("trial %d, together %v: Best %v is not BestBlocks' first of %v", trial, together, first, all)
			}
		}
		want := 0
		strands := func(b Block) bool {
			s, r := b[0]%m, b[0]/m
			e := s + count // exclusive
			left := s >= 1 && h.Free[r*m+s-1] && (s == 1 || !h.Free[r*m+s-2])
			right := e <= m-1 && h.Free[r*m+e] && (e == m-1 || !h.Free[r*m+e+1])
			return left || right
		}
		for r := range rows {
			for s := 0; s+count <= m; s++ {
				if !slices.Contains(h.Free[r*m+s:r*m+s+count], false) {
					want++
				}
			}
		}
		if len(got) != want {
			t.Fatalf("trial %d: %d candidates, want %d blocks", trial, len(got), want)
		}
		seen := map[int]bool{}
		sawStranding := false
		for _, b := range got {
			if len(b) != count || seen[b[0]] {
				t.Fatalf("trial %d: block %v: wrong size or listed twice", trial, b)
			}
			seen[b[0]] = true
			for j, x := range b {
				if !h.Free[x] || x/m != b[0]/m || x != b[0]+j {
					t.Fatalf("trial %d: block %v is not free seats side by side in a row", trial, h.SeatIDs(b))
				}
			}
			if strands(b) {
				sawStranding = true
			} else if sawStranding {
				t.Fatalf("trial %d: block %v strands nothing yet comes after one that does", trial, h.SeatIDs(b))
			}
		}
	}
}

// A hall of 2,000 seats (50 rows of 40): empty, half sold at random, and
// nearly sold out; every candidate (BestBlocks) and the first (Best, what
// a hold uses). The baseline is one pass over the hall (FreeSeats), so
// the ratio says how many such passes a choice costs.
func BenchmarkBestBlocks(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	hallAt := func(sold float64) Hall {
		h := Hall{SeatsPerRow: 40}
		for r := range 50 {
			h.Rows = append(h.Rows, fmt.Sprintf("%c%c", 'A'+r/26, 'A'+r%26))
		}
		for range 2000 {
			h.Free = append(h.Free, rng.Float64() >= sold)
		}
		return h
	}
	for _, c := range []struct {
		name  string
		sold  float64
		count int
	}{{"empty/4", 0, 4}, {"half/2", 0.5, 2}, {"nearly-full/2", 0.95, 2}, {"empty/10", 0, 10}} {
		h := hallAt(c.sold)
		b.Run("all/"+c.name, func(b *testing.B) {
			for b.Loop() {
				BestBlocks(h, nil, c.count, true)
			}
		})
		b.Run("first/"+c.name, func(b *testing.B) {
			for b.Loop() {
				Best(h, nil, c.count, true)
			}
		})
	}
	b.Run("baseline-one-pass", func(b *testing.B) {
		h := hallAt(0.5)
		for b.Loop() {
			h.FreeSeats()
		}
	})
}
