package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"testing"
)

func mustCounts(t testing.TB, scale float64) Counts {
	t.Helper()
	c, err := Config{Scale: scale}.Counts()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigValidate(t *testing.T) {
	for _, s := range []float64{0, -1, MaxScale * 1.0001, math.NaN(), math.Inf(1)} {
		if err := (Config{Scale: s}).Validate(); !errors.Is(err, ErrInvalidScale) {
			t.Errorf("Validate(Scale %v) = %v, want ErrInvalidScale", s, err)
		}
		if _, err := (Config{Scale: s}).Counts(); !errors.Is(err, ErrInvalidScale) {
			t.Errorf("Counts(Scale %v) error = %v, want ErrInvalidScale", s, err)
		}
	}
	for _, s := range []float64{1e-9, 0.02, DefaultScale, MaxScale} {
		if err := (Config{Scale: s}).Validate(); err != nil {
			t.Errorf("Validate(Scale %v) = %v", s, err)
		}
	}
}

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		want  Counts
	}{
		{1, Counts{40, 25_000, 400_000}},
		{0.02, Counts{40, 500, 8_000}},
		{20, Counts{40, 500_000, 8_000_000}},
		{0.0004, Counts{10, 10, 160}},
		{1e-9, Counts{1, 1, 0}},
	} {
		if got := mustCounts(t, tc.scale); got != tc.want {
			t.Errorf("scale %v: %+v, want %+v", tc.scale, got, tc.want)
		}
	}
}

// TestGenerateDeterministic generates the first rows of every table twice,
// with separate generators and in different orders, and compares them.
func TestGenerateDeterministic(t *testing.T) {
	c := mustCounts(t, 0.1)
	g1, g2 := newGenerator(c), newGenerator(c)
	plan1, plan2 := g1.reviewPlan(), g2.reviewPlan()
	if !slices.Equal(plan1, plan2) {
		t.Fatal("review plans differ")
	}
	const n = 500
	for i := int64(n); i >= 1; i-- { // g2 runs backwards: rows must not depend on order
		j := n + 1 - i
		if a, b := g1.product(j), g2.product(j); !reflect.DeepEqual(a, b) {
			t.Fatalf("product %d differs:\n%+v\n%+v", j, a, b)
		}
		if a, b := g1.inventory(j), g2.inventory(j); a != b {
			t.Fatalf("inventory %d differs:\n%+v\n%+v", j, a, b)
		}
		if a, b := g1.review(j, int64(plan1[j-1])), g2.review(j, int64(plan2[j-1])); a != b {
			t.Fatalf("review %d differs:\n%+v\n%+v", j, a, b)
		}
		if j <= int64(c.Categories) {
			if a, b := g1.category(j), g2.category(j); a != b {
				t.Fatalf("category %d differs", j)
			}
		}
	}
}

// TestGoldenRows pins the generated data across Go releases and machines. If
// you changed the generator or the word lists on purpose, update the digest:
// the catalog (and every seeded database's Checksum) changes with it.
func TestGoldenRows(t *testing.T) {
	const want = "37a4e4415605a70e8061d83aeb8cc45ad038806088d977c5419e0ad88ddfb8d4"
	c := mustCounts(t, 1)
	g := newGenerator(c)
	h := sha256.New()
	for i := int64(1); i <= int64(c.Categories); i++ {
		fmt.Fprintf(h, "%+v\n", g.category(i))
	}
	for i := int64(1); i <= 200; i++ {
		p := g.product(i)
		fmt.Fprintf(h, "%+v %s\n%+v\n", p, p.Attributes, g.inventory(i))
	}
	plan := g.reviewPlan()
	for i := int64(1); i <= 200; i++ {
		fmt.Fprintf(h, "%+v\n", g.review(i, int64(plan[i-1])))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("generated rows digest = %s, want %s", got, want)
	}
}

