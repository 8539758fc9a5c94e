package counter

import (
	"slices"
	"testing"
)

// A burst of increments from one handle spreads over the shards: 100 on
// 15 shards (6.7 each) put at most 10 on any one, in each of 20 bursts.
// One random shard per increment puts 11 or more on one in about 7 bursts
// of 10; the less used of two, in about one of 100,000.
func TestIncrementsSpreadOverTheShards(t *testing.T) {
	for burst := range 20 {
		c := &Counter{}
		c.numShards.Store(15)
		per := make([]int, 15)
		for range 100 {
			per[c.pick()]++
		}
		if most := slices.Max(per); most > 10 {
			t.Fatalf("burst %d: %d of 100 increments on one of 15 shards: %v", burst, most, per)
		}
	}
}
