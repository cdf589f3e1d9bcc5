package scrape

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape: a metric name, its labels and a value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples is a scrape keyed by series (see Key). A histogram appears as its
// name_bucket (label le), name_sum and name_count series, a summary as its
// quantiles (label quantile), name_sum and name_count.
type Samples map[string]Sample

// Parse reads the Prometheus text exposition format. It fails on anything
// expfmt's parser refuses, so a truncated or garbled body is an error, not
// a scrape with series missing.
func Parse(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := make(Samples)
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			addMetric(out, name, mf.GetType(), labels, m)
		}
	}
	return out, nil
}

// addMetric flattens one metric of a family into out.
func addMetric(out Samples, name string, typ dto.MetricType, labels map[string]string, m *dto.Metric) {
	switch typ {
	case dto.MetricType_COUNTER:
		out.set(name, labels, m.GetCounter().GetValue())
	case dto.MetricType_GAUGE:
		out.set(name, labels, m.GetGauge().GetValue())
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			out.set(name+"_bucket", with(labels, "le", formatFloat(b.GetUpperBound())), float64(b.GetCumulativeCount()))
		}
		out.set(name+"_bucket", with(labels, "le", "+Inf"), float64(h.GetSampleCount()))
		out.set(name+"_sum", labels, h.GetSampleSum())
		out.set(name+"_count", labels, float64(h.GetSampleCount()))
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		for _, q := range s.GetQuantile() {
			out.set(name, with(labels, "quantile", formatFloat(q.GetQuantile())), q.GetValue())
		}
		out.set(name+"_sum", labels, s.GetSampleSum())
		out.set(name+"_count", labels, float64(s.GetSampleCount()))
	default:
		out.set(name, labels, m.GetUntyped().GetValue())
	}
}

func (s Samples) set(name string, labels map[string]string, v float64) {
	s[Key(name, labels)] = Sample{Name: name, Labels: labels, Value: v}
}

// with returns a copy of labels with k set to v.
func with(labels map[string]string, k, v string) map[string]string {
	m := maps.Clone(labels)
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Key renders a series as name{a="x",b="y"} with labels sorted by name and
// values quoted as in the text format; with no labels it is the name.
func Key(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Sum adds up the values of every series named name whose labels include
// all of match (other labels are ignored); 0 when none matches.
func (s Samples) Sum(name string, match map[string]string) float64 {
	var total float64
	for _, smp := range s {
		if smp.Name == name && matches(smp.Labels, match) {
			total += smp.Value
		}
	}
	return total
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Increase returns, per series of cur, how much the counter grew since
// prev: cur - prev, or cur when the value went down (a counter reset: the
// process restarted and counted from 0) or the series is new. Series only
// in prev, and values that no counter can have (NaN, infinite, negative),
// are left out. Pass counters only.
func Increase(prev, cur Samples) Samples {
	out := make(Samples, len(cur))
	for k, c := range cur {
		if !validCounter(c.Value) {
			continue
		}
		d := c.Value
		if p, ok := prev[k]; ok && validCounter(p.Value) && c.Value >= p.Value {
			d = c.Value - p.Value
		}
		out[k] = Sample{Name: c.Name, Labels: c.Labels, Value: d}
	}
	return out
}

// Add adds o's values into s, series by series.
func (s Samples) Add(o Samples) {
	for k, smp := range o {
		if have, ok := s[k]; ok {
			have.Value += smp.Value
			s[k] = have
			continue
		}
		s[k] = smp
	}
}

func validCounter(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// Carry returns cur with the series of prev that cur lacks, so that a
// series missing from one scrape is not counted from 0 when it comes back.
func Carry(prev, cur Samples) Samples {
	out := make(Samples, len(cur)+len(prev))
	for k, smp := range prev {
		out[k] = smp
	}
	for k, smp := range cur {
		out[k] = smp
	}
	return out
}
