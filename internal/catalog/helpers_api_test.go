package catalog

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// problemTypes are the problem identifiers the API documents (problem.go,
// openapi.yaml).
var problemTypes = map[string]int{
	"/problems/bad-request":          http.StatusBadRequest,
	"/problems/invalid-parameter":    http.StatusUnprocessableEntity,
	"/problems/not-found":            http.StatusNotFound,
	"/problems/too-large":            http.StatusRequestEntityTooLarge,
	"/problems/insufficient-stock":   http.StatusConflict,
	"/problems/fenced":               http.StatusConflict,
	"/problems/idempotency-mismatch": http.StatusUnprocessableEntity,
	"/problems/busy":                 http.StatusServiceUnavailable,
	"/problems/unauthorized":         http.StatusUnauthorized,
	"/problems/admin-disabled":       http.StatusNotFound,
	"/problems/method-not-allowed":   http.StatusMethodNotAllowed,
	"/problems/internal":             http.StatusInternalServerError,
	"/problems/unavailable":          http.StatusServiceUnavailable,
}

// checkProblem asserts that rec is a well-formed problem+json answer with
// the given status and type, and returns it.
func checkProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, typ string) Problem {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p Problem
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body does not decode: %v", err)
	}
	if want, ok := problemTypes[p.Type]; !ok {
		t.Errorf("problem type %q is not a documented /problems/... identifier", p.Type)
	} else if want != p.Status {
		t.Errorf("problem type %q carries status %d, documented with %d", p.Type, p.Status, want)
	}
	if p.Status != rec.Code {
		t.Errorf("problem status field %d != HTTP status %d", p.Status, rec.Code)
	}
	if p.Type != typ {
		t.Errorf("problem type = %q, want %q (detail %q)", p.Type, typ, p.Detail)
	}
	if p.Title == "" {
		t.Errorf("problem %q has no title", p.Type)
	}
	if p.Status == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
		t.Errorf("503 problem %q without Retry-After", p.Type)
	}
	return p
}

// decodeJSON asserts a JSON answer with status and decodes it into v.
func decodeJSON(t testing.TB, rec *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if v == nil {
		return
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("body does not decode into %T: %v; body %s", v, err, rec.Body.String())
	}
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test with what after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// metricValue returns the value of the counter or gauge of family name
// whose labels include all of labels, summed over matching series; 0 when
// none matches.
func metricValue(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			have := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && have[k] == v
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

// reservationsTotal returns catalog_reservations_total{result}.
func (a *testAPI) reservationsTotal(result string) int {
	a.t.Helper()
	return int(metricValue(a.t, a.reg, "catalog_reservations_total", map[string]string{"result": result}))
}

// setInventory sets a product's stock and reserved units directly in the
// table.
func (a *testAPI) setInventory(productID int64, stock, reserved int) {
	a.t.Helper()
	tag, err := a.db.Exec(context.Background(),
		"UPDATE inventory SET stock = $2, reserved = $3 WHERE product_id = $1", productID, stock, reserved)
	if err != nil || tag.RowsAffected() != 1 {
		a.t.Fatalf("set inventory of %d: %v (%d rows)", productID, err, tag.RowsAffected())
	}
}

// inventoryRow reads a product's inventory from the tables, with the
// warehouse's fencing token.
func (a *testAPI) inventoryRow(productID int64) (stock, reserved int, fence int64) {
	a.t.Helper()
	err := a.db.QueryRow(context.Background(),
		"SELECT i.stock, i.reserved, w.fence_token FROM inventory i JOIN warehouse w USING (product_id) WHERE product_id = $1",
		productID).Scan(&stock, &reserved, &fence)
	if err != nil {
		a.t.Fatal(err)
	}
	return stock, reserved, fence
}

// queryInt runs a query that returns one integer.
func (a *testAPI) queryInt(sql string, args ...any) int64 {
	a.t.Helper()
	var n int64
	if err := a.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		a.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// reserveBody is a reservation request's JSON body.
func reserveBody(productID int64, qty int, key string) string {
	b, _ := json.Marshal(ReserveRequest{ProductID: productID, Quantity: qty, IdempotencyKey: key})
	return string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
