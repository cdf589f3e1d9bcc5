package loadgen

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// tracedResult is a finished request of latency ms with trace id n.
func tracedResult(n uint64, ms int, sampled bool) Result {
	var tid trace.TraceID
	var sid trace.SpanID
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n)
	return Result{
		Outcome: Outcome{Endpoint: "product", Code: "200", TraceID: tid, SpanID: sid, Sampled: sampled},
		Latency: time.Duration(ms) * time.Millisecond,
	}
}

// TestSlowestKeepsTheSlowestSampledPerPhase feeds two phases with known
// latencies, shuffled and from many goroutines: each phase keeps exactly its
// five slowest sampled requests, slowest first; faster ones, unsampled ones
// (however slow), dropped arrivals and requests without a trace id are
// left out, and the phases come in the order first recorded.
func TestSlowestKeepsTheSlowestSampledPerPhase(t *testing.T) {
	s := NewSlowest(5)
	var results []struct {
		phase string
		res   Result
	}
	add := func(phase string, res Result) {
		results = append(results, struct {
			phase string
			res   Result
		}{phase, res})
	}
	// ttl: sampled latencies 1..200 ms (ids = latency), unsampled ones far slower.
	for ms := 1; ms <= 200; ms++ {
		add("ttl", tracedResult(uint64(ms), ms, true))
		add("ttl", tracedResult(uint64(10000+ms), 5000+ms, false))
	}
	dropped := tracedResult(99999, 9000, true)
	dropped.Dropped = true
	add("ttl", dropped)
	noTrace := tracedResult(0, 9000, true) // zero trace id: nothing was sent
	add("ttl", noTrace)
	// xfetch:1 has only three sampled requests.
	for _, ms := range []int{7, 3, 5} {
		add("xfetch:1", tracedResult(uint64(1000+ms), ms, true))
	}
	// unsampled: a phase without any sampled request is not listed.
	add("unsampled", tracedResult(50000, 9999, false))

	// ttl's first result is recorded first, so it leads the phase list.
	s.Record(results[0].phase, results[0].res)
	rest := results[1:]
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(rest); i += 8 {
				s.Record(rest[i].phase, rest[i].res)
			}
		})
	}
	wg.Wait()

	got := s.Phases()
	if len(got) != 2 || got[0].Phase != "ttl" || got[1].Phase != "xfetch:1" {
		t.Fatalf("phases %+v, want ttl then xfetch:1", got)
	}
	latencies := func(p PhaseSlowest) []float64 {
		var out []float64
		for _, r := range p.Requests {
			out = append(out, r.LatencyMs)
		}
		return out
	}
	if l := latencies(got[0]); !slices.Equal(l, []float64{200, 199, 198, 197, 196}) {
		t.Errorf("ttl kept %v ms, want the five slowest sampled: 200 199 198 197 196", l)
	}
	if l := latencies(got[1]); !slices.Equal(l, []float64{7, 5, 3}) {
		t.Errorf("xfetch:1 kept %v ms, want 7 5 3", l)
	}
	want := tracedResult(200, 200, true)
	if r := got[0].Requests[0]; r.TraceID != want.TraceID.String() || r.SpanID != want.SpanID.String() ||
		r.Code != "200" || r.Endpoint != "product" || len(r.TraceID) != 32 || len(r.SpanID) != 16 {
		t.Errorf("slowest ttl request %+v, want trace %s span %s code 200 endpoint product", r, want.TraceID, want.SpanID)
	}
}

func TestSlowestKeepsTheFirstOfEquallySlowRequests(t *testing.T) {
	s := NewSlowest(2)
	for id := uint64(1); id <= 4; id++ {
		s.Record("p", tracedResult(id, 10, true))
	}
	got := s.Phases()[0].Requests
	ids := []string{got[0].TraceID, got[1].TraceID}
	slices.Sort(ids)
	if ids[0] != tracedResult(1, 0, true).TraceID.String() || ids[1] != tracedResult(2, 0, true).TraceID.String() {
		t.Errorf("kept %v, want the first two recorded", ids)
	}
}
