package loadgen

import "time"

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	Count  int64   `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p99_9_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// LatencyOf summarises h in milliseconds.
func LatencyOf(h *Histogram) LatencySummary {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return LatencySummary{
		Count:  h.Count(),
		P50Ms:  ms(h.Percentile(50)),
		P99Ms:  ms(h.Percentile(99)),
		P999Ms: ms(h.Percentile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}
