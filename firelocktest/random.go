package firelocktest

import (
	"math/rand/v2"
	"testing"
	"time"
)

// InjectAtRandom switches faults on p at random until stop is closed: one
// at a time (answers dropped after the server processed the request,
// answers delayed, connections reset), for a few hundred ms, then a healthy
// spell. note, if not nil, learns each fault's span. The returned channel
// is closed once the proxy is healed for good.
func (p *Proxy) InjectAtRandom(tb testing.TB, rnd *rand.Rand, stop <-chan struct{}, note func(fault string, from, to time.Time)) <-chan struct{} {
	done := make(chan struct{})
	faults := []struct {
		name   string
		inject func() error
	}{
		{"answers dropped", func() error { return p.DropAnswers(time.Duration(100+rnd.IntN(400)) * time.Millisecond) }},
		{"answers delayed", func() error { return p.Delay(time.Duration(200+rnd.IntN(1200)) * time.Millisecond) }},
		{"connections reset", p.Reset},
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				p.Heal()
				return
			case <-time.After(time.Duration(100+rnd.IntN(400)) * time.Millisecond):
			}
			f := faults[rnd.IntN(len(faults))]
			from := time.Now()
			if err := f.inject(); err != nil {
				tb.Error(err)
			}
			time.Sleep(time.Duration(100+rnd.IntN(500)) * time.Millisecond)
			p.Heal()
			if note != nil {
				note(f.name, from, time.Now())
			}
		}
	}()
	return done
}
