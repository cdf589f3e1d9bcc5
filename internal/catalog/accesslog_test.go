package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessLogAndRequestIDs: every request gets one access line with
// method, route, status, duration_ms and request_id; a usable X-Request-Id
// is kept and echoed, a hostile one replaced by a generated id; access
// lines are Debug; an error line of a request carries its request_id.
func TestAccessLogAndRequestIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := NewHandler(HandlerConfig{Registry: prometheus.NewRegistry(), Logger: log,
		Ready: func(context.Context) error { return errors.New("database down") }})
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path, id string) (*httptest.ResponseRecorder, []map[string]any) {
		t.Helper()
		buf.Reset()
		req := httptest.NewRequest(method, path, nil)
		if id != "" {
			req.Header.Set(requestIDHeader, id)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			lines = append(lines, m)
		}
		return rec, lines
	}
	access := func(lines []map[string]any) map[string]any {
		t.Helper()
		for _, l := range lines {
			if l["msg"] == "request" {
				return l
			}
		}
		t.Fatalf("no access line in %v", lines)
		return nil
	}

	rec, lines := send(http.MethodGet, "/openapi.yaml", "req-1.a:B_c")
	a := access(lines)
	if got := rec.Header().Get(requestIDHeader); got != "req-1.a:B_c" {
		t.Errorf("echoed id %q, want the caller's", got)
	}
	for k, want := range map[string]any{"level": "DEBUG", "method": "GET", "route": "/openapi.yaml", "status": 200.0, "request_id": "req-1.a:B_c"} {
		if a[k] != want {
			t.Errorf("access line %s = %v, want %v (line %v)", k, a[k], want, a)
		}
	}
	if d, ok := a["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("duration_ms = %v", a["duration_ms"])
	}

	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for _, hostile := range []string{"", "has space", "nul\x00byte", strings.Repeat("x", maxRequestID+1), "new\nline", `quote"d`, "ünïcode"} {
		rec, lines := send(http.MethodGet, "/openapi.yaml", hostile)
		id := rec.Header().Get(requestIDHeader)
		if !generated.MatchString(id) || seen[id] {
			t.Errorf("id %q for a request with %q: want a fresh generated one", id, hostile)
		}
		seen[id] = true
		if got := access(lines)["request_id"]; got != id {
			t.Errorf("logged request_id %v, echoed %q", got, id)
		}
	}
	if !usableRequestID(strings.Repeat("y", maxRequestID)) {
		t.Error("an id of exactly the longest length was refused")
	}

	_, lines = send(http.MethodGet, "/no/such/route", "")
	if a := access(lines); a["route"] != "unmatched" || a["status"] != 404.0 {
		t.Errorf("an unknown route logged as %v", a)
	}
	_, lines = send("BREW", "/openapi.yaml", "")
	if a := access(lines); a["method"] != "other" || a["status"] != 405.0 {
		t.Errorf("a made-up method logged as %v", a)
	}

	_, lines = send(http.MethodGet, "/readyz", "ready-check")
	var warned bool
	for _, l := range lines {
		if l["msg"] == "not ready" {
			warned = true
			if l["request_id"] != "ready-check" {
				t.Errorf("error line %v lacks the request's id", l)
			}
		}
	}
	if !warned {
		t.Errorf("no 'not ready' line in %v", lines)
	}
}
