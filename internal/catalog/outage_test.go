package catalog

import (
	"context"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestRedisOutage kills the Redis of the caches and the lock: reads keep
// answering from Postgres with correct values, reservations are refused
// with 503 busy and Retry-After (never 500), and everything works again
// once Redis is back.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	const product = 51
	a := newTestAPI(t, apiOptions{lockWait: time.Second})
	a.setInventory(product, 10, 0)
	ctx := context.Background()

	var held Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "outage-held")), http.StatusCreated, &held)

	// Warm the caches, so the outage hides entries as well as misses.
	for _, path := range []string{"/v1/products/1", "/v1/categories/3/stats", "/v1/products?ids=1,2"} {
		decodeJSON(t, a.do(http.MethodGet, path, ""), http.StatusOK, nil)
	}
	// Change product 1 behind the cache's back: after the outage the API
	// must show the database's value, not the cached one.
	if _, err := a.db.Exec(ctx, "UPDATE products SET name = 'Outage Lamp' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}

	a.redis.Kill()

	for range 3 { // more than once: the breaker opens after a few failures
		var p Product
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/1", ""), http.StatusOK, &p)
		if p.ID != 1 || p.Name != "Outage Lamp" {
			t.Errorf("product 1 during the outage = %d %q, want the database's name", p.ID, p.Name)
		}

		var batch struct {
			Products []Product `json:"products"`
			Missing  []int64   `json:"missing"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/products?ids=1,2,999999", ""), http.StatusOK, &batch)
		var ids []int64
		for _, p := range batch.Products {
			ids = append(ids, p.ID)
		}
		if !slices.Equal(ids, []int64{1, 2}) || !slices.Equal(batch.Missing, []int64{999999}) ||
			batch.Products[0].Name != "Outage Lamp" {
			t.Errorf("batch during the outage = %v missing %v", ids, batch.Missing)
		}

		var st CategoryStats
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/3/stats", ""), http.StatusOK, &st)
		var n, minP, maxP int64
		var avg float64
		if err := a.db.QueryRow(ctx, `SELECT count(*), min(price_cents), max(price_cents), avg(price_cents)::float8
			FROM products WHERE category_id = 3`).Scan(&n, &minP, &maxP, &avg); err != nil {
			t.Fatal(err)
		}
		if st.CategoryID != 3 || int64(st.Products) != n || st.PriceMinCents != minP || st.PriceMaxCents != maxP ||
			math.Abs(st.PriceAvgCents-avg) > 1e-6 {
			t.Errorf("stats during the outage = %+v, want %d products, prices %d..%d avg %v", st, n, minP, maxP, avg)
		}

		var search struct {
			Hits []SearchHit `json:"hits"`
		}
		decodeJSON(t, a.do(http.MethodGet, "/v1/search?q=outage+lamp&limit=5", ""), http.StatusOK, &search)
		if len(search.Hits) == 0 || search.Hits[0].ID != 1 {
			t.Errorf("search for the new name during the outage: %+v", search.Hits)
		}

		var inv Inventory
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
		if inv.Stock != 10 {
			t.Errorf("inventory during the outage = %+v", inv)
		}
	}
	if n := metricValue(t, a.reg, "cachex_gets_total", map[string]string{"result": "bypass"}); n == 0 {
		t.Error("no cachex bypass counted during the outage")
	}
	decodeJSON(t, a.do(http.MethodGet, "/readyz", ""), http.StatusOK, nil)

	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, "outage-1"))
	checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/busy")
	if ra := rec.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q", ra)
	}
	if n := a.reservationsTotal("lock_timeout"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="lock_timeout"} = %d, want 1`, n)
	}
	// A cancel needs no lock to end the hold: it answers 200, and its give
	// stays due until the lock's Redis is back.
	var cancelled Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(held.ID)+"/cancel", ""), http.StatusOK, &cancelled)
	if cancelled.Status != StatusCancelled {
		t.Errorf("cancel during the outage answered %+v", cancelled)
	}
	if inv := a.inventory(product); inv.Reserved != 0 || inv.Available != 8 {
		t.Errorf("after a refused reservation and a cancel: %+v, want none reserved and the 2 units out of sale", inv)
	}

	a.redis.Restart()

	// The client retries with the same key until it succeeds.
	waitFor(t, time.Minute, "a reservation to succeed after the restart", func() bool {
		rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, "outage-1"))
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("reservation after the restart: %d %s", rec.Code, rec.Body.String())
		}
		return rec.Code == http.StatusCreated
	})
	// The retried cancel gives the units back.
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(held.ID)+"/cancel", ""), http.StatusOK, nil)
	if inv := a.inventory(product); inv.Reserved != 1 || inv.Available != 9 {
		t.Errorf("after the retried reservation and the retried cancel: %+v, want 1 reserved, 9 free", inv)
	}
	// The caches use Redis again: a read is served from it once the
	// breaker lets it through.
	hits := func() float64 {
		return metricValue(t, a.reg, "cachex_gets_total", map[string]string{"cache": "product", "result": "hit"})
	}
	before := hits()
	waitFor(t, time.Minute, "a product cache hit after the restart", func() bool {
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/2", ""), http.StatusOK, nil)
		return hits() > before
	})
}
