package catalog

import (
	"encoding/json"
	"time"
)

// Product is one row of the catalog, as the API returns it.
type Product struct {
	// ID identifies the product.
	ID int64 `json:"id"`
	// CategoryID is the category the product belongs to.
	CategoryID int64 `json:"category_id"`
	// SKU is the stock-keeping unit, unique across the catalog ("SKU-000123").
	SKU string `json:"sku"`
	// Name is the product's display name.
	Name string `json:"name"`
	// Description is free text; it may be empty.
	Description string `json:"description"`
	// PriceCents is the price in cents (never negative).
	PriceCents int64 `json:"price_cents"`
	// Attributes is a JSON object of free-form properties (color, material,
	// weight_g, warranty_years for seeded products), as Postgres stores it.
	Attributes json.RawMessage `json:"attributes"`
	// CreatedAt is when the product was created.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the product was last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// CategoryStats summarises a category: its products' prices and the reviews
// of those products. It is the expensive aggregate of the catalog: computing
// it reads every review of the category (see docs/api.md for its cost).
type CategoryStats struct {
	// CategoryID identifies the category.
	CategoryID int64 `json:"category_id"`
	// Products is the number of products in the category.
	Products int `json:"products"`
	// PriceMinCents is the lowest price in the category, 0 when it is empty.
	PriceMinCents int64 `json:"price_min_cents"`
	// PriceMaxCents is the highest price in the category, 0 when it is empty.
	PriceMaxCents int64 `json:"price_max_cents"`
	// PriceAvgCents is the mean price, 0 when the category is empty.
	PriceAvgCents float64 `json:"price_avg_cents"`
	// PriceMedianCents is the median price (the lower middle one for an even
	// number of products: always an actual price), 0 when the category is
	// empty.
	PriceMedianCents int64 `json:"price_median_cents"`
	// Reviews is the number of reviews of the category's products.
	Reviews int `json:"reviews"`
	// ReviewedProducts is the number of products with at least one review.
	ReviewedProducts int `json:"reviewed_products"`
	// RatingAvg is the mean rating over all those reviews (1..5), 0 when
	// there are none.
	RatingAvg float64 `json:"rating_avg"`
	// Ratings counts the reviews by stars: Ratings[0] is the number of
	// one-star reviews, Ratings[4] of five-star reviews.
	Ratings [5]int `json:"ratings"`
	// LastReviewAt is when the newest review of the category was written,
	// nil when there are no reviews.
	LastReviewAt *time.Time `json:"last_review_at"`
}

// TopProduct is a product ranked within its category by the Bayesian average
// of its ratings (see Store.TopProducts). Its fields are those of Product plus
// the ranking data.
type TopProduct struct {
	Product
	// Reviews is the number of reviews of the product.
	Reviews int `json:"reviews"`
	// RatingAvg is the plain mean of the product's ratings, 0 without reviews.
	RatingAvg float64 `json:"rating_avg"`
	// Score is the Bayesian average the ranking sorts by: the product's
	// ratings plus PriorWeight virtual reviews at the category's mean rating.
	Score float64 `json:"score"`
}

// SearchHit is a product that matches a search, with its relevance.
type SearchHit struct {
	Product
	// Rank is the full-text relevance (Postgres ts_rank_cd); higher is more
	// relevant. A match in the name weighs more than one in the description.
	Rank float64 `json:"rank"`
}

// Inventory is the stock of one product.
type Inventory struct {
	// ProductID identifies the product.
	ProductID int64 `json:"product_id"`
	// Stock is the number of units on hand.
	Stock int `json:"stock"`
	// Reserved is the number of units held by active reservations.
	Reserved int `json:"reserved"`
	// Available is what the warehouse says is free: what a new reservation
	// may take. It is Stock - Reserved unless writes were lost (modes
	// unsafe and lock).
	Available int `json:"available"`
	// Oversold is Reserved - Stock when positive: units promised to buyers
	// that do not exist. Zero in fenced mode, unless a stocktake set the
	// stock below what is reserved.
	Oversold int `json:"oversold"`
	// FenceToken is the highest lock fencing token that has accessed the
	// product in the warehouse; accesses carrying a lower token are refused.
	FenceToken int64 `json:"fence_token"`
	// UpdatedAt is when the row last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// Reservation holds units of a product for a buyer.
type Reservation struct {
	// ID identifies the reservation.
	ID int64 `json:"id"`
	// ProductID is the reserved product.
	ProductID int64 `json:"product_id"`
	// Quantity is the number of units held (at least 1).
	Quantity int `json:"quantity"`
	// Status is StatusActive, StatusCancelled or StatusExpired.
	Status string `json:"status"`
	// FenceToken is the fencing token of the lock under which the
	// warehouse gave the reservation its units.
	FenceToken int64 `json:"fence_token"`
	// IdempotencyKey is the client's key for the request that created it: a
	// retried request with the same key returns this reservation.
	IdempotencyKey string `json:"idempotency_key"`
	// CreatedAt is when the reservation was made.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when it last changed.
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt is when an active reservation stops holding its units (the
	// sweeper then marks it expired and gives them back).
	ExpiresAt time.Time `json:"expires_at"`

	// GiveDue is true for an ended hold whose units the warehouse has yet
	// to take back (docs/api.md#the-saga). Not part of the API's answers.
	GiveDue bool `json:"-"`
}

// ProductPatch is a partial update of a product: nil fields are left as
// they are.
type ProductPatch struct {
	// Name replaces the name; it must not be blank.
	Name *string `json:"name,omitempty"`
	// Description replaces the description; it may be empty.
	Description *string `json:"description,omitempty"`
	// PriceCents replaces the price; it must not be negative.
	PriceCents *int64 `json:"price_cents,omitempty"`
	// Attributes replaces the whole attributes object (no merge); it must be
	// a JSON object.
	Attributes *json.RawMessage `json:"attributes,omitempty"`
}

// IsEmpty reports whether the patch changes nothing.
func (p ProductPatch) IsEmpty() bool {
	return p.Name == nil && p.Description == nil && p.PriceCents == nil && p.Attributes == nil
}
