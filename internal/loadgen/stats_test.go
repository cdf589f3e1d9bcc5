package loadgen

import (
	"errors"
	"testing"
	"time"
)

func TestProgressLineFormat(t *testing.T) {
	for _, c := range []struct {
		snap Snapshot
		want string
	}{
		{Snapshot{}, "elapsed=0s phase=- rps=0.0 p50=0s p99=0s errors=0 dropped=0"},
		{Snapshot{Elapsed: 65*time.Second + 900*time.Millisecond, Phase: "xfetch", RPS: 99.84,
			P50: 1234567 * time.Nanosecond, P99: 45678 * time.Microsecond, Errors: 2, Dropped: 3},
			"elapsed=1m5s phase=xfetch rps=99.8 p50=1.23ms p99=45.7ms errors=2 dropped=3"},
		{Snapshot{Elapsed: time.Second, Phase: "ttl", RPS: 5, P50: 987 * time.Microsecond, P99: 2345 * time.Millisecond},
			"elapsed=1s phase=ttl rps=5.0 p50=987µs p99=2.35s errors=0 dropped=0"},
	} {
		if got := FormatProgress(c.snap); got != c.want {
			t.Errorf("FormatProgress(%+v)\n got %q\nwant %q", c.snap, got, c.want)
		}
	}
}

func TestStatsSnapshotIntervals(t *testing.T) {
	clk := newFakeClock()
	s := NewStats(clk)
	s.SetPhase("ttl")
	for i := 0; i < 200; i++ {
		out := Outcome{Endpoint: "category_stats", Code: "200"}
		if i < 2 {
			out = Outcome{Endpoint: "category_stats", Code: "error", Err: errors.New("boom")}
		}
		s.Observe("stampede", out, 10*time.Millisecond)
	}
	s.Drop("stampede")
	clk.advanceTo(epoch.Add(2 * time.Second))
	if got, want := FormatProgress(s.Snapshot()), "elapsed=2s phase=ttl rps=100.0 p50=10ms p99=10ms errors=2 dropped=1"; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}

	// The next interval only sees what happened after the first snapshot.
	s.SetPhase("xfetch")
	for i := 0; i < 50; i++ {
		s.Observe("stampede", Outcome{Endpoint: "product", Code: "200"}, time.Millisecond)
	}
	clk.advanceTo(epoch.Add(3 * time.Second))
	if got, want := FormatProgress(s.Snapshot()), "elapsed=3s phase=xfetch rps=50.0 p50=1ms p99=1ms errors=2 dropped=1"; got != want {
		t.Errorf("second line %q, want %q", got, want)
	}

	keys, series := s.Series()
	wantKeys := []Key{
		{"stampede", "category_stats", "200"},
		{"stampede", "category_stats", "error"},
		{"stampede", "product", "200"},
	}
	if len(keys) != len(wantKeys) {
		t.Fatalf("keys = %v", keys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] {
			t.Errorf("key %d = %v, want %v", i, keys[i], wantKeys[i])
		}
	}
	if series[0].Requests != 198 || series[1].Errors != 2 || series[2].Latency.Count() != 50 {
		t.Errorf("series = %+v %+v %+v", series[0], series[1], series[2])
	}
}
