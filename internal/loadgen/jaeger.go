package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// maxTraceBody bounds a Jaeger answer.
const maxTraceBody = 16 << 20

// jaegerPoll is how long AwaitTrace waits between two reads of a trace.
const jaegerPoll = 500 * time.Millisecond

// ErrTraceNotFound is returned (wrapped) when Jaeger does not have the
// trace (yet): its spans reach Jaeger some seconds after the request, once
// the API's exporter sends its batch.
var ErrTraceNotFound = errors.New("trace not found in Jaeger")

// Jaeger reads traces from a Jaeger query service's HTTP API (the UI's
// port, 16686). It only ever sends GET <base>/api/traces/<id>, without
// following redirects or using a proxy. It is safe for concurrent use.
type Jaeger struct {
	base  string // without trailing slash
	clock Clock
	hc    *http.Client
}

// NewJaeger returns a reader of the Jaeger at base (http(s)://host:port,
// optionally with the path prefix Jaeger is served under). clock paces
// AwaitTrace; nil means RealClock. Each read times out after 5 seconds.
func NewJaeger(base string, clock Clock) (*Jaeger, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("jaeger URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("jaeger URL %q: want http(s)://host[:port]", base)
	}
	u.RawQuery, u.Fragment = "", ""
	if clock == nil {
		clock = RealClock{}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &Jaeger{base: strings.TrimSuffix(u.String(), "/"), clock: clock, hc: &http.Client{
		Transport: tr,
		Timeout:   5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}, nil
}

// TraceURL is the Jaeger UI's page of a trace: <jaegerURL>/trace/<traceID>.
func TraceURL(jaegerURL, traceID string) string {
	return strings.TrimSuffix(jaegerURL, "/") + "/trace/" + traceID
}

// Trace reads the trace traceID (32 hex digits) once. The error wraps
// ErrTraceNotFound when Jaeger answers 404 or without spans of that trace.
func (j *Jaeger) Trace(ctx context.Context, traceID string) ([]report.TraceSpan, error) {
	id, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return nil, fmt.Errorf("trace id %q: %w", traceID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.base+"/api/traces/"+id.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTraceBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("jaeger: read trace %s: %w", id, err)
	case len(body) > maxTraceBody:
		return nil, fmt.Errorf("jaeger: trace %s is larger than %d bytes", id, maxTraceBody)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w", id, ErrTraceNotFound)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("jaeger: trace %s: %w", id, statusError(resp.StatusCode, body))
	}
	return DecodeJaegerTrace(body, id.String())
}

// AwaitTrace reads the trace traceID until it holds a span whose parent is
// parentSpanID (the API's server span of a request loadgen sent with that
// span id: it ends after its children, so they have been exported too), or
// until within has passed on j's clock, reading again every half second
// while Jaeger does not have it or answers with an error. An empty
// parentSpanID accepts the first answer with spans. When within runs out it
// returns the last spans read, if any, as they are; otherwise the last
// error. It returns early with ctx.Err() when ctx ends.
func (j *Jaeger) AwaitTrace(ctx context.Context, traceID, parentSpanID string, within time.Duration) ([]report.TraceSpan, error) {
	deadline := j.clock.Now().Add(within)
	var (
		last    []report.TraceSpan
		lastErr error
	)
	for {
		spans, err := j.Trace(ctx, traceID)
		switch {
		case err == nil && (parentSpanID == "" || hasChildOf(spans, parentSpanID)):
			return spans, nil
		case err == nil:
			last, lastErr = spans, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			lastErr = err
		}
		now := j.clock.Now()
		if !now.Before(deadline) {
			if last != nil {
				return last, nil
			}
			return nil, fmt.Errorf("after %v: %w", within, lastErr)
		}
		next := now.Add(jaegerPoll)
		if next.After(deadline) {
			next = deadline
		}
		if err := j.clock.SleepUntil(ctx, next); err != nil {
			return nil, err
		}
	}
}

// hasChildOf reports whether some span's parent is parent.
func hasChildOf(spans []report.TraceSpan, parent string) bool {
	for _, s := range spans {
		if s.ParentID == parent {
			return true
		}
	}
	return false
}

// jaegerTraces is the part of Jaeger's GET /api/traces/<id> answer that
// DecodeJaegerTrace reads.
type jaegerTraces struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			TraceID       string `json:"traceID"`
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				TraceID string `json:"traceID"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			StartTime int64 `json:"startTime"` // µs since the epoch
			Duration  int64 `json:"duration"`  // µs
			Tags      []struct {
				Key   string `json:"key"`
				Type  string `json:"type"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
	} `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

// detailTags are the span attributes a waterfall shows after a span's name,
// in this order: what a cache read came to and why a recompute ran (cachex),
// what a lock acquisition and a reservation came to (lockx, catalog).
func detailTags() []string {
	return []string{"cachex.outcome", "cachex.reason", "lockx.result", "catalog.reserve.mode", "catalog.reserve.result"}
}

// DecodeJaegerTrace decodes the spans of trace traceID from a Jaeger query
// API answer ({"data": [{"traceID", "spans": [...]}]}): each span's id, its
// parent (its CHILD_OF reference, else its first reference, within the
// trace), operation name, start and duration in microseconds, and whether
// it recorded an error (tag error=true or otel.status_code=ERROR) with its
// message (tag otel.status_description), and its detail: the values of the tags in detailTags it has. Ids are
// compared and returned as Jaeger spells them with the leading zeros it
// drops put back (32 hex digits for a trace, 16 for a span). The error
// wraps ErrTraceNotFound when the answer holds no span of the trace.
func DecodeJaegerTrace(body []byte, traceID string) ([]report.TraceSpan, error) {
	var doc jaegerTraces
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("jaeger answer: %w", err)
	}
	want := padID(traceID, 32)
	var out []report.TraceSpan
	for _, t := range doc.Data {
		if padID(t.TraceID, 32) != want {
			continue
		}
		for _, s := range t.Spans {
			if s.TraceID != "" && padID(s.TraceID, 32) != want {
				continue
			}
			ts := report.TraceSpan{SpanID: padID(s.SpanID, 16), Name: s.OperationName, StartUs: s.StartTime, DurationUs: s.Duration}
			for _, r := range s.References {
				if r.TraceID != "" && padID(r.TraceID, 32) != want {
					continue
				}
				if ts.ParentID == "" || r.RefType == "CHILD_OF" {
					ts.ParentID = padID(r.SpanID, 16)
				}
				if r.RefType == "CHILD_OF" {
					break
				}
			}
			var detail []string
			for _, key := range detailTags() {
				for _, tag := range s.Tags {
					if tag.Key == key {
						detail = append(detail, fmt.Sprint(tag.Value))
					}
				}
			}
			ts.Detail = strings.Join(detail, ", ")
			for _, tag := range s.Tags {
				if (tag.Key == "error" && tag.Value == true) || (tag.Key == "otel.status_code" && tag.Value == "ERROR") {
					ts.Error = true
				}
				if tag.Key == "otel.status_description" {
					ts.ErrorMessage = fmt.Sprint(tag.Value)
				}
			}
			out = append(out, ts)
		}
	}
	if len(out) == 0 {
		msg := "no spans"
		for _, e := range doc.Errors {
			msg = fmt.Sprintf("%d %s", e.Code, e.Msg)
		}
		return nil, fmt.Errorf("%s (%s): %w", want, msg, ErrTraceNotFound)
	}
	return out, nil
}

// padID lowercases a hex id and puts back the leading zeros Jaeger drops.
func padID(id string, digits int) string {
	id = strings.ToLower(id)
	if n := len(id); n < digits {
		id = strings.Repeat("0", digits-n) + id
	}
	return id
}
