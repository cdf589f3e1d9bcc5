package scrape

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// exposition renders reg in the text format, as the API's /metrics does.
func exposition(t *testing.T, reg *prometheus.Registry) []byte {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestParseFlattensEveryType(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cachex_gets_total", Help: "h"}, []string{"cache", "result"})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "inflight", Help: "h"})
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cachex_recompute_duration_seconds", Help: "h", Buckets: []float64{0.1, 1}}, []string{"cache"})
	sum := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "h", Objectives: map[float64]float64{0.5: 0.05}})
	reg.MustRegister(ctr, gauge, hist, sum)
	ctr.WithLabelValues("category_stats", "hit").Add(7)
	ctr.WithLabelValues("category_stats", "miss").Add(2)
	ctr.WithLabelValues("product", "hit").Add(5)
	ctr.WithLabelValues("weird", "a\"b\\c\nd,}").Add(1)
	gauge.Set(-3.5)
	hist.WithLabelValues("category_stats").Observe(0.05)
	hist.WithLabelValues("category_stats").Observe(0.5)
	hist.WithLabelValues("product").Observe(2)
	sum.Observe(4)

	m, err := Parse(bytes.NewReader(exposition(t, reg)))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{
		`cachex_gets_total{cache="category_stats",result="hit"}`: 7,
		`cachex_gets_total{cache="weird",result="a\"b\\c\nd,}"}`: 1,
		`inflight`: -3.5,
		`cachex_recompute_duration_seconds_bucket{cache="category_stats",le="0.1"}`:  1,
		`cachex_recompute_duration_seconds_bucket{cache="category_stats",le="+Inf"}`: 2,
		`cachex_recompute_duration_seconds_sum{cache="category_stats"}`:              0.55,
		`cachex_recompute_duration_seconds_count{cache="product"}`:                   1,
		`s{quantile="0.5"}`: 4,
		`s_count`:           1,
	} {
		if got, ok := m[key]; !ok || math.Abs(got.Value-want) > 1e-9 {
			t.Errorf("series %s = %v (present %v), want %v", key, got.Value, ok, want)
		}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"cachex_gets_total", nil, 15},
		{"cachex_gets_total", map[string]string{"cache": "category_stats"}, 9},
		{"cachex_gets_total", map[string]string{"result": "hit"}, 12},
		{"cachex_gets_total", map[string]string{"cache": "product", "result": "miss"}, 0},
		{"cachex_gets_total", map[string]string{"result": "a\"b\\c\nd,}"}, 1},
		{"cachex_gets", nil, 0},
		{"inflight", nil, -3.5},
		{"cachex_recompute_duration_seconds_count", nil, 3},
		{"cachex_recompute_duration_seconds_bucket", map[string]string{"le": "1"}, 2},
	} {
		if got := m.Sum(tc.name, tc.labels); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

func TestParseRefusesWhatIsNotTheTextFormat(t *testing.T) {
	for _, bad := range []string{"a{x=\"1\" 3\n", "a{x=1} 3\n", "a 1 2 3\n", "a x\n", "{x=\"1\"} 3\n",
		"# TYPE a counter\n# TYPE a gauge\na 1\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	m, err := Parse(strings.NewReader("# HELP a x\n# TYPE a counter\na 3 1700000000000\nb{x=\"1\"} NaN\nc +Inf\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m["a"].Value != 3 || !math.IsNaN(m[`b{x="1"}`].Value) || !math.IsInf(m["c"].Value, 1) || len(m) != 3 {
		t.Errorf("Parse = %v", m)
	}
}

// TestIncreaseTreatsADecreaseAsAReset: a replica that restarted counts from
// 0 again; its increase since the last scrape is the new value, never
// negative, as Prometheus's rate() has it.
func TestIncreaseTreatsADecreaseAsAReset(t *testing.T) {
	s := func(kv ...any) Samples {
		out := Samples{}
		for i := 0; i < len(kv); i += 2 {
			out.set("c", map[string]string{"k": kv[i].(string)}, kv[i+1].(float64))
		}
		return out
	}
	prev := s("steady", 100.0, "reset", 1477.0, "gone", 5.0)
	cur := s("steady", 130.0, "reset", 300.0, "new", 4.0)
	inc := Increase(prev, cur)
	for k, want := range map[string]float64{"steady": 30, "reset": 300, "new": 4} {
		if got := inc.Sum("c", map[string]string{"k": k}); got != want {
			t.Errorf("increase of %s = %v, want %v", k, got, want)
		}
	}
	if got := inc.Sum("c", map[string]string{"k": "gone"}); got != 0 {
		t.Errorf("a series that disappeared increased by %v", got)
	}
	total := Samples{}
	total.Add(inc)
	total.Add(inc)
	if got := total.Sum("c", nil); got != 2*334 {
		t.Errorf("Add twice = %v, want %v", got, 2*334)
	}
}
