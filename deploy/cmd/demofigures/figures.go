package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// step is the demo's scrape and evaluation interval (deploy/prometheus.yml).
const step = 5 * time.Second

// A class is the part of the demo a sample belongs to.
type class int

const (
	steady class = iota
	ttlBurst
	xfetchBurst
	classes
)

func (c class) String() string {
	return [...]string{"steady load", "ttl bursts", "xfetch bursts"}[c]
}

// A row is one line of the table: a PromQL expression of one series, and
// how its values print.
type row struct {
	name, expr string
	scale      float64 // the value printed is the sample × scale
	format     string
}

func tableRows() []row {
	const stored = `sum(rate(cachex_recomputes_total{cache="category_stats",status="ok"}[1m]))`
	const discarded = `sum(rate(cachex_recomputes_discarded_total{cache="category_stats"}[1m]))`
	return []row{
		{"recomputes per stored value, category_stats (StampedeRecomputeStorm's ratio, 1 m)",
			stored + " / ((" + stored + " - " + discarded + ") > 0)", 1, "%.2f"},
		{"recomputes of the hottest key per TTL window, category_stats (the dashboards' panel)",
			`max(catalog_hottest_key_recomputes{cache="category_stats"})`, 1, "%.0f"},
		{"category_stats database queries/s (1 m)",
			`sum(rate(catalog_db_query_duration_seconds_count{query="category_stats"}[1m]))`, 1, "%.1f"},
		{"burst p99, client, ms (30 s)",
			`histogram_quantile(0.99, sum by (le) (rate(loadgen_request_duration_seconds_bucket{scenario="stampede"}[30s])))`, 1000, "%.0f"},
		{"hit ratio, all caches, % (1 m)",
			`sum(rate(cachex_gets_total{result=~"hit|early_refresh|stale"}[1m])) / (sum(rate(cachex_gets_total[1m])) > 0)`, 100, "%.1f"},
	}
}

// The series that class the samples, and the alerts.
const (
	burstNow    = `sum(rate(loadgen_requests_total{scenario="stampede"}[15s]))`
	burstRecent = `sum(increase(loadgen_requests_total{scenario="stampede"}[1m]))`
	strategy    = `max by (strategy) (cachex_strategy_info{cache="category_stats"})`
	// ALERTS is written at each rule evaluation (every 5 s) while an alert
	// is in a state; the window keeps the 5-minute look-back from
	// stretching a sample past its evaluation.
	firing = `max by (alertname) (max_over_time(ALERTS{alertstate="firing"}[10s]))`
)

// figures are the table's contents.
type figures struct {
	start, end time.Time
	samples    [classes]int
	rows       []row
	values     [][classes][]float64 // per row, per class: the samples' values
	alerts     [classes][]string    // the alerts firing at any sample of the class
}

// measure queries Prometheus at prom over [start, end] and classes the samples.
func measure(ctx context.Context, prom string, start, end time.Time) (*figures, error) {
	client, err := api.NewClient(api.Config{Address: prom})
	if err != nil {
		return nil, err
	}
	q := querier{api: v1.NewAPI(client), r: v1.Range{Start: start, End: end, Step: step}}
	now, err := q.matrix(ctx, burstNow)
	if err != nil {
		return nil, err
	}
	recent, err := q.matrix(ctx, burstRecent)
	if err != nil {
		return nil, err
	}
	strategies, err := q.matrix(ctx, strategy)
	if err != nil {
		return nil, err
	}
	classOf := classify(single(now), single(recent), strategies)
	f := &figures{start: start, end: end, rows: tableRows()}
	for _, c := range classOf {
		f.samples[c]++
	}
	for _, r := range f.rows {
		m, err := q.matrix(ctx, r.expr)
		if err != nil {
			return nil, err
		}
		var per [classes][]float64
		for t, v := range single(m) {
			if c, ok := classOf[t]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				per[c] = append(per[c], v*r.scale)
			}
		}
		f.values = append(f.values, per)
	}
	alerts, err := q.matrix(ctx, firing)
	if err != nil {
		return nil, err
	}
	f.alerts = alertsByClass(alerts, classOf)
	return f, nil
}

// querier runs range queries over the recording: its range, at step.
type querier struct {
	api v1.API
	r   v1.Range
}

// matrix evaluates expr over the recording.
func (q querier) matrix(ctx context.Context, expr string) (model.Matrix, error) {
	v, _, _, err := q.api.QueryRange(ctx, expr, q.r)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %s: a %s, want a matrix", expr, v.Type())
	}
	return m, nil
}

// single returns the samples of a one-series matrix by time (none: empty).
func single(m model.Matrix) map[model.Time]float64 {
	out := map[model.Time]float64{}
	for _, s := range m {
		for _, p := range s.Values {
			out[p.Timestamp] = float64(p.Value)
		}
	}
	return out
}

// classify classes each sample: a burst (stampede requests in the last 15
// s) by the category_stats strategy then in force, steady (none in the last
// minute), or neither (left out). A burst sample with no single strategy in
// force is left out too.
func classify(now, recent map[model.Time]float64, strategies model.Matrix) map[model.Time]class {
	inForce := map[model.Time][]string{}
	for _, s := range strategies {
		for _, p := range s.Values {
			if p.Value == 1 {
				inForce[p.Timestamp] = append(inForce[p.Timestamp], string(s.Metric["strategy"]))
			}
		}
	}
	out := map[model.Time]class{}
	for t, ss := range inForce {
		switch {
		case now[t] == 0 && recent[t] == 0:
			out[t] = steady
		case now[t] == 0 || len(ss) != 1:
		case ss[0] == "ttl":
			out[t] = ttlBurst
		case ss[0] == "xfetch":
			out[t] = xfetchBurst
		}
	}
	return out
}

// alertsByClass lists, per class, the alerts firing at any of its samples.
func alertsByClass(m model.Matrix, classOf map[model.Time]class) [classes][]string {
	var out [classes][]string
	for _, s := range m {
		name := string(s.Metric["alertname"])
		for _, p := range s.Values {
			if c, ok := classOf[p.Timestamp]; ok && !slices.Contains(out[c], name) {
				out[c] = append(out[c], name)
			}
		}
	}
	for c := range out {
		slices.Sort(out[c])
	}
	return out
}
