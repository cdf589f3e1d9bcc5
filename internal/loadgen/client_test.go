package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newTestClient starts srv's handler on loopback and returns a Client for it.
func newTestClient(t *testing.T, h http.Handler, timeout time.Duration) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, srv
}

func writeProblem(w http.ResponseWriter, code int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"type": "/problems/x", "title": title, "status": code, "detail": detail})
}

func TestClientGetCodes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 100000)) })
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 404, "No such resource", "product 7") })
	mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 500, "Internal", "db down") })
	mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.1/elsewhere", http.StatusFound)
	})
	c, _ := newTestClient(t, mux, 5*time.Second)
	ctx := context.Background()

	for _, tc := range []struct {
		path    string
		expect  func(int) bool
		code    string
		wantErr bool
	}{
		{"/ok", nil, "200", false},
		{"/ok?x=1", Expect(404), "200", false},
		{"/missing", nil, "404", true},
		{"/missing", Expect(404), "404", false},
		{"/boom", nil, "500", true},
		{"/boom", func(int) bool { return true }, "500", true}, // 5xx always fails
		{"/redirect", nil, "302", true},                        // not followed
		{"/redirect", Expect(302), "302", false},
	} {
		out := c.Get(ctx, "ep", tc.path, tc.expect)
		if out.Endpoint != "ep" || out.Code != tc.code || (out.Err != nil) != tc.wantErr {
			t.Errorf("Get(%s) = %+v, want code %s err=%v", tc.path, out, tc.code, tc.wantErr)
		}
	}
	out := c.Get(ctx, "product", "/missing", nil)
	var se *StatusError
	if !errors.As(out.Err, &se) || se.Code != 404 || se.Detail != "product 7" || se.Title != "No such resource" {
		t.Errorf("Get(/missing).Err = %#v, want StatusError 404 with the problem detail", out.Err)
	}
}

