// Command demoreplay turns a recorded demo into promtool unit tests of the
// alert rules: it reads the series the rules use from a Prometheus HTTP API
// (query_range, step 5s, the demo's scrape interval), summed over the labels
// the rules do not use, and writes a promtool test file whose input_series
// replay them, with one case per -expect.
//
//	go run ./deploy/cmd/demoreplay -prom http://127.0.0.1:9090 \
//	    -start 2026-11-30T23:59:33Z -end 2026-12-01T00:07:03Z \
//	    -expect 'StampedeRecomputeStorm@3m10s=firing' -expect 'StampedeLockLost@6m=quiet'
//
// -ready FILE reads the same settings from lines prom=, start=, end= and
// expect= (flags given as well win, -expect adds).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// step is the replay's sample interval: the demo's scrape and evaluation
// interval (deploy/prometheus.yml).
const step = 5 * time.Second

// source is one query of the fixed list: a metric the rules read, summed by
// the labels they match, group by or print (job and instance only where a
// rule keeps them), and pinned by matchers where the rules pin them.
type source struct {
	metric   string
	by       []string // nil: the raw series (with job and instance)
	matchers string
	// max: a per-instance gauge, read as the highest instance's (a sum
	// would add them): cachex_strategy_info is 0 or 1 per instance, and the
	// rules read the hottest key's recomputes by max.
	max bool
}

// sources are the series deploy/rules/alerts.yml reads (main_test.go checks
// the list against the rules).
var sources = []source{
	{metric: "lockx_lost_total", by: []string{"name"}},
	{metric: "catalog_reservations_total", by: []string{"result"}},
	{metric: "cachex_gets_total", by: []string{"cache", "result"}},
	{metric: "cachex_strategy_info", by: []string{"cache", "strategy"}, max: true},
	{metric: "cachex_recomputes_total", by: []string{"cache", "reason", "status"}},
	{metric: "cachex_recomputes_discarded_total", by: []string{"cache"}},
	{metric: "catalog_hottest_key_recomputes", by: []string{"cache"}, max: true},
	{metric: "cachex_redis_errors_total", by: []string{"cache"}},
	{metric: "http_requests_total", by: []string{"job", "route", "code"}},
	{metric: "http_request_duration_seconds_bucket", by: []string{"route", "code", "le"}, matchers: `le="1.024"`},
	{metric: "http_request_duration_seconds_count", by: []string{"route", "code"}},
	{metric: "up"},
}

// query is the PromQL of a source: the sum by its labels, or the highest
// when it is max.
func (s source) query() string {
	sel := s.metric + "{" + s.matchers + "}"
	switch {
	case s.by == nil:
		return sel
	case s.max:
		return fmt.Sprintf("max by (%s) (%s)", strings.Join(s.by, ", "), sel)
	}
	return fmt.Sprintf("sum by (%s) (%s)", strings.Join(s.by, ", "), sel)
}

// expectation is one -expect: AlertName@offset=firing|pending|quiet.
type expectation struct {
	alert  string
	offset time.Duration
	state  string
}

func parseExpect(s string) (expectation, error) {
	name, rest, ok1 := strings.Cut(s, "@")
	off, state, ok2 := strings.Cut(rest, "=")
	if !ok1 || !ok2 || name == "" {
		return expectation{}, fmt.Errorf("-expect %q: want AlertName@<offset>=firing|pending|quiet", s)
	}
	d, err := model.ParseDuration(off)
	if err != nil {
		return expectation{}, fmt.Errorf("-expect %q: %v", s, err)
	}
	if state != "firing" && state != "pending" && state != "quiet" {
		return expectation{}, fmt.Errorf("-expect %q: state %q, want firing, pending or quiet", s, state)
	}
	return expectation{name, time.Duration(d), state}, nil
}

