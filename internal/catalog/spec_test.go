package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// reporter is the part of testing.TB the check reports through.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// failures records what a check reported, to test the check itself.
type failures []string

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	*f = append(*f, fmt.Sprintf(format, args...))
}

// specCheck holds openapi.yaml, loaded and validated, to check every
// request the tests send and every response they get against it.
type specCheck struct {
	doc    *openapi3.T
	router routers.Router
}

func newSpecCheck(t testing.TB) *specCheck {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openAPI)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &specCheck{doc: doc, router: router}
}

// serve sends req through h and checks the exchange.
func (c *specCheck) serve(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	c.check(t, req.Method, req.URL.RequestURI(), string(body), req.Header, rec)
	return rec
}

// check validates one exchange: the response always (its status must be
// documented for the operation, its headers and body must match), the
// request when the API accepted it (2xx): what the API accepts, the
// document must allow. A request the API refused may well break the
// document; its answer must still be documented. A path or method the
// document does not have must be answered with a 404 or 405 problem (or a
// 401 under /admin).
func (c *specCheck) check(t reporter, method, target, body string, header http.Header, rec *httptest.ResponseRecorder) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header = header.Clone()
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // the API reads a body without one as JSON (docs/api.md)
	}
	if method == http.MethodHead {
		req.Method = http.MethodGet // HEAD is GET without a body
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil || route.Method != req.Method || rec.Code == http.StatusMethodNotAllowed {
		// The admin API checks the token before it looks for the route, so
		// that it does not tell who has none which routes exist.
		admin := strings.HasPrefix(req.URL.Path, "/admin/") && rec.Code == http.StatusUnauthorized
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed && !admin {
			t.Errorf("OpenAPI: %s %s is not documented (%v), yet answered %d", method, target, err, rec.Code)
			return
		}
		c.checkProblem(t, method, target, rec)
		return
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if rec.Code >= 200 && rec.Code < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("OpenAPI: the API accepted %s %s (%d), which the document does not allow: %v", method, target, rec.Code, err)
		}
	}
	if method == http.MethodHead {
		return
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("OpenAPI: the answer to %s %s does not match the document: %v\nbody: %.300s", method, target, err, rec.Body.String())
	}
}

// checkProblem validates an answer outside the document's routes: a
// problem+json document.
func (c *specCheck) checkProblem(t reporter, method, target string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if method == http.MethodHead {
		return
	}
	var v any
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("OpenAPI: %s %s answered %d with Content-Type %q, not a problem", method, target, rec.Code, ct)
		return
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Errorf("OpenAPI: %s %s: %v", method, target, err)
		return
	}
	if err := c.doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
		t.Errorf("OpenAPI: %s %s answered a problem that does not match the document: %v", method, target, err)
	}
}

// TestSpecCheckCatchesDrift: the check is not vacuous. An answer with a
// field the document does not have, one without a required field, an
// undocumented status and a request the API accepted but the document
// forbids all fail it.
func TestSpecCheckCatchesDrift(t *testing.T) {
	t.Parallel()
	c := newSpecCheck(t)
	answer := func(status int, body string, header ...string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			rec.Header().Set(header[i], header[i+1])
		}
		rec.WriteHeader(status)
		rec.WriteString(body)
		return rec
	}
	good := `{"id":1,"product_id":2,"quantity":1,"status":"active","fence_token":3,"idempotency_key":"k",` +
		`"created_at":"2026-11-30T00:00:00Z","updated_at":"2026-11-30T00:00:00Z","expires_at":"2026-11-30T00:15:00Z"}`
	reqBody := `{"product_id":2,"quantity":1,"idempotency_key":"k"}`
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := map[string]struct {
		method, target, body string
		rec                  *httptest.ResponseRecorder
	}{
		"extra field":        {"GET", "/v1/reservations/1", "", answer(200, strings.Replace(good, `"id":1,`, `"id":1,"secret":"x",`, 1))},
		"missing field":      {"GET", "/v1/reservations/1", "", answer(200, strings.Replace(good, `"status":"active",`, "", 1))},
		"unknown status":     {"GET", "/v1/reservations/1", "", answer(200, strings.Replace(good, `"active"`, `"held"`, 1))},
		"undocumented code":  {"GET", "/v1/reservations/1", "", answer(418, good)},
		"missing Location":   {"POST", "/v1/reservations", reqBody, answer(201, good)},
		"accepted, invalid":  {"POST", "/v1/reservations", `{"product_id":2,"quantity":5000,"idempotency_key":"k"}`, answer(201, good, "Location", "/v1/reservations/1")},
		"not a problem body": {"GET", "/nope", "", answer(404, `{"type":"x"}`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got failures
			c.check(&got, tc.method, tc.target, tc.body, jsonHeader, tc.rec)
			if len(got) == 0 {
				t.Errorf("the check let %s through", name)
			}
		})
	}
	t.Run("conforming", func(t *testing.T) {
		c.check(t, "POST", "/v1/reservations", reqBody, jsonHeader, answer(201, good, "Location", "/v1/reservations/1"))
	})
}
