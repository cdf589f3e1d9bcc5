package loadgen

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"
)

// SlowRequest is one request kept by Slowest: its trace context, latency
// and outcome. It is part of summary.json.
type SlowRequest struct {
	// TraceID is the request's trace id, 32 lowercase hex digits.
	TraceID string `json:"trace_id"`
	// SpanID is the span id loadgen sent as the parent (16 hex digits):
	// the API's server span is its child.
	SpanID string `json:"span_id"`
	// LatencyMs is measured from the request's scheduled start, as every
	// latency of the report.
	LatencyMs float64 `json:"latency_ms"`
	Code      string  `json:"code"`
	Endpoint  string  `json:"endpoint,omitempty"`
	Class     string  `json:"class,omitempty"`
}

// PhaseSlowest is the slowest requests of one phase, slowest first.
type PhaseSlowest struct {
	Phase    string        `json:"phase"`
	Requests []SlowRequest `json:"requests"`
}

// Slowest keeps, per phase, the N slowest finished requests whose
// traceparent was flagged sampled (those the API traced), so a report can
// point at their traces. Each phase holds at most N requests whatever the
// load, and Record costs a comparison for a request that is not among them.
// It is safe for concurrent use.
type Slowest struct {
	n int

	mu     sync.Mutex
	phases []string // in the order first recorded
	heaps  map[string]*slowHeap
}

// NewSlowest returns an empty Slowest keeping n (>= 1) requests per phase.
func NewSlowest(n int) *Slowest {
	return &Slowest{n: max(n, 1), heaps: map[string]*slowHeap{}}
}

// Record considers res for phase. Dropped arrivals and requests that were
// not sampled (or sent no traceparent) are ignored. Among equally slow
// requests, the one recorded first is kept.
func (s *Slowest) Record(phase string, res Result) {
	if res.Dropped || !res.Sampled || !res.TraceID.IsValid() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.heaps[phase]
	if h == nil {
		h = &slowHeap{}
		s.heaps[phase] = h
		s.phases = append(s.phases, phase)
	}
	switch {
	case h.Len() < s.n:
		heap.Push(h, slowEntryOf(res))
	case res.Latency > (*h)[0].latency:
		(*h)[0] = slowEntryOf(res)
		heap.Fix(h, 0)
	}
}

// Phases returns every phase that recorded a request, in the order each
// was first recorded, its requests slowest first.
func (s *Slowest) Phases() []PhaseSlowest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PhaseSlowest, 0, len(s.phases))
	for _, phase := range s.phases {
		entries := slices.Clone(*s.heaps[phase])
		slices.SortFunc(entries, func(a, b slowEntry) int { return cmp.Compare(b.latency, a.latency) })
		ps := PhaseSlowest{Phase: phase, Requests: make([]SlowRequest, len(entries))}
		for i, e := range entries {
			ps.Requests[i] = e.req
		}
		out = append(out, ps)
	}
	return out
}

// slowEntry is one kept result.
type slowEntry struct {
	latency time.Duration
	req     SlowRequest
}

// slowEntryOf keeps what a report needs of res.
func slowEntryOf(res Result) slowEntry {
	return slowEntry{latency: res.Latency, req: SlowRequest{
		TraceID: res.TraceID.String(), SpanID: res.SpanID.String(),
		LatencyMs: float64(res.Latency) / float64(time.Millisecond),
		Code:      res.Code, Endpoint: res.Endpoint, Class: res.Class,
	}}
}

// slowHeap is a min-heap on latency: its root is the fastest kept request,
// the one a slower request replaces.
type slowHeap []slowEntry

func (h slowHeap) Len() int           { return len(h) }
func (h slowHeap) Less(i, j int) bool { return h[i].latency < h[j].latency }
func (h slowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slowHeap) Push(x any)        { *h = append(*h, x.(slowEntry)) }
func (h *slowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
