package main

import (
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

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*100) / 100 }
