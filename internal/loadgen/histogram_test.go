package loadgen

import (
	"math"
	"sync"
	"testing"
	"time"
)

// within reports whether got is within 1% of want.
func within(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= 0.01*float64(want)
}

func TestHistogramPercentilesWithinOnePercent(t *testing.T) {
	// 1µs, 2µs, ..., 100000µs once each: the p-th percentile is p*1000µs.
	h := NewHistogram()
	for i := 1; i <= 100000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != 100000 {
		t.Fatalf("count = %d", h.Count())
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{99.9, 99900 * time.Microsecond},
		{100, 100 * time.Millisecond},
	} {
		if got := h.Percentile(c.p); !within(got, c.want) {
			t.Errorf("p%v = %v, want %v ±1%%", c.p, got, c.want)
		}
	}
	if got := h.Max(); !within(got, 100*time.Millisecond) {
		t.Errorf("max = %v", got)
	}
}

func TestHistogramWideRange(t *testing.T) {
	// Each value recorded alone comes back within 1% across 1µs..60s.
	for _, d := range []time.Duration{time.Microsecond, 37 * time.Microsecond, 1234 * time.Microsecond,
		time.Second + 7*time.Millisecond, 59 * time.Second} {
		h := NewHistogram()
		h.Record(d)
		if got := h.Percentile(50); !within(got, d) {
			t.Errorf("recorded %v, p50 = %v", d, got)
		}
	}
	h := NewHistogram()
	h.Record(0)
	h.Record(2 * time.Minute)
	if h.Count() != 2 || h.Clamped() != 1 {
		t.Errorf("count %d clamped %d, want 2 and 1", h.Count(), h.Clamped())
	}
	if got := h.Max(); !within(got, 60*time.Second) {
		t.Errorf("clamped max = %v, want 60s", got)
	}
	if got := NewHistogram().Percentile(99); got != 0 {
		t.Errorf("empty p99 = %v", got)
	}
}

func TestHistogramMergeAndConcurrency(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 1; i <= 1000; i++ {
				if g%2 == 0 {
					a.Record(time.Duration(i) * time.Millisecond)
				} else {
					b.Record(time.Duration(i) * time.Millisecond)
				}
			}
		})
	}
	// Merging in both directions while recording must not deadlock or race.
	wg.Go(func() { a.Clone().Merge(b) })
	wg.Go(func() { b.Clone().Merge(a) })
	wg.Wait()

	a.Merge(b)
	if a.Count() != 8000 {
		t.Fatalf("merged count = %d, want 8000", a.Count())
	}
	if got := a.Percentile(50); !within(got, 500*time.Millisecond) {
		t.Errorf("merged p50 = %v", got)
	}
	a.Merge(a) // self-merge doubles every count
	if a.Count() != 16000 {
		t.Errorf("self-merged count = %d", a.Count())
	}
	a.Reset()
	if a.Count() != 0 || a.Percentile(50) != 0 {
		t.Errorf("reset left %d", a.Count())
	}
}
