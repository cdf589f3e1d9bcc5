package loadgen

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// Transport error classes used as Outcome.Code when no HTTP status was
// received.
const (
	// CodeTimeout: the client timeout or the caller's deadline passed.
	CodeTimeout = "timeout"
	// CodeCanceled: the caller's context was canceled (the run is stopping);
	// callers usually leave such requests out of error rates.
	CodeCanceled = "canceled"
	// CodeError: any other transport failure (connection refused, reset, a
	// body that could not be encoded, ...).
	CodeError = "error"
)

// maxErrorBody bounds how much of an error response is kept for
// StatusError.Detail; maxBody bounds a body returned by PostJSON. The rest of
// a larger body is still read and discarded so the connection is reused.
const (
	maxMetricsBody = 32 << 20
	maxErrorBody   = 64 << 10
	maxBody        = 4 << 20
)

// ErrOtherHost is returned (wrapped) when a caller passes a path that is not
// a plain absolute path on the client's base URL (an absolute URL, "//host",
// or anything that would resolve to another scheme or host).
var ErrOtherHost = errors.New("loadgen only talks to its target: pass a path starting with \"/\", not a URL")

// StatusError is the Outcome.Err (or AdminPut error) for an HTTP response
// whose status was not accepted. Title and Detail come from an RFC 9457
// problem+json body when there is one; otherwise Detail holds the start of
// the body.
type StatusError struct {
	Code   int
	Type   string
	Title  string
	Detail string
}

// Error reports the status and, when present, the problem's title and detail.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Code)
	for _, s := range []string{e.Title, e.Detail} {
		if s != "" {
			msg += ": " + s
		}
	}
	return msg
}

// Expect returns an acceptance rule for Get and PostJSON that accepts every
// 2xx status and the listed codes (e.g. Expect(409) for a reservation that
// may find too little stock). 5xx statuses are failures whatever the rule.
func Expect(codes ...int) func(code int) bool {
	return func(code int) bool {
		if code >= 200 && code < 300 {
			return true
		}
		for _, c := range codes {
			if c == code {
				return true
			}
		}
		return false
	}
}

// Client is an HTTP client bound to one base URL: every request it sends goes
// to that scheme and host, and callers pass only paths. It never follows
// redirects (a 3xx is reported as its status code), never uses a proxy, and
// always reads response bodies to the end so connections are reused. Every
// request but Scrape's carries a W3C traceparent header with a fresh random
// trace id and span id (see Outcome.TraceID). A Client is safe for
// concurrent use.
type Client struct {
	base  string // scheme://host[/prefix] without trailing slash, query or fragment
	host  string
	sch   string
	hc    *http.Client
	trace *traceIDs
}

// traceIDs makes the trace context of a client's requests: ids from a
// ChaCha8 stream of its own, seeded with 256 bits from crypto/rand (so
// clients and runs do not repeat each other's ids), and the sampled flag
// for a fraction of them. It is safe for concurrent use.
type traceIDs struct {
	sample float64 // fraction of requests flagged sampled, in [0, 1]

	mu  sync.Mutex
	src *rand.ChaCha8
	r   *rand.Rand // over src
}

// newTraceIDs returns a generator that flags the given fraction of its
// trace contexts sampled.
func newTraceIDs(sample float64) *traceIDs {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand.Read's contract)
	src := rand.NewChaCha8(seed)
	return &traceIDs{sample: sample, src: src, r: rand.New(src)}
}

// next returns a new valid span context: random trace and span ids, sampled
// with probability g.sample.
func (g *traceIDs) next() trace.SpanContext {
	var cfg trace.SpanContextConfig
	g.mu.Lock()
	for !cfg.TraceID.IsValid() { // all zero: invalid, drawn again
		_, _ = g.src.Read(cfg.TraceID[:])
	}
	for !cfg.SpanID.IsValid() {
		_, _ = g.src.Read(cfg.SpanID[:])
	}
	if g.r.Float64() < g.sample {
		cfg.TraceFlags = trace.FlagsSampled
	}
	g.mu.Unlock()
	return trace.NewSpanContext(cfg)
}

// NewClient returns a Client for base (an http or https URL; callers are
// expected to have passed it through validateTarget) whose requests each
// time out after timeout (0 means no client timeout; the caller's context
// still applies). Its connection pool keeps up to 1024 idle connections to
// the target so open-model load does not churn sockets. All its requests'
// traceparent headers are flagged sampled (see NewTargets for a fraction).
func NewClient(base string, timeout time.Duration) (*Client, error) {
	return newClient(base, timeout, 1)
}

// newClient is NewClient flagging the fraction traceSample of its requests
// sampled.
func newClient(base string, timeout time.Duration, traceSample float64) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("client base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client base URL %q: want http(s)://host[:port]", base)
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 1024
	return &Client{
		base:  strings.TrimSuffix(u.String(), "/"),
		host:  u.Host,
		sch:   u.Scheme,
		trace: newTraceIDs(traceSample),
		hc: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}, nil
}

// String is the client's base URL.
func (c *Client) String() string { return c.base }

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// url resolves path against the base URL, refusing anything that could leave
// the target (the result's scheme and host are checked, not just the input).
func (c *Client) url(path string) (string, error) {
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") || strings.ContainsAny(path, "\\\r\n\t ") {
		return "", fmt.Errorf("%q: %w", path, ErrOtherHost)
	}
	raw := c.base + path
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%q: %w", path, err)
	}
	if u.Scheme != c.sch || u.Host != c.host || u.User != nil {
		return "", fmt.Errorf("%q: %w", path, ErrOtherHost)
	}
	return raw, nil
}