func TestClientPostJSON(t *testing.T) {
	var gotHeader, gotCT string
	var gotBody map[string]any
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader, gotCT = r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type")
		json.NewDecoder(r.Body).Decode(&gotBody)
		if gotBody["qty"].(float64) > 5 {
			writeProblem(w, 409, "Not enough stock", "want 9, have 5")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"id":"r1"}`)
	})
	c, _ := newTestClient(t, h, 5*time.Second)
	ctx := context.Background()

	out, body := c.PostJSON(ctx, "reserve", "/v1/reservations", map[string]any{"qty": 2}, map[string]string{"Idempotency-Key": "k1"}, nil)
	if out.Code != "201" || out.Err != nil || string(body) != `{"id":"r1"}` {
		t.Errorf("PostJSON = %+v %q, want 201 with body", out, body)
	}
	if gotHeader != "k1" || gotCT != "application/json" || gotBody["qty"].(float64) != 2 {
		t.Errorf("server saw header %q, content type %q, body %v", gotHeader, gotCT, gotBody)
	}
	out, body = c.PostJSON(ctx, "reserve", "/v1/reservations", map[string]any{"qty": 9}, nil, Expect(409))
	if out.Code != "409" || out.Err != nil || !strings.Contains(string(body), "want 9") {
		t.Errorf("PostJSON expecting 409 = %+v %q, want 409 without error, with body", out, body)
	}
	out, _ = c.PostJSON(ctx, "reserve", "/v1/reservations", map[string]any{"qty": 9}, nil, nil)
	if out.Code != "409" || out.Err == nil {
		t.Errorf("PostJSON not expecting 409 = %+v, want an error", out)
	}
	out, _ = c.PostJSON(ctx, "reserve", "/v1/reservations", math.NaN(), nil, nil)
	if out.Code != CodeError || out.Err == nil {
		t.Errorf("PostJSON(unencodable) = %+v, want code error", out)
	}
}

func TestClientTransportErrors(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // longer than the client timeout, but never a fixed sleep
		case <-release:
		case <-r.Context().Done():
		}
	})
	c, srv := newTestClient(t, h, 50*time.Millisecond)
	defer close(release)

	out := c.Get(context.Background(), "slow", "/slow", nil)
	if out.Code != CodeTimeout || out.Err == nil {
		t.Errorf("Get(slow) = %+v, want code timeout", out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := c.Get(ctx, "slow", "/slow", nil); out.Code != CodeCanceled || out.Err == nil {
		t.Errorf("Get with canceled ctx = %+v, want code canceled", out)
	}

	// Connection refused: a closed server's address.
	dead, err := NewClient(srv.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	srv.Listener.Close()
	if out := dead.Get(context.Background(), "x", "/x", nil); out.Code != CodeError || out.Err == nil {
		t.Errorf("Get(closed server) = %+v, want code error", out)
	}
}

func TestClientRefusesOtherHosts(t *testing.T) {
	var hits atomic.Int64
	c, srv := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }), time.Second)
	ctx := context.Background()
	for _, p := range []string{
		"http://192.0.2.1/x", "https://example.com/", "//example.com/x", "example.com/x", "",
		"@example.com/x", "/\\example.com", "/x y", "\t/x", srv.URL + "/x",
	} {
		out := c.Get(ctx, "x", p, nil)
		if !errors.Is(out.Err, ErrOtherHost) || out.Code != CodeError {
			t.Errorf("Get(%q) = %+v, want ErrOtherHost", p, out)
		}
		if out, _ := c.PostJSON(ctx, "x", p, 1, nil, nil); !errors.Is(out.Err, ErrOtherHost) {
			t.Errorf("PostJSON(%q) = %+v, want ErrOtherHost", p, out)
		}
		if err := c.AdminPut(ctx, p, "t", 1); !errors.Is(err, ErrOtherHost) {
			t.Errorf("AdminPut(%q) = %v, want ErrOtherHost", p, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
	if out := c.Get(ctx, "x", "/@example.com/x?q=a%20b", nil); out.Err != nil || hits.Load() != 1 {
		t.Errorf("Get of an odd but local path = %+v (hits %d), want it sent to the target", out, hits.Load())
	}
	for _, base := range []string{"ftp://127.0.0.1", "127.0.0.1:8080", "http://"} {
		if _, err := NewClient(base, time.Second); err == nil {
			t.Errorf("NewClient(%q) accepted", base)
		}
	}
}

func TestClientBasePrefix(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL.RequestURI() }))
	defer srv.Close()
	c, err := NewClient(srv.URL+"/api/?ignored=1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if out := c.Get(context.Background(), "x", "/v1/x?a=1", nil); out.Err != nil || got != "/api/v1/x?a=1" {
		t.Errorf("Get = %+v, server saw %q, want /api/v1/x?a=1", out, got)
	}
}

func TestClientAdminPut(t *testing.T) {
	var auth, method string
	var body map[string]any
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, method = r.Header.Get("Authorization"), r.Method
		json.NewDecoder(r.Body).Decode(&body)
		if auth != "Bearer s3cret" {
			writeProblem(w, 401, "Unauthorized", "")
			return
		}
		if body["strategy"] != "ttl" && body["strategy"] != "xfetch" {
			writeProblem(w, 422, "A parameter is out of range or invalid", "strategy must be xfetch, ttl or none")
			return
		}
		w.WriteHeader(204)
	})
	c, _ := newTestClient(t, h, time.Second)
	ctx := context.Background()
	if err := c.AdminPut(ctx, "/admin/cache", "s3cret", map[string]any{"strategy": "ttl", "beta": 1.0}); err != nil {
		t.Fatalf("AdminPut = %v", err)
	}
	if method != http.MethodPut || auth != "Bearer s3cret" || body["beta"] != 1.0 {
		t.Errorf("server saw %s auth %q body %v", method, auth, body)
	}
	err := c.AdminPut(ctx, "/admin/cache", "s3cret", map[string]any{"strategy": "bogus"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 422 || !strings.Contains(err.Error(), "strategy must be xfetch, ttl or none") {
		t.Errorf("AdminPut(bogus) = %v, want a 422 StatusError with the problem detail", err)
	}
	if err := c.AdminPut(ctx, "/admin/cache", "wrong", map[string]any{"strategy": "ttl"}); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("AdminPut(wrong token) = %v, want 401", err)
	}
}

func TestClientScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cachex_gets_total", Help: "h"}, []string{"cache"})
	reg.MustRegister(ctr)
	ctr.WithLabelValues("category_stats").Add(7)
	ctr.WithLabelValues("product").Add(5)

	// The handler would answer OpenMetrics if asked: Scrape asks for text.
	c, _ := newTestClient(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}), time.Second)
	m, err := c.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sum("cachex_gets_total", nil); got != 12 {
		t.Errorf("scraped cachex_gets_total sum %v, want 12", got)
	}

	// Not a metrics endpoint: the status is an error; neither is a body
	// the text parser refuses.
	c2, _ := newTestClient(t, http.NotFoundHandler(), time.Second)
	if _, err := c2.Scrape(context.Background()); err == nil {
		t.Error("Scrape of a 404 succeeded")
	}
	c3, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "a{x=\"1\" 3\n")
	}), time.Second)
	if _, err := c3.Scrape(context.Background()); err == nil {
		t.Error("Scrape of a garbled body succeeded")
	}
}
