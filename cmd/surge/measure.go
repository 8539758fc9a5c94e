package main

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// hotDocs keeps the time of every write of every Commit the functions and
// the admitter sent (rpcstats' OnWrite), by document path.
type hotDocs struct {
	mu     sync.Mutex
	writes map[string][]time.Time
}

func newHotDocs() *hotDocs { return &hotDocs{writes: map[string][]time.Time{}} }

// record is an rpcstats OnWrite: doc is the full resource name.
func (h *hotDocs) record(doc string, at time.Time) {
	if _, rest, ok := strings.Cut(doc, "/documents/"); ok {
		doc = rest
	}
	h.mu.Lock()
	h.writes[doc] = append(h.writes[doc], at)
	h.mu.Unlock()
}

func (h *hotDocs) snapshot() map[string][]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]time.Time, len(h.writes))
	for k, v := range h.writes {
		s := slices.Clone(v)
		slices.SortFunc(s, time.Time.Compare)
		out[k] = s
	}
	return out
}

// maxInWindow is the most of the sorted times that fall in any window
// [t, t+w), and where the first such window starts.
func maxInWindow(sorted []time.Time, w time.Duration) (int, time.Time) {
	best, from, j := 0, time.Time{}, 0
	for i := range sorted {
		for sorted[i].Sub(sorted[j]) >= w {
			j++
		}
		if n := i - j + 1; n > best {
			best, from = n, sorted[j]
		}
	}
	return best, from
}

// kindOf names what a document is, for the hottest document of each kind.
func kindOf(path string) string {
	p := strings.Split(path, "/")
	switch {
	case len(p) == 2 && p[0] == "sales":
		return "sale document (sales/{id})"
	case len(p) == 2 && p[0] == "saleStates":
		return "admission state (saleStates/{id})"
	case len(p) == 2 && p[0] == "saleRankings":
		return "ranking (saleRankings/{id})"
	case len(p) == 2 && p[0] == "locks" && strings.HasPrefix(p[1], "admit-"):
		return "admitter lease (locks/admit-{id})"
	case len(p) == 4 && p[0] == "counters" && p[2] == "shards":
		return "counter shard (counters/{id}/shards/{n})"
	case len(p) == 2 && p[0] == "counters":
		return "counter (counters/{id})"
	case len(p) == 4 && p[0] == "screenings" && p[2] == "seats":
		return "seat (screenings/{id}/seats/{seat})"
	case len(p) == 2 && p[0] == "screenings":
		return "screening"
	case len(p) == 2 && p[0] == "queue":
		return "place (queue/{queueId})"
	case len(p) == 2 && p[0] == "queueDraws":
		return "draw (queueDraws/{queueId})"
	case len(p) == 2 && p[0] == "holds":
		return "hold"
	case len(p) == 2 && p[0] == "bookings":
		return "booking"
	case len(p) >= 2 && p[0] == "jobRuns":
		return "job run (jobRuns/...)"
	}
	return collectionOf(path)
}

// collectionOf is the id of the collection a document is in.
func collectionOf(path string) string {
	p := strings.Split(path, "/")
	if len(p) < 2 {
		return path
	}
	return p[len(p)-2]
}

// quantile of sorted durations (nearest rank below).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*100) / 100 }

// ranks are the 1-based ranks of xs, ties sharing their mean rank.
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// spearman is Spearman's ρ of two paired samples: the Pearson correlation
// of their ranks. NaN with fewer than 3 pairs or a constant sample.
func spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 3 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// inversions counts the pairs i < j with later[i] > later[j]: pairs that
// came out in the other order than they went in.
func inversions(later []int) int {
	n := 0
	for i := range later {
		for j := i + 1; j < len(later); j++ {
			if later[i] > later[j] {
				n++
			}
		}
	}
	return n
}