func TestProductRows(t *testing.T) {
	c := mustCounts(t, 0.2)
	g := newGenerator(c)
	sku := regexp.MustCompile(`^SKU-\d{6}$`)
	perCategory := make([]int, c.Categories+1)
	var prev int64
	for id := int64(1); id <= int64(c.Products); id++ {
		p := g.product(id)
		if !sku.MatchString(p.SKU) {
			t.Fatalf("product %d: sku %q", id, p.SKU)
		}
		if p.PriceCents < minPriceCents || p.PriceCents > maxPriceCents || p.PriceCents%100 != 99 {
			t.Fatalf("product %d: price %d", id, p.PriceCents)
		}
		if p.CategoryID < 1 || p.CategoryID > int64(c.Categories) {
			t.Fatalf("product %d: category %d", id, p.CategoryID)
		}
		perCategory[p.CategoryID]++
		var attrs map[string]any
		if err := json.Unmarshal(p.Attributes, &attrs); err != nil || len(attrs) != 4 {
			t.Fatalf("product %d: attributes %s: %v", id, p.Attributes, err)
		}
		if p.CreatedAt.Unix() < prev || p.UpdatedAt.Before(p.CreatedAt) {
			t.Fatalf("product %d: created %v (previous %d), updated %v", id, p.CreatedAt, prev, p.UpdatedAt)
		}
		prev = p.CreatedAt.Unix()
		if p.CreatedAt.Year() != 2024 {
			t.Fatalf("product %d: created %v, want in 2024", id, p.CreatedAt)
		}
		if inv := g.inventory(id); inv.Stock < 0 || inv.Stock > 500 || inv.Reserved != 0 {
			t.Fatalf("inventory %d: %+v", id, inv)
		}
	}
	if lo, hi := slices.Min(perCategory[1:]), slices.Max(perCategory[1:]); hi < 4*lo {
		t.Errorf("category sizes %d..%d, want skewed", lo, hi)
	}
	t.Logf("example product: %+v %s", g.product(1), g.product(1).Attributes)
}

func TestReviewPlan(t *testing.T) {
	c := mustCounts(t, 1)
	g := newGenerator(c)
	plan := g.reviewPlan()
	if len(plan) != c.Reviews {
		t.Fatalf("plan has %d reviews, want %d", len(plan), c.Reviews)
	}
	perProduct := make([]int, c.Products+1)
	for _, id := range plan {
		if id < 1 || int(id) > c.Products {
			t.Fatalf("review for product %d", id)
		}
		perProduct[id]++
	}
	counts := slices.Clone(perProduct[1:])
	slices.Sort(counts)
	median, top := counts[len(counts)/2], counts[len(counts)-1]
	t.Logf("reviews per product: min %d, median %d, p99 %d, max %d", counts[0], median, counts[len(counts)*99/100], top)
	if top < 50*median {
		t.Errorf("max %d, median %d: want a heavy-tailed distribution", top, median)
	}
	// Popular products are spread over the id range, not ids 1..k.
	if perProduct[1] == top {
		t.Error("product 1 is the most reviewed: popularity is not shuffled")
	}

	var stars [6]int
	for i := int64(1); i <= 20_000; i++ {
		r := g.review(i, int64(plan[i-1]))
		if r.Rating < 1 || r.Rating > 5 || r.Title == "" || r.Body == "" {
			t.Fatalf("review %d: %+v", i, r)
		}
		stars[r.Rating]++
	}
	t.Logf("rating histogram (1..5): %v", stars[1:])
	if high := stars[4] + stars[5]; high < 20_000*6/10 {
		t.Errorf("%d of 20000 ratings are 4 or 5 stars, want most", high)
	}
}

func TestLowerWords(t *testing.T) {
	for in, want := range map[string]string{
		"Pour-Over Dripper": "pour-over dripper",
		"USB Hub":           "USB hub",
		"Chef's Knife":      "chef's knife",
		"18V":               "18V",
		"Coffee & Tea":      "coffee & tea",
	} {
		if got := lowerWords(in); got != want {
			t.Errorf("lowerWords(%q) = %q, want %q", in, got, want)
		}
	}
}
