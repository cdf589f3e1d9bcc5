package seed

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// baseUnix is 2024-01-01T00:00:00Z, the origin of every generated timestamp.
const baseUnix = 1_704_067_200

const (
	day  = 24 * 60 * 60
	year = 365 * day
)

// timeAt returns baseUnix + offset seconds, in UTC.
func timeAt(offset int64) time.Time { return time.Unix(baseUnix+offset, 0).UTC() }

// Rows, one struct per table, in COPY column order.

type categoryRow struct {
	ID        int64
	Slug      string
	Name      string
	CreatedAt time.Time
}

type productRow struct {
	ID          int64
	CategoryID  int64
	SKU         string
	Name        string
	Description string
	PriceCents  int64
	Attributes  []byte // JSON object
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// productAttributes is the products.attributes document. encoding/json writes
// struct fields in declaration order, so the bytes are deterministic.
type productAttributes struct {
	Color         string `json:"color"`
	Material      string `json:"material"`
	WeightG       int    `json:"weight_g"`
	WarrantyYears int    `json:"warranty_years"`
}

type inventoryRow struct {
	ProductID int64
	Stock     int32
	Reserved  int32
	UpdatedAt time.Time
}

type reviewRow struct {
	ID        int64
	ProductID int64
	Rating    int16
	Title     string
	Body      string
	CreatedAt time.Time
}

// generator produces the rows of a catalog with the given counts. Every row
// is a pure function of the counts and its id (each row draws from its own
// random stream), so rows can be produced in any order and any number of
// times. A generator is immutable after newGenerator and safe for concurrent
// use.
type generator struct {
	counts Counts
	// catCum[i] is the cumulative weight of categories 1..i+1; products
	// beyond the first Categories ones pick a category with these weights.
	catCum []int
}

func newGenerator(c Counts) *generator {
	g := &generator{counts: c, catCum: make([]int, c.Categories)}
	sum := 0
	for i := range g.catCum {
		// Zipf-like: the first categories hold several times more products
		// than the last, so per-category aggregates differ in cost.
		sum += 1000 / (i + 5)
		g.catCum[i] = sum
	}
	return g
}

func (g *generator) category(id int64) categoryRow {
	def := &categoryDefs[id-1]
	return categoryRow{
		ID:        id,
		Slug:      def.slug,
		Name:      def.name,
		CreatedAt: timeAt((id - 1) * 60),
	}
}

// productCreatedAt returns the creation time of product id, in seconds after
// baseUnix. Products are created in id order over one year starting on day 1.
func (g *generator) productCreatedAt(id int64) int64 {
	n := int64(g.counts.Products)
	slot := max(1, year/n)
	r := newRNG(streamProductTime, uint64(id))
	return day + (id-1)*year/n + int64(r.intn(int(slot)))
}

func (g *generator) productCategory(r *rng, id int64) int64 {
	if id <= int64(g.counts.Categories) {
		return id // every category gets at least one product
	}
	u := r.intn(g.catCum[len(g.catCum)-1])
	for i, c := range g.catCum {
		if u < c {
			return int64(i + 1)
		}
	}
	panic("unreachable")
}

func (g *generator) product(id int64) productRow {
	r := newRNG(streamProduct, uint64(id))
	catID := g.productCategory(r, id)
	def := &categoryDefs[catID-1]
	adj := pick(r, adjectives[:])
	material := pick(r, def.materials)
	noun := pick(r, def.nouns)
	suffix := pick(r, nameSuffixes[:])
	attrs := productAttributes{
		Color:         pick(r, colors[:]),
		Material:      lowerWords(material),
		WeightG:       r.between(50, 2500) * def.priceFactor / 100,
		WarrantyYears: r.between(1, 5),
	}
	price := priceCents(r, def.priceFactor)

	words := strings.NewReplacer(
		"{A}", article(adj),
		"{adj}", lowerWords(adj),
		"{material}", lowerWords(material),
		"{noun}", lowerWords(noun),
		"{color}", attrs.Color,
		"{use}", pick(r, uses[:]),
		"{category}", lowerWords(def.name),
		"{warranty}", strconv.Itoa(attrs.WarrantyYears),
		"{weight}", strconv.Itoa(attrs.WeightG),
	)
	var desc strings.Builder
	words.WriteString(&desc, pick(r, leadSentences[:]))
	extras := r.intn(3) // zero to two more sentences, all different
	first := r.intn(len(extraSentences))
	if extras >= 1 {
		desc.WriteByte(' ')
		words.WriteString(&desc, extraSentences[first])
	}
	if extras == 2 {
		second := (first + 1 + r.intn(len(extraSentences)-1)) % len(extraSentences)
		desc.WriteByte(' ')
		words.WriteString(&desc, extraSentences[second])
	}

	attrJSON, err := json.Marshal(attrs)
	if err != nil {
		panic(fmt.Sprintf("seed: marshal attributes: %v", err)) // strings and ints always marshal
	}
	created := g.productCreatedAt(id)
	return productRow{
		ID:          id,
		CategoryID:  catID,
		SKU:         fmt.Sprintf("SKU-%06d", id),
		Name:        adj + " " + material + " " + noun + suffix,
		Description: desc.String(),
		PriceCents:  price,
		Attributes:  attrJSON,
		CreatedAt:   timeAt(created),
		UpdatedAt:   timeAt(created + int64(r.intn(180*day))),
	}
}

func (g *generator) inventory(productID int64) inventoryRow {
	r := newRNG(streamInventory, uint64(productID))
	stock := 0 // about 5% of products are out of stock
	if !r.percent(5) {
		stock = r.between(1, 500)
	}
	return inventoryRow{
		ProductID: productID,
		Stock:     int32(stock),
		UpdatedAt: timeAt(g.productCreatedAt(productID)),
	}
}

// Product quality tiers and their rating distributions (percent for 1..5
// stars). Overall about three reviews in four have four or five stars, and
// products differ in average rating, so "top rated" rankings are meaningful.
const (
	tierPoor = iota
	tierAverage
	tierGreat
)

var ratingPercents = [3][5]int{
	tierPoor:    {20, 20, 25, 20, 15},
	tierAverage: {4, 6, 15, 40, 35},
	tierGreat:   {2, 3, 7, 28, 60},
}

// productTier returns the quality tier of a product: 15% poor, 55% average,
// 30% great.
func productTier(productID int64) int {
	switch u := newRNG(streamProductTier, uint64(productID)).intn(100); {
	case u < 15:
		return tierPoor
	case u < 70:
		return tierAverage
	default:
		return tierGreat
	}
}

func (g *generator) review(id, productID int64) reviewRow {
	r := newRNG(streamReview, uint64(id))
	rating := 5
	u := r.intn(100)
	for i, p := range ratingPercents[productTier(productID)] {
		if u < p {
			rating = i + 1
			break
		}
		u -= p
	}
	title := pick(r, reviewTitles[rating-1])
	body := pick(r, reviewOpeners[rating-1])
	if r.percent(70) {
		body += " The " + pick(r, reviewAspects[:]) + " is " + pick(r, reviewVerdicts[rating-1]) + "."
	}
	return reviewRow{
		ID:        id,
		ProductID: productID,
		Rating:    int16(rating),
		Title:     title,
		Body:      body,
		CreatedAt: timeAt(g.productCreatedAt(productID) + int64(r.intn(year))),
	}
}

// reviewPlan returns, for each review id i (1-based), the product it belongs
// to at index i-1. Review counts per product follow a shifted power law,
// w(rank) = 1/(rank+50) plus a floor: at scale 1 the most popular product has
// about a thousand reviews, the median one about seven, and ids of popular
// products are scattered over the id range. Reviews are shuffled, so a
// product's reviews are spread over the table as they would be in a live
// system. The plan costs four bytes per review.
func (g *generator) reviewPlan() []int32 {
	p, n := g.counts.Products, g.counts.Reviews
	if n == 0 {
		return nil
	}
	byRank := make([]int32, p)
	for i := range byRank {
		byRank[i] = int32(i + 1)
	}
	shuffle(newRNG(streamPopularity, 0), byRank)

	const k = 1 << 40
	weight := func(rank int) uint64 { return k/uint64(rank+50) + k/uint64(p) }
	var total uint64
	for rank := range p {
		total += weight(rank)
	}
	// share returns floor(n * weight / total) without overflow.
	share := func(rank int) int {
		hi, lo := bits.Mul64(uint64(n), weight(rank))
		q, _ := bits.Div64(hi, lo, total)
		return int(q)
	}
	rest := n
	for rank := range p {
		rest -= share(rank)
	}
	plan := make([]int32, 0, n)
	for rank, id := range byRank {
		c := share(rank)
		if rank < rest { // the rounding remainder goes to the most popular
			c++
		}
		for range c {
			plan = append(plan, id)
		}
	}
	shuffle(newRNG(streamReviewOrder, 0), plan)
	return plan
}

// priceQuantiles approximates the inverse distribution function of a
// log-normal price (median 29.99, sigma 1.1) clipped to [1.99, 1999.99]:
// u is in 1/1024ths of probability, cents the price at that quantile. The
// tail is sampled more finely. Prices are interpolated linearly in between.
var priceQuantiles = [...]struct{ u, cents int }{
	{0, 199}, {16, 281}, {32, 386}, {48, 475}, {64, 555}, {80, 630},
	{96, 704}, {112, 775}, {128, 846}, {144, 917}, {160, 987}, {176, 1058},
	{192, 1130}, {208, 1203}, {224, 1277}, {240, 1352}, {256, 1428}, {272, 1506},
	{288, 1586}, {304, 1668}, {320, 1752}, {336, 1838}, {352, 1927}, {368, 2018},
	{384, 2112}, {400, 2210}, {416, 2310}, {432, 2414}, {448, 2522}, {464, 2635},
	{480, 2751}, {496, 2873}, {512, 2999}, {528, 3131}, {544, 3269}, {560, 3414},
	{576, 3566}, {592, 3725}, {608, 3893}, {624, 4070}, {640, 4258}, {656, 4457},
	{672, 4668}, {688, 4893}, {704, 5134}, {720, 5393}, {736, 5671}, {752, 5971},
	{768, 6298}, {784, 6654}, {800, 7045}, {816, 7477}, {832, 7958}, {848, 8497},
	{864, 9109}, {880, 9811}, {896, 10630}, {912, 11601}, {928, 12783}, {944, 14266},
	{960, 16213}, {976, 18950}, {992, 23273}, {1008, 32058}, {1016, 42845}, {1020, 55944},
	{1022, 71699}, {1023, 90493}, {1024, 199999},
}

const (
	minPriceCents = 199
	maxPriceCents = 199_999
)

// priceCents draws a price, scales it by factor percent and rounds it to end
// in 99 cents, within [minPriceCents, maxPriceCents].
func priceCents(r *rng, factor int) int64 {
	const fine = 1 << 10 // sub-steps per quantile unit
	u := r.intn(1024 * fine)
	i := 0
	for priceQuantiles[i+1].u*fine <= u {
		i++
	}
	a, b := priceQuantiles[i], priceQuantiles[i+1]
	p := a.cents + (b.cents-a.cents)*(u-a.u*fine)/((b.u-a.u)*fine)
	p = min(max(p*factor/100, minPriceCents), maxPriceCents)
	return int64(p/100*100 + 99)
}

// article returns "A" or "An" for a phrase starting with word.
func article(word string) string {
	if word != "" && strings.IndexByte("AEIOUaeiou", word[0]) >= 0 {
		return "An"
	}
	return "A"
}

// lowerWords lower-cases the first letter of each word (split at spaces and
// hyphens) that continues in lower case, so "Pour-Over Dripper" becomes
// "pour-over dripper" while "USB Hub" becomes "USB hub".
func lowerWords(s string) string {
	b := []byte(s)
	for i := range b {
		start := i == 0 || b[i-1] == ' ' || b[i-1] == '-'
		if start && 'A' <= b[i] && b[i] <= 'Z' && i+1 < len(b) && 'a' <= b[i+1] && b[i+1] <= 'z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}
