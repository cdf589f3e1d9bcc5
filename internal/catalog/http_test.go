package catalog

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestHTTPHappyPaths calls every route of the public API once with a valid
// request and checks the answer against the database.
func TestHTTPHappyPaths(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	ctx := context.Background()

	t.Run("healthz", func(t *testing.T) {
		var got map[string]string
		decodeJSON(t, a.do(http.MethodGet, "/healthz", ""), http.StatusOK, &got)
		if got["status"] != "ok" {
			t.Errorf("healthz = %v", got)
		}
	})
	t.Run("readyz", func(t *testing.T) {
		var got map[string]string
		decodeJSON(t, a.do(http.MethodGet, "/readyz", ""), http.StatusOK, &got)
		if got["status"] != "ready" {
			t.Errorf("readyz = %v", got)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		rec := a.do(http.MethodGet, "/metrics", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "catalog_reservations_total") {
			t.Errorf("GET /metrics = %d, body without catalog_reservations_total", rec.Code)
		}
	})
	t.Run("openapi", func(t *testing.T) {
		rec := a.do(http.MethodGet, "/openapi.yaml", "")
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/yaml" ||
			!strings.HasPrefix(rec.Body.String(), "openapi: 3") {
			t.Errorf("GET /openapi.yaml = %d %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	})
	t.Run("product", func(t *testing.T) {
		var p Product
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/7", ""), http.StatusOK, &p)
		var name string
		var price int64
		if err := a.db.QueryRow(ctx, "SELECT name, price_cents FROM products WHERE id = 7").Scan(&name, &price); err != nil {
			t.Fatal(err)
		}
		if p.ID != 7 || p.Name != name || p.PriceCents != price || !json.Valid(p.Attributes) {
			t.Errorf("product 7 = %+v, want name %q price %d", p, name, price)
		}
	})
	t.Run("products", func(t *testing.T) {
		var got struct {
			Products []Product `json:"products"`
			Missing  []int64   `json:"missing"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/products?ids=3,999999,1,3", ""), http.StatusOK, &got)
		var ids []int64
		for _, p := range got.Products {
			ids = append(ids, p.ID)
		}
		if !slices.Equal(ids, []int64{3, 1}) || !slices.Equal(got.Missing, []int64{999999}) {
			t.Errorf("products = %v, missing %v; want [3 1], [999999]", ids, got.Missing)
		}
	})
	t.Run("inventory", func(t *testing.T) {
		var inv Inventory
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/5/inventory", ""), http.StatusOK, &inv)
		stock, reserved, fence := a.inventoryRow(5)
		if inv.ProductID != 5 || inv.Stock != stock || inv.Reserved != reserved || inv.Available != stock-reserved || inv.FenceToken != fence {
			t.Errorf("inventory = %+v, want stock %d reserved %d fence %d", inv, stock, reserved, fence)
		}
	})
	t.Run("category stats", func(t *testing.T) {
		var st CategoryStats
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/2/stats", ""), http.StatusOK, &st)
		n := a.queryInt("SELECT count(*) FROM products WHERE category_id = 2")
		reviews := a.queryInt("SELECT count(*) FROM reviews r JOIN products p ON p.id = r.product_id WHERE p.category_id = 2")
		if st.CategoryID != 2 || int64(st.Products) != n || int64(st.Reviews) != reviews {
			t.Errorf("stats = %+v, want %d products, %d reviews", st, n, reviews)
		}
	})
	t.Run("top", func(t *testing.T) {
		cat := a.queryInt("SELECT category_id FROM products GROUP BY category_id ORDER BY count(*) DESC, category_id LIMIT 1")
		var got struct {
			CategoryID int64        `json:"category_id"`
			Products   []TopProduct `json:"products"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/"+itoa(cat)+"/top?limit=3", ""), http.StatusOK, &got)
		if got.CategoryID != cat || len(got.Products) != 3 {
			t.Fatalf("top = category %d, %d products; want %d, 3", got.CategoryID, len(got.Products), cat)
		}
		for i, p := range got.Products {
			if p.CategoryID != cat || (i > 0 && p.Score > got.Products[i-1].Score) {
				t.Errorf("top[%d] = category %d score %v: not of the category or not ranked", i, p.CategoryID, p.Score)
			}
		}
	})
	t.Run("search", func(t *testing.T) {
		var name string
		if err := a.db.QueryRow(ctx, "SELECT name FROM products WHERE id = 11").Scan(&name); err != nil {
			t.Fatal(err)
		}
		word := ""
		for _, w := range strings.Fields(name) {
			if len(w) > len(word) {
				word = w
			}
		}
		var got struct {
			Query string      `json:"query"`
			Hits  []SearchHit `json:"hits"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/search?q="+strings.ToUpper(word)+"&limit=50", ""), http.StatusOK, &got)
		if got.Query != strings.ToLower(word) || len(got.Hits) == 0 || len(got.Hits) > 50 {
			t.Fatalf("search %q = query %q, %d hits", word, got.Query, len(got.Hits))
		}
		for i := 1; i < len(got.Hits); i++ {
			if got.Hits[i].Rank > got.Hits[i-1].Rank {
				t.Errorf("hits not ranked: %v after %v", got.Hits[i].Rank, got.Hits[i-1].Rank)
			}
		}
	})
	t.Run("patch", func(t *testing.T) {
		var p Product
		decodeJSON(t, a.admin(http.MethodPatch, "/v1/products/9", `{"price_cents": 1234, "attributes": {"color": "teal"}}`), http.StatusOK, &p)
		var attrs map[string]any
		_ = json.Unmarshal(p.Attributes, &attrs)
		if p.ID != 9 || p.PriceCents != 1234 || len(attrs) != 1 || attrs["color"] != "teal" {
			t.Errorf("patched = %+v", p)
		}
		if got := a.queryInt("SELECT price_cents FROM products WHERE id = 9"); got != 1234 {
			t.Errorf("price in the table = %d, want 1234", got)
		}
	})
	t.Run("reserve and cancel", func(t *testing.T) {
		a.setInventory(13, 10, 0)
		var r Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(13, 2, "happy-1")), http.StatusCreated, &r)
		if r.ProductID != 13 || r.Quantity != 2 || r.Status != StatusActive || r.IdempotencyKey != "happy-1" || r.ID == 0 {
			t.Errorf("reservation = %+v", r)
		}
		var replay Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(13, 2, "happy-1")), http.StatusOK, &replay)
		if replay.ID != r.ID {
			t.Errorf("replay = reservation %d, want %d", replay.ID, r.ID)
		}
		// The key may come in the Idempotency-Key header instead.
		var hdr Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", `{"product_id": 13, "quantity": 1}`, "Idempotency-Key", "happy-hdr"),
			http.StatusCreated, &hdr)
		if hdr.IdempotencyKey != "happy-hdr" || hdr.Quantity != 1 {
			t.Errorf("reservation with the header's key = %+v", hdr)
		}
		var c Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, &c)
		if c.ID != r.ID || c.Status != StatusCancelled {
			t.Errorf("cancelled = %+v", c)
		}
		if _, reserved, _ := a.inventoryRow(13); reserved != 1 {
			t.Errorf("reserved = %d after 2+1 reserved and 2 cancelled, want 1", reserved)
		}
	})
}

// TestHTTPBadInput sends every kind of bad request and checks that each gets
// the documented 4xx problem, never a 5xx.
func TestHTTPBadInput(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	a.setInventory(21, 100, 0)
	big := `{"description": "` + strings.Repeat("x", MaxBodyBytes+1) + `"}`
	bigReserve := `{"product_id": 21, "quantity": 1, "idempotency_key": "` + strings.Repeat("k", MaxBodyBytes) + `"}`
	ids101 := strings.TrimSuffix(strings.Repeat("1,", 101), ",")
	ids100 := strings.TrimSuffix(strings.Repeat("2,", 100), ",")
	const (
		bad       = "/problems/bad-request"
		invalid   = "/problems/invalid-parameter"
		notFound  = "/problems/not-found"
		tooLarge  = "/problems/too-large"
		notMethod = "/problems/method-not-allowed"
	)
	type header = []string
	cases := []struct {
		name         string
		method, path string
		body         string
		header       header
		status       int
		typ          string
	}{
		// Bodies: PATCH /v1/products/{id}.
		{"patch malformed JSON", "PATCH", "/v1/products/1", `{"name": `, nil, 400, bad},
		{"patch not an object", "PATCH", "/v1/products/1", `["name"]`, nil, 400, bad},
		{"patch unknown field", "PATCH", "/v1/products/1", `{"nam": "x"}`, nil, 400, bad},
		{"patch wrong type", "PATCH", "/v1/products/1", `{"price_cents": "12"}`, nil, 400, bad},
		{"patch fractional price", "PATCH", "/v1/products/1", `{"price_cents": 1.5}`, nil, 400, bad},
		{"patch trailing object", "PATCH", "/v1/products/1", `{"name": "x"} {}`, nil, 400, bad},
		{"patch trailing garbage", "PATCH", "/v1/products/1", `{"name": "x"}x`, nil, 400, bad},
		{"patch empty body", "PATCH", "/v1/products/1", ``, nil, 400, bad},
		{"patch too large", "PATCH", "/v1/products/1", big, nil, 413, tooLarge},
		{"patch text/plain", "PATCH", "/v1/products/1", `{"name": "x"}`, header{"Content-Type", "text/plain"}, 400, bad},
		{"patch form", "PATCH", "/v1/products/1", `name=x`, header{"Content-Type", "application/x-www-form-urlencoded"}, 400, bad},
		{"patch nothing to update", "PATCH", "/v1/products/1", `{}`, nil, 422, invalid},
		{"patch only nulls", "PATCH", "/v1/products/1", `{"name": null, "attributes": null}`, nil, 422, invalid},
		{"patch negative price", "PATCH", "/v1/products/1", `{"price_cents": -1}`, nil, 422, invalid},
		{"patch huge price", "PATCH", "/v1/products/1", `{"price_cents": 100000001}`, nil, 422, invalid},
		{"patch blank name", "PATCH", "/v1/products/1", `{"name": "  "}`, nil, 422, invalid},
		{"patch long name", "PATCH", "/v1/products/1", `{"name": "` + strings.Repeat("é", 201) + `"}`, nil, 422, invalid},
		{"patch attributes array", "PATCH", "/v1/products/1", `{"attributes": [1, 2]}`, nil, 422, invalid},
		{"patch attributes string", "PATCH", "/v1/products/1", `{"attributes": "color"}`, nil, 422, invalid},
		{"patch attributes number", "PATCH", "/v1/products/1", `{"attributes": 3}`, nil, 422, invalid},
		{"patch unknown product", "PATCH", "/v1/products/999999", `{"name": "x"}`, nil, 404, notFound},
		{"patch non-numeric id", "PATCH", "/v1/products/abc", `{"name": "x"}`, nil, 400, bad},

		// Bodies: POST /v1/reservations.
		{"reserve malformed JSON", "POST", "/v1/reservations", `{"product_id": 21,`, nil, 400, bad},
		{"reserve unknown field", "POST", "/v1/reservations", `{"product_id": 21, "quantity": 1, "idempotency_key": "u", "qty": 1}`, nil, 400, bad},
		{"reserve wrong type", "POST", "/v1/reservations", `{"product_id": "21", "quantity": 1, "idempotency_key": "u"}`, nil, 400, bad},
		{"reserve quantity string", "POST", "/v1/reservations", `{"product_id": 21, "quantity": "1", "idempotency_key": "u"}`, nil, 400, bad},
		{"reserve trailing data", "POST", "/v1/reservations", reserveBody(21, 1, "u") + `]`, nil, 400, bad},
		{"reserve two objects", "POST", "/v1/reservations", reserveBody(21, 1, "u") + reserveBody(21, 1, "v"), nil, 400, bad},
		{"reserve empty body", "POST", "/v1/reservations", ``, nil, 400, bad},
		{"reserve null", "POST", "/v1/reservations", `null`, nil, 422, invalid},
		{"reserve too large", "POST", "/v1/reservations", bigReserve, nil, 413, tooLarge},
		{"reserve text/plain", "POST", "/v1/reservations", reserveBody(21, 1, "u"), header{"Content-Type", "text/plain"}, 400, bad},
		{"reserve quantity 0", "POST", "/v1/reservations", reserveBody(21, 0, "u"), nil, 422, invalid},
		{"reserve quantity -1", "POST", "/v1/reservations", reserveBody(21, -1, "u"), nil, 422, invalid},
		{"reserve quantity 1001", "POST", "/v1/reservations", reserveBody(21, 1001, "u"), nil, 422, invalid},
		{"reserve product 0", "POST", "/v1/reservations", reserveBody(0, 1, "u"), nil, 422, invalid},
		{"reserve product negative", "POST", "/v1/reservations", reserveBody(-4, 1, "u"), nil, 422, invalid},
		{"reserve product missing", "POST", "/v1/reservations", `{"quantity": 1, "idempotency_key": "u"}`, nil, 422, invalid},
		{"reserve key missing", "POST", "/v1/reservations", `{"product_id": 21, "quantity": 1}`, nil, 422, invalid},
		{"reserve key empty header empty", "POST", "/v1/reservations", reserveBody(21, 1, ""), header{"Idempotency-Key", ""}, 422, invalid},
		{"reserve key too long", "POST", "/v1/reservations", reserveBody(21, 1, strings.Repeat("k", MaxIdempotencyKeyLen+1)), nil, 422, invalid},
		{"reserve header key too long", "POST", "/v1/reservations", `{"product_id": 21, "quantity": 1}`, header{"Idempotency-Key", strings.Repeat("k", MaxIdempotencyKeyLen+1)}, 422, invalid},
		{"reserve key not UTF-8", "POST", "/v1/reservations", `{"product_id": 21, "quantity": 1}`, header{"Idempotency-Key", "k\xff"}, 422, invalid},
		{"reserve unknown product", "POST", "/v1/reservations", reserveBody(999999, 1, "unknown-product"), nil, 404, notFound},

		// Ids in paths and queries.
		{"product non-numeric", "GET", "/v1/products/abc", "", nil, 400, bad},
		{"product zero", "GET", "/v1/products/0", "", nil, 400, bad},
		{"product negative", "GET", "/v1/products/-3", "", nil, 400, bad},
		{"product overflow", "GET", "/v1/products/99999999999999999999", "", nil, 400, bad},
		{"product fractional", "GET", "/v1/products/1.5", "", nil, 400, bad},
		{"product id with a sign", "GET", "/v1/products/+1", "", nil, 400, bad},
		{"product id with a leading zero", "GET", "/v1/products/01", "", nil, 400, bad},
		{"reservation id with a sign", "GET", "/v1/reservations/+1", "", nil, 400, bad},
		{"product unknown", "GET", "/v1/products/999999", "", nil, 404, notFound},
		{"ids missing", "GET", "/v1/products", "", nil, 400, bad},
		{"ids empty", "GET", "/v1/products?ids=", "", nil, 400, bad},
		{"ids 101", "GET", "/v1/products?ids=" + ids101, "", nil, 400, bad},
		{"ids non-numeric", "GET", "/v1/products?ids=1,two,3", "", nil, 400, bad},
		{"ids zero", "GET", "/v1/products?ids=1,0", "", nil, 400, bad},
		{"ids negative", "GET", "/v1/products?ids=-1", "", nil, 400, bad},
		{"ids empty element", "GET", "/v1/products?ids=1,,2", "", nil, 400, bad},
		{"ids trailing comma", "GET", "/v1/products?ids=1,", "", nil, 400, bad},
		{"inventory non-numeric", "GET", "/v1/products/x/inventory", "", nil, 400, bad},
		{"inventory unknown", "GET", "/v1/products/999999/inventory", "", nil, 404, notFound},
		{"stats non-numeric", "GET", "/v1/categories/x/stats", "", nil, 400, bad},
		{"stats zero", "GET", "/v1/categories/0/stats", "", nil, 400, bad},
		{"stats unknown", "GET", "/v1/categories/999999/stats", "", nil, 404, notFound},
		{"top unknown", "GET", "/v1/categories/999999/top", "", nil, 404, notFound},
		{"top non-numeric", "GET", "/v1/categories/x/top", "", nil, 400, bad},
		{"cancel non-numeric", "POST", "/v1/reservations/x/cancel", "", nil, 400, bad},
		{"cancel negative", "POST", "/v1/reservations/-1/cancel", "", nil, 400, bad},
		{"cancel unknown", "POST", "/v1/reservations/999999/cancel", "", nil, 404, notFound},

		// limit and q.
		{"top limit 0", "GET", "/v1/categories/1/top?limit=0", "", nil, 422, invalid},
		{"top limit 51", "GET", "/v1/categories/1/top?limit=51", "", nil, 422, invalid},
		{"top limit non-numeric", "GET", "/v1/categories/1/top?limit=ten", "", nil, 422, invalid},
		{"top limit negative", "GET", "/v1/categories/1/top?limit=-1", "", nil, 422, invalid},
		{"search limit 0", "GET", "/v1/search?q=steel&limit=0", "", nil, 422, invalid},
		{"search limit 51", "GET", "/v1/search?q=steel&limit=51", "", nil, 422, invalid},
		{"search limit non-numeric", "GET", "/v1/search?q=steel&limit=x", "", nil, 422, invalid},
		{"search q missing", "GET", "/v1/search", "", nil, 400, bad},
		{"search q empty", "GET", "/v1/search?q=", "", nil, 400, bad},
		{"search q blank", "GET", "/v1/search?q=%20%09", "", nil, 400, bad},
		{"search q too long", "GET", "/v1/search?q=" + strings.Repeat("a", MaxQueryRunes+1), "", nil, 422, invalid},
		{"search q too many runes", "GET", "/v1/search?q=" + strings.Repeat("%C3%A9", MaxQueryRunes+1), "", nil, 422, invalid},
		{"search q invalid UTF-8", "GET", "/v1/search?q=%ff", "", nil, 422, invalid},
		{"search q invalid UTF-8 inside", "GET", "/v1/search?q=steel%ffchair", "", nil, 422, invalid},

		// Routing.
		{"unknown route", "GET", "/nope", "", nil, 404, notFound},
		{"unknown route under v1", "GET", "/v1/nope", "", nil, 404, notFound},
		{"unknown sub-resource", "GET", "/v1/products/1/reviews", "", nil, 404, notFound},
		{"wrong method on product", "DELETE", "/v1/products/1", "", nil, 405, notMethod},
		{"wrong method on products", "POST", "/v1/products", `{}`, nil, 405, notMethod},
		{"wrong method on reservations", "GET", "/v1/reservations", "", nil, 405, notMethod},
		{"wrong method on cancel", "GET", "/v1/reservations/1/cancel", "", nil, 405, notMethod},
		{"wrong method on healthz", "PUT", "/healthz", "", nil, 405, notMethod},
		{"wrong method on metrics", "POST", "/metrics", "", nil, 405, notMethod},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := c.header
			if c.method == http.MethodPatch { // a write: authorised, so that the body is what is judged
				hdr = append(slices.Clone(hdr), "Authorization", "Bearer "+testAdminToken)
			}
			rec := a.do(c.method, c.path, c.body, hdr...)
			if rec.Code >= 500 {
				t.Fatalf("%s %s: %d for bad input: %s", c.method, c.path, rec.Code, rec.Body.String())
			}
			checkProblem(t, rec, c.status, c.typ)
		})
	}

	// None of the bad reservations reserved anything.
	if n := a.queryInt("SELECT count(*) FROM reservations"); n != 0 {
		t.Errorf("%d reservations after only bad requests", n)
	}
	if _, reserved, _ := a.inventoryRow(21); reserved != 0 {
		t.Errorf("reserved = %d after only bad requests", reserved)
	}
	// 100 ids (all the same) are fine.
	decodeJSON(t, a.do(http.MethodGet, "/v1/products?ids="+ids100, ""), http.StatusOK, nil)
	// Bad requests do not change the product.
	var p Product
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/1", ""), http.StatusOK, &p)
	if p.Name == "x" || p.PriceCents < 0 {
		t.Errorf("a bad PATCH changed product 1: %+v", p)
	}
}

// TestHTTPMaxBytesWithoutContentType checks the body limit also applies
// when the client sends no Content-Type (accepted as JSON).
func TestHTTPMaxBytesWithoutContentType(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	req := httptest.NewRequest(http.MethodPost, "/v1/reservations",
		strings.NewReader(`{"idempotency_key": "`+strings.Repeat("k", 2*MaxBodyBytes)+`"}`))
	checkProblem(t, a.spec.serve(t, a.handler, req), http.StatusRequestEntityTooLarge, "/problems/too-large")

	a.setInventory(1, 10, 0)
	req = httptest.NewRequest(http.MethodPost, "/v1/reservations", strings.NewReader(reserveBody(1, 1, "no-ct")))
	rec := a.spec.serve(t, a.handler, req)
	if rec.Code != http.StatusCreated {
		t.Errorf("reservation without Content-Type = %d %s, want it accepted", rec.Code, rec.Body.String())
	}
}

func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	rec := a.do(http.MethodDelete, "/v1/products/1", "")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD, PATCH" {
		t.Fatalf("DELETE /v1/products/1 = %d with Allow %q, want 405 with \"GET, HEAD, PATCH\"", rec.Code, rec.Header().Get("Allow"))
	}
}
