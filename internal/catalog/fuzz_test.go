package catalog

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDecodeReserveRequest feeds arbitrary bodies, Content-Types and
// Idempotency-Key headers through DecodeReserveRequest: it must not panic,
// a rejection must be a documented 4xx problem, and an accepted request
// must satisfy every documented constraint.
func FuzzDecodeReserveRequest(f *testing.F) {
	for _, seed := range []struct{ body, contentType, key string }{
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k"}`, "application/json", ""},
		{`{"product_id": 1, "quantity": 1000}`, "application/json; charset=utf-8", "hdr"},
		{`{"product_id": 1, "quantity": 1001, "idempotency_key": "k"}`, "application/json", ""},
		{`{"product_id": 0, "quantity": 1, "idempotency_key": "k"}`, "", ""},
		{`{"product_id": 9223372036854775807, "quantity": 1, "idempotency_key": "k"}`, "", ""},
		{`{"product_id": 9223372036854775808, "quantity": 1, "idempotency_key": "k"}`, "", ""},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": ""}`, "", ""},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "\ud800"}`, "", ""},
		{`{"product_id": 1, "quantity": 1}`, "", "k\xff"},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k\u0000"}`, "", ""},
		{`{"product_id": 1, "quantity": 1}`, "", "k\x00"},
		{`{"product_id": 1, "quantity": 1}`, "", "k\x1b[0m"},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k"} {}`, "", ""},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k", "extra": 1}`, "", ""},
		{`{"product_id": "1"}`, "", ""},
		{`{"product_id": 1.0, "quantity": 1, "idempotency_key": "k"}`, "", ""},
		{`{"product_id": 1e2, "quantity": 1, "idempotency_key": "k"}`, "", ""},
		{`null`, "", ""},
		{`[]`, "", ""},
		{``, "", ""},
		{`{`, "", ""},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k"}`, "text/plain", ""},
		{`{"product_id": 1, "quantity": 1, "Idempotency_Key": "k"}`, "", ""},
		{`{"idempotency_key": "` + strings.Repeat("k", MaxBodyBytes) + `"}`, "", ""},
		{`{"product_id": 1, "quantity": 1, "idempotency_key": "k"}` + strings.Repeat(" ", MaxBodyBytes), "", ""},
	} {
		f.Add(seed.body, seed.contentType, seed.key)
	}
	f.Fuzz(func(t *testing.T, body, contentType, key string) {
		r := httptest.NewRequest(http.MethodPost, "/v1/reservations", strings.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		req, p, ok := DecodeReserveRequest(w, r)
		if !ok {
			if want, known := problemTypes[p.Type]; !known || want != p.Status {
				t.Fatalf("rejected with undocumented problem %+v", p)
			}
			switch p.Status {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("rejected with status %d: %+v", p.Status, p)
			}
			if p.Detail == "" {
				t.Fatalf("problem without detail: %+v", p)
			}
			return
		}
		if p != (Problem{}) {
			t.Fatalf("accepted with a problem: %+v", p)
		}
		if req.ProductID <= 0 || req.Quantity < 1 || req.Quantity > MaxQuantity {
			t.Fatalf("accepted out of range: %+v", req)
		}
		if req.IdempotencyKey == "" || utf8.RuneCountInString(req.IdempotencyKey) > MaxIdempotencyKeyLen || !utf8.ValidString(req.IdempotencyKey) ||
			strings.ContainsFunc(req.IdempotencyKey, unicode.IsControl) {
			t.Fatalf("accepted a bad idempotency key %q", req.IdempotencyKey)
		}
		if len(body) > MaxBodyBytes {
			t.Fatalf("accepted a body of %d bytes (max %d)", len(body), MaxBodyBytes)
		}
		if contentType != "" && !strings.HasPrefix(contentType, "application/json") {
			t.Fatalf("accepted Content-Type %q", contentType)
		}
		// The body was one JSON object, and the key came from it or the
		// header.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &obj); err != nil || obj == nil {
			t.Fatalf("accepted a body that is not one JSON object (%v): %q", err, body)
		}
		var inBody struct {
			IdempotencyKey string `json:"idempotency_key"`
		}
		_ = json.Unmarshal([]byte(body), &inBody)
		inBody.IdempotencyKey, key = strings.TrimSpace(inBody.IdempotencyKey), strings.TrimSpace(key)
		if inBody.IdempotencyKey != "" && req.IdempotencyKey != inBody.IdempotencyKey {
			t.Fatalf("key %q, but the body says %q", req.IdempotencyKey, inBody.IdempotencyKey)
		}
		if inBody.IdempotencyKey == "" && req.IdempotencyKey != key {
			t.Fatalf("key %q, but the header says %q", req.IdempotencyKey, key)
		}
	})
}

// FuzzParseIDs checks ParseIDs never panics and accepts only lists of
// 1..MaxBatchIDs positive ids, one per comma-separated element.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{
		"1", "1,2,3", " 1 , 2 ", "", ",", "1,", ",1", "1,,2", "0", "-1", "+1", "1.5", "abc", "1e3",
		"9223372036854775807", "9223372036854775808", "0x10", "١", "1\x00",
		strings.TrimSuffix(strings.Repeat("7,", MaxBatchIDs), ","),
		strings.TrimSuffix(strings.Repeat("7,", MaxBatchIDs+1), ","),
		strings.Repeat(",", 10_000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseIDs(s)
		if err != nil {
			if ids != nil {
				t.Fatalf("ParseIDs(%q) = %v with error %v", s, ids, err)
			}
			return
		}
		if len(ids) < 1 || len(ids) > MaxBatchIDs {
			t.Fatalf("ParseIDs(%q) returned %d ids", s, len(ids))
		}
		if n := strings.Count(s, ",") + 1; len(ids) != n {
			t.Fatalf("ParseIDs(%q) returned %d ids for %d elements", s, len(ids), n)
		}
		for _, id := range ids {
			if id <= 0 {
				t.Fatalf("ParseIDs(%q) returned id %d", s, id)
			}
		}
	})
}
