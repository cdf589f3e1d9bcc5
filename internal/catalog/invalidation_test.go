package catalog

import (
	"context"
	"math"
	"net/http"
	"testing"
)

// TestUpdateInvalidates checks a PATCH is visible at once through every
// cached read it affects: the product, the batch read and the category's
// statistics.
func TestUpdateInvalidates(t *testing.T) {
	t.Parallel()
	const product = 61
	a := newTestAPI(t, apiOptions{})
	ctx := context.Background()
	hits := func() float64 {
		return metricValue(t, a.reg, "cachex_gets_total", map[string]string{"cache": "product", "result": "hit"})
	}

	var before Product
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product), ""), http.StatusOK, &before)
	decodeJSON(t, a.do(http.MethodGet, "/v1/products?ids="+itoa(product)+",62", ""), http.StatusOK, nil)
	h := hits()
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product), ""), http.StatusOK, nil)
	if hits() != h+1 {
		t.Fatalf("the second read of product %d was not a cache hit", product)
	}

	topName := func() string {
		var top struct {
			Products []TopProduct `json:"products"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/"+itoa(before.CategoryID)+"/top?limit=50", ""), http.StatusOK, &top)
		for _, p := range top.Products {
			if p.ID == product {
				return p.Name
			}
		}
		return ""
	}
	if n := topName(); n != before.Name {
		t.Fatalf("top list of category %d has product %d as %q, want %q", before.CategoryID, product, n, before.Name)
	}

	var patched Product
	decodeJSON(t, a.admin(http.MethodPatch, "/v1/products/"+itoa(product), `{"name": "Renamed Kettle"}`), http.StatusOK, &patched)
	if patched.Name != "Renamed Kettle" || patched.PriceCents != before.PriceCents || !patched.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("PATCH answered %+v", patched)
	}

	var after Product
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product), ""), http.StatusOK, &after)
	if after.Name != "Renamed Kettle" {
		t.Errorf("GET after PATCH: name %q, want the new one", after.Name)
	}
	var batch struct {
		Products []Product `json:"products"`
	}
	decodeJSON(t, a.do(http.MethodGet, "/v1/products?ids=62,"+itoa(product), ""), http.StatusOK, &batch)
	if len(batch.Products) != 2 || batch.Products[1].ID != product || batch.Products[1].Name != "Renamed Kettle" {
		t.Errorf("batch GET after PATCH = %+v, want the new name", batch.Products)
	}

	if n := topName(); n != "Renamed Kettle" {
		t.Errorf("top list after PATCH has product %d as %q, want the new name", product, n)
	}

	// Statistics: cache them, change a price to a new maximum, then to a
	// new minimum; each time the next read shows the database's figures.
	cat := before.CategoryID
	stats := func() CategoryStats {
		var st CategoryStats
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/"+itoa(cat)+"/stats", ""), http.StatusOK, &st)
		return st
	}
	check := func(when string) {
		t.Helper()
		var minP, maxP int64
		var avg float64
		if err := a.db.QueryRow(ctx, `SELECT min(price_cents), max(price_cents), avg(price_cents)::float8
			FROM products WHERE category_id = $1`, cat).Scan(&minP, &maxP, &avg); err != nil {
			t.Fatal(err)
		}
		st := stats()
		if st.PriceMinCents != minP || st.PriceMaxCents != maxP || math.Abs(st.PriceAvgCents-avg) > 1e-6 {
			t.Errorf("%s: stats prices %d..%d avg %v, want %d..%d avg %v",
				when, st.PriceMinCents, st.PriceMaxCents, st.PriceAvgCents, minP, maxP, avg)
		}
	}
	first := stats()
	if again := stats(); again.PriceMaxCents != first.PriceMaxCents {
		t.Fatal("stats changed without a write")
	}
	newMax := first.PriceMaxCents + 12345
	decodeJSON(t, a.admin(http.MethodPatch, "/v1/products/"+itoa(product), `{"price_cents": `+itoa(newMax)+`}`), http.StatusOK, nil)
	check("after a new maximum")
	if st := stats(); st.PriceMaxCents != newMax {
		t.Errorf("max = %d, want %d", st.PriceMaxCents, newMax)
	}
	decodeJSON(t, a.admin(http.MethodPatch, "/v1/products/"+itoa(product), `{"price_cents": 0}`), http.StatusOK, nil)
	check("after a new minimum")
	if st := stats(); st.PriceMinCents != 0 {
		t.Errorf("min = %d, want 0", st.PriceMinCents)
	}
}
