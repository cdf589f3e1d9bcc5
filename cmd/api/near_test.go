package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// TestNearCacheEndToEnd: with NEAR_CACHE=true the API serves repeated
// product reads from process memory (its near metrics count them), and a
// read right after a price change through this instance shows the change.
func TestNearCacheEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api")
	}
	dbURL := testenv.PostgresURL(t)
	node := testenv.Redis(t)
	_, _, stderr, base := startAPI(t, dbURL, node.URL(), "NEAR_CACHE=true")
	waitFor(t, "/readyz", time.Minute, func() bool { return get(base+"/readyz") == http.StatusOK })
	for range 20 {
		if code := get(base + "/v1/products/7"); code != http.StatusOK {
			t.Fatalf("product: %d\n%s", code, stderr.String())
		}
	}
	waitFor(t, "near-cache hits in /metrics", time.Minute, func() bool {
		return get(base+"/v1/products/7") == http.StatusOK && scrape(t, base, `cachex_near_hits_total{client="near"}`) > 0
	})
	for price := int64(1001); price < 1006; price++ {
		send(t, http.MethodPatch, base+"/v1/products/7", fmt.Sprintf(`{"price_cents": %d}`, price), "t0k", http.StatusOK)
		if got := productPrice(t, base, 7); got != price {
			t.Fatalf("read after the update: price %d, want %d", got, price)
		}
	}
}

// scrape returns the value of series (name and labels as exposed) in the
// API's /metrics, 0 when absent.
func scrape(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return 0
}

func productPrice(t *testing.T, base string, id int) int64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/v1/products/%d", base, id))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		PriceCents int64 `json:"price_cents"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("product %d: %d %v", id, resp.StatusCode, err)
	}
	return p.PriceCents
}