// Get sends GET path and classifies the response (see PostJSON); the body is
// read and discarded.
func (c *Client) Get(ctx context.Context, endpoint, path string, expect func(code int) bool) Outcome {
	out, _ := c.do(ctx, endpoint, http.MethodGet, path, nil, nil, expect, false)
	return out
}

// GetJSON sends GET path and decodes a 2xx body into v; any other answer
// is an error.
func (c *Client) GetJSON(ctx context.Context, endpoint, path string, v any) error {
	out, body := c.do(ctx, endpoint, http.MethodGet, path, nil, nil, nil, true)
	if out.Err != nil {
		return fmt.Errorf("GET %s: %w", path, out.Err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// PostJSON sends POST path with body encoded as JSON and the extra headers,
// and returns the outcome and the response body (up to 4 MiB). Outcome.Code
// is the status code, or CodeTimeout, CodeCanceled or CodeError when no
// response arrived. Outcome.Err is set for transport errors, for 5xx, and
// for any other status that expect rejects (nil expect accepts 2xx only);
// for statuses it is a *StatusError carrying the problem detail.
func (c *Client) PostJSON(ctx context.Context, endpoint, path string, body any, header map[string]string, expect func(code int) bool) (Outcome, []byte) {
	b, err := json.Marshal(body)
	if err != nil {
		return Outcome{Endpoint: endpoint, Code: CodeError, Err: fmt.Errorf("encode %s body: %w", endpoint, err)}, nil
	}
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return c.do(ctx, endpoint, http.MethodPost, path, b, h, expect, true)
}

// do sends one request and classifies it. keep asks for the body back.
func (c *Client) do(ctx context.Context, endpoint, method, path string, body []byte, header map[string]string, expect func(int) bool, keep bool) (Outcome, []byte) {
	out := Outcome{Endpoint: endpoint}
	u, err := c.url(path)
	if err != nil {
		out.Code, out.Err = CodeError, err
		return out, nil
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		out.Code, out.Err = CodeError, err
		return out, nil
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	sc := c.trace.next()
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(ctx, sc), propagation.HeaderCarrier(req.Header))
	out.TraceID, out.SpanID, out.Sampled = sc.TraceID(), sc.SpanID(), sc.IsSampled()
	resp, err := c.hc.Do(req)
	if err != nil {
		out.Code, out.Err = classify(ctx, err), err
		return out, nil
	}
	defer resp.Body.Close()
	out.Code = strconv.Itoa(resp.StatusCode)
	if expect == nil {
		expect = Expect()
	}
	ok := resp.StatusCode < 500 && expect(resp.StatusCode)
	var data []byte
	switch {
	case !ok:
		data, err = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	case keep:
		data, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		// The status arrived but the body did not: the request failed.
		out.Code, out.Err = classify(ctx, err), fmt.Errorf("read %s response: %w", endpoint, err)
		return out, nil
	}
	if !ok {
		out.Err = statusError(resp.StatusCode, data)
	}
	return out, data
}

// classify names a transport error: CodeCanceled when ctx was canceled,
// CodeTimeout for any deadline or timeout, CodeError otherwise.
func classify(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return CodeCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return CodeTimeout
	default:
		return CodeError
	}
}

// statusError builds a StatusError from a response body, using its problem
// fields when it is problem+json and its first 200 bytes otherwise.
func statusError(code int, body []byte) *StatusError {
	e := &StatusError{Code: code}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "") {
		e.Type, e.Title, e.Detail = p.Type, p.Title, p.Detail
		return e
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	e.Detail = s
	return e
}

// AdminPut sends PUT path with body as JSON and "Authorization: Bearer
// token", as the API's admin endpoints require. Any status other than 2xx is
// returned as a *StatusError with the problem detail; transport errors are
// wrapped.
func (c *Client) AdminPut(ctx context.Context, path, token string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("admin PUT %s: encode body: %w", path, err)
	}
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}
	out, _ := c.do(ctx, "admin", http.MethodPut, path, b, h, nil, false)
	if out.Err != nil {
		return fmt.Errorf("admin PUT %s: %w", path, out.Err)
	}
	return nil
}

// AdminGet sends GET path with "Authorization: Bearer token" and decodes
// the JSON answer into v; errors as AdminPut's.
func (c *Client) AdminGet(ctx context.Context, path, token string, v any) error {
	out, body := c.do(ctx, "admin", http.MethodGet, path, nil, map[string]string{"Authorization": "Bearer " + token}, nil, true)
	if out.Err != nil {
		return fmt.Errorf("admin GET %s: %w", path, out.Err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("admin GET %s: %w", path, err)
	}
	return nil
}

// Scrape GETs the target's /metrics in the Prometheus text format and
// parses it (see scrape.Parse).
func (c *Client) Scrape(ctx context.Context) (scrape.Samples, error) {
	u, err := c.url("/metrics")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody+1))
	if err == nil && len(data) > maxMetricsBody {
		err = fmt.Errorf("/metrics is larger than %d bytes", maxMetricsBody)
	}
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape: %w", statusError(resp.StatusCode, data))
	}
	m, err := scrape.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	return m, nil
}