type config struct {
	prom, start, end, out, ready string
	expects                      []string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("demoreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.prom, "prom", "", "Prometheus base URL, e.g. http://127.0.0.1:9090")
	fs.StringVar(&c.start, "start", "", "start of the recording, RFC 3339")
	fs.StringVar(&c.end, "end", "", "end of the recording, RFC 3339")
	fs.StringVar(&c.out, "out", "deploy/rules/demo_replay_test.yml", "promtool test file to write")
	fs.StringVar(&c.ready, "ready", "", "file of prom=, start=, end= and expect= lines (flags win)")
	fs.Func("expect", "AlertName@<offset from -start>=firing|pending|quiet (repeatable)", func(s string) error {
		c.expects = append(c.expects, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := generate(ctx, c, stdout); err != nil {
		fmt.Fprintln(stderr, "demoreplay:", err)
		return 1
	}
	return 0
}

// readReady fills the settings c lacks from a ready file.
func readReady(c *config) error {
	f, err := os.Open(c.ready)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch {
		case !ok:
		case k == "prom" && c.prom == "":
			c.prom = v
		case k == "start" && c.start == "":
			c.start = v
		case k == "end" && c.end == "":
			c.end = v
		case k == "expect":
			c.expects = append(c.expects, v)
		}
	}
	return sc.Err()
}

func generate(ctx context.Context, c config, stdout io.Writer) error {
	if c.ready != "" {
		if err := readReady(&c); err != nil {
			return err
		}
	}
	if c.prom == "" || c.start == "" || c.end == "" {
		return errors.New("-prom, -start and -end are required")
	}
	start, err := time.Parse(time.RFC3339, c.start)
	if err != nil {
		return fmt.Errorf("-start: %v", err)
	}
	end, err := time.Parse(time.RFC3339, c.end)
	if err != nil {
		return fmt.Errorf("-end: %v", err)
	}
	if !end.After(start) {
		return errors.New("-end must be after -start")
	}
	n := int(end.Sub(start)/step) + 1
	var exps []expectation
	for _, s := range c.expects {
		e, err := parseExpect(s)
		if err != nil {
			return err
		}
		if e.offset < 0 || e.offset > end.Sub(start) || e.offset%step != 0 {
			return fmt.Errorf("-expect %q: the offset must be a multiple of %v within -start..-end", s, step)
		}
		exps = append(exps, e)
	}

	var series []replaySeries
	for _, src := range sources {
		got, err := queryRange(ctx, c.prom, src.query(), start, end)
		if err != nil {
			return fmt.Errorf("%s: %w", src.query(), err)
		}
		for _, s := range got {
			series = append(series, s.replay(src.metric, start, n))
		}
	}
	if len(series) == 0 {
		return fmt.Errorf("%s has none of the rules' series between %s and %s", c.prom, c.start, c.end)
	}
	slices.SortFunc(series, func(a, b replaySeries) int { return strings.Compare(a.name, b.name) })

	var b strings.Builder
	writeFile(&b, c, start, end, series, exps)
	if err := os.WriteFile(c.out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d series of %d samples, %d expectations\n", c.out, len(series), n, len(exps))
	return nil
}

// promSeries is one series of a query_range answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

func queryRange(ctx context.Context, base, query string, start, end time.Time) ([]promSeries, error) {
	q := url.Values{"query": {query}, "start": {start.UTC().Format(time.RFC3339)},
		"end": {end.UTC().Format(time.RFC3339)}, "step": {strconv.Itoa(int(step.Seconds()))}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/api/v1/query_range?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("%s: %v", resp.Status, err)
	}
	if body.Status != "success" || body.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("%s: %s %s", resp.Status, body.Status, body.Error)
	}
	return body.Data.Result, nil
}

// replaySeries is a series as promtool reads it: name{labels} and values.
type replaySeries struct{ name, values string }

// replay places a series' samples on the replay's grid (NaN where the
// series had no value) and encodes them.
func (s promSeries) replay(metric string, start time.Time, n int) replaySeries {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = math.NaN()
	}
	for _, p := range s.Values {
		ts, _ := p[0].(float64)
		str, _ := p[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		i := int(math.Round((ts - float64(start.UnixMilli())/1000) / step.Seconds()))
		if err == nil && i >= 0 && i < n {
			vals[i] = v
		}
	}
	var labels []string
	for k, v := range s.Metric {
		if k != "__name__" {
			labels = append(labels, k+"="+strconv.Quote(v))
		}
	}
	slices.Sort(labels)
	return replaySeries{metric + "{" + strings.Join(labels, ",") + "}", encode(vals)}
}

// encode writes samples in promtool's expanding notation: "a+bxn" for n+1
// samples rising by b ("axn" when constant) where three or more do, "_"
// for a missing sample ("_xn" for n).
func encode(vals []float64) string {
	var parts []string
	for i := 0; i < len(vals); {
		if math.IsNaN(vals[i]) {
			j := i
			for j < len(vals) && math.IsNaN(vals[j]) {
				j++
			}
			if j-i == 1 {
				parts = append(parts, "_")
			} else {
				parts = append(parts, fmt.Sprintf("_x%d", j-i))
			}
			i = j
			continue
		}
		j := i // vals[i..j] rise evenly
		for j+1 < len(vals) && !math.IsNaN(vals[j+1]) && (j == i || vals[j+1]-vals[j] == vals[i+1]-vals[i]) {
			j++
		}
		if j-i < 2 {
			parts = append(parts, num(vals[i]))
			i++
			continue
		}
		switch d := vals[i+1] - vals[i]; {
		case d == 0:
			parts = append(parts, fmt.Sprintf("%sx%d", num(vals[i]), j-i))
		case d > 0:
			parts = append(parts, fmt.Sprintf("%s+%sx%d", num(vals[i]), num(d), j-i))
		default:
			parts = append(parts, fmt.Sprintf("%s-%sx%d", num(vals[i]), num(-d), j-i))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeFile writes the promtool test file. Firing and pending are checked on
// the ALERTS series (promtool's alert_rule_test sees only firing alerts and
// compares their rendered annotations, values included, which a recording
// does not pin); not firing also by an alert_rule_test.
func writeFile(b *strings.Builder, c config, start, end time.Time, series []replaySeries, exps []expectation) {
	fmt.Fprintf(b, "# Generated by deploy/cmd/demoreplay from a recorded demo; do not edit, regenerate:\n")
	fmt.Fprintf(b, "#   go run ./deploy/cmd/demoreplay -prom %s -start %s -end %s", c.prom, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	for _, e := range exps {
		fmt.Fprintf(b, " \\\n#     -expect '%s@%s=%s'", e.alert, model.Duration(e.offset), e.state)
	}
	fmt.Fprintf(b, "\n# Samples every %v from -start (offset 0), summed over the labels the rules\n", step)
	fmt.Fprintf(b, "# do not use (a restart of one instance looks like a counter reset of the sum).\n")
	fmt.Fprintf(b, "rule_files:\n  - alerts.yml\n\nevaluation_interval: %s\n\ntests:\n", model.Duration(step))
	fmt.Fprintf(b, "  - name: demo recorded from %s to %s\n    interval: %s\n    input_series:\n",
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), model.Duration(step))
	for _, s := range series {
		fmt.Fprintf(b, "      - series: '%s'\n        values: '%s'\n", strings.ReplaceAll(s.name, "'", "''"), s.values)
	}
	var quiet, states []expectation
	for _, e := range exps {
		if e.state != "firing" {
			quiet = append(quiet, e)
		}
		states = append(states, e)
	}
	if len(quiet) > 0 {
		fmt.Fprintf(b, "    alert_rule_test:\n")
		for _, e := range quiet {
			fmt.Fprintf(b, "      - eval_time: %s # %s\n        alertname: %s\n        exp_alerts: []\n", model.Duration(e.offset), e.state, e.alert)
		}
	}
	if len(states) > 0 {
		fmt.Fprintf(b, "    promql_expr_test:\n")
		for _, e := range states {
			if e.state == "quiet" {
				fmt.Fprintf(b, "      - expr: 'group by (alertname) (ALERTS{alertname=\"%s\"})'\n        eval_time: %s # neither pending nor firing\n        exp_samples: []\n",
					e.alert, model.Duration(e.offset))
				continue
			}
			fmt.Fprintf(b, "      - expr: 'group by (alertname, alertstate) (ALERTS{alertname=\"%s\", alertstate=\"%s\"})'\n        eval_time: %s\n        exp_samples:\n          - labels: '{alertname=\"%s\", alertstate=\"%s\"}'\n            value: 1\n",
				e.alert, e.state, model.Duration(e.offset), e.alert, e.state)
		}
	}
}
