package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// slowestPerPhase is how many of each phase's slowest sampled requests a
// report lists.
const slowestPerPhase = 5

// traceWait bounds how long a run waits, after its load, for Jaeger to
// have the slowest trace of each phase: the API's exporter sends its spans
// in batches every few seconds.
const traceWait = 15 * time.Second

// Traces is the tracing part of a summary: the slowest sampled requests of
// each phase, and the slowest one's spans as Jaeger recorded them. Both
// fields are omitted when empty, so summaries written before them still
// load and replot as they did.
type Traces struct {
	// JaegerURL is -jaeger-url: the report links trace ids to its UI.
	JaegerURL string `json:"jaeger_url,omitempty"`
	// SlowestTraces has one entry per phase that sent a sampled request,
	// in the order the phases ran.
	SlowestTraces []PhaseTraces `json:"slowest_traces,omitempty"`
}

// PhaseTraces is one phase's slowest sampled requests, slowest first, and
// the spans of the slowest one's trace (a waterfall in the report) or why
// they could not be read.
type PhaseTraces struct {
	Phase    string                `json:"phase"`
	Requests []loadgen.SlowRequest `json:"requests"`
	Spans    []report.TraceSpan    `json:"spans,omitempty"`
	Warning  string                `json:"warning,omitempty"`
}

// tracing returns t, for writeReport to fill in.
func (t *Traces) tracing() *Traces { return t }

// collectTraces sets t from the run's slowest requests and, with
// -jaeger-url, reads the slowest trace of every phase from Jaeger, all at
// once, each for up to traceWait. A trace that cannot be read gets a
// warning (also printed on stderr) instead of spans.
func (e *Env) collectTraces(ctx context.Context, t *Traces) {
	t.JaegerURL, t.SlowestTraces = e.cfg.JaegerURL, nil
	for _, p := range e.slowest.Phases() {
		t.SlowestTraces = append(t.SlowestTraces, PhaseTraces{Phase: p.Phase, Requests: p.Requests})
	}
	if t.JaegerURL == "" || len(t.SlowestTraces) == 0 {
		return
	}
	j, err := loadgen.NewJaeger(t.JaegerURL, e.clock)
	fmt.Fprintf(e.stderr, "loadgen: reading the slowest trace of %d phases from %s (up to %v)\n", len(t.SlowestTraces), t.JaegerURL, traceWait)
	var wg sync.WaitGroup
	for i := range t.SlowestTraces {
		pt := &t.SlowestTraces[i]
		slow := pt.Requests[0]
		if err != nil {
			pt.Warning = fmt.Sprintf("trace %s of phase %s not read: %v", slow.TraceID, pt.Phase, err)
			continue
		}
		wg.Go(func() {
			spans, err := j.AwaitTrace(ctx, slow.TraceID, slow.SpanID, traceWait)
			if err != nil {
				pt.Warning = fmt.Sprintf("trace %s of phase %s not read from Jaeger: %v", slow.TraceID, pt.Phase, err)
				return
			}
			pt.Spans = spans
		})
	}
	wg.Wait()
	for _, pt := range t.SlowestTraces {
		if pt.Warning != "" {
			fmt.Fprintln(e.stderr, "loadgen: warning:", pt.Warning)
		}
	}
}

// addTo returns r with t's table of slowest requests (trace ids linked to
// Jaeger when t.JaegerURL is set) and a waterfall per phase whose trace was
// read; r as it is when t lists no request.
func (t Traces) addTo(r report.Report) report.Report {
	if len(t.SlowestTraces) == 0 {
		return r
	}
	table := report.Table{Title: "Slowest sampled requests per phase",
		Header: []string{"phase", "latency ms", "code", "endpoint", "trace id"},
		Note: fmt.Sprintf("The %d slowest requests of each phase among those sent with a sampled traceparent (-trace-sample), "+
			"latency from the scheduled start. The API recorded their traces: the trace id finds the request's spans in Jaeger, "+
			"where the API's server span is the child of the span id loadgen sent.", slowestPerPhase)}
	used, drawn := map[string]bool{}, len(r.Waterfalls)
	for _, pt := range t.SlowestTraces {
		for _, q := range pt.Requests {
			code := q.Code
			if q.Class != "" {
				code += " " + q.Class
			}
			id := q.TraceID
			if t.JaegerURL != "" {
				id = "[" + id + "](" + loadgen.TraceURL(t.JaegerURL, id) + ")"
			}
			table.Rows = append(table.Rows, []string{pt.Phase, f2(q.LatencyMs), code, q.Endpoint, id})
		}
		if pt.Warning != "" {
			table.Note += " Warning: " + pt.Warning + "."
		}
		if len(pt.Spans) > 0 && len(pt.Requests) > 0 {
			r.Waterfalls = append(r.Waterfalls, report.Waterfall{
				File:  traceFile(pt.Phase, used),
				Title: fmt.Sprintf("Trace of the slowest sampled request of %s (%s ms)", pt.Phase, f2(pt.Requests[0].LatencyMs)),
				Spans: pt.Spans,
			})
		}
	}
	if len(r.Waterfalls) > drawn {
		table.Note += " The waterfall charts show the slowest request's trace of each phase as Jaeger recorded it."
	}
	r.Tables = append(r.Tables, table)
	return r
}

// traceFile returns the waterfall file of phase, "trace-<phase>.png" with
// every character but letters, digits, '.', '_' and '-' replaced by '-',
// and a number added when an earlier phase took that name (recorded in
// used).
func traceFile(phase string, used map[string]bool) string {
	name := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, phase)
	base := "trace-" + name
	file := base + ".png"
	for n := 2; used[file]; n++ {
		file = fmt.Sprintf("%s-%d.png", base, n)
	}
	used[file] = true
	return file
}
