package seed

import (
	"errors"
	"fmt"
	"math"
)

// DefaultScale is the scale of the reference catalog: 40 categories, 25,000
// products and 400,000 reviews.
const DefaultScale = 1.0

// MaxScale is the largest scale Config.Validate accepts (500,000 products,
// 8,000,000 reviews).
const MaxScale = 20.0

// Row counts at scale 1.
const (
	baseCategories = 40
	baseProducts   = 25_000
	baseReviews    = 400_000
)

// ErrInvalidScale is returned (wrapped) when Config.Scale is not in
// (0, MaxScale].
var ErrInvalidScale = errors.New("seed: invalid scale")

// Config chooses how big a catalog to generate. The data are a pure function
// of Scale: equal scales give byte-identical tables.
type Config struct {
	// Scale multiplies the number of products and reviews of the reference
	// catalog (DefaultScale). It must be in (0, MaxScale]. There is no
	// implicit default: the zero Config is invalid.
	Scale float64
}

// Counts is the number of rows of each kind a seed writes. Every product
// also gets exactly one inventory row.
type Counts struct {
	Categories int
	Products   int
	Reviews    int
}

// Validate reports whether c can be seeded. The error wraps ErrInvalidScale.
func (c Config) Validate() error {
	// The negated comparison also rejects NaN.
	if !(c.Scale > 0 && c.Scale <= MaxScale) {
		return fmt.Errorf("%w: %v (want 0 < scale <= %v)", ErrInvalidScale, c.Scale, MaxScale)
	}
	return nil
}

// Counts returns the row counts for c: products = round(25,000 × Scale)
// (at least 1), reviews = round(400,000 × Scale), categories = min(40,
// products). It returns an error wrapping ErrInvalidScale when c is invalid.
func (c Config) Counts() (Counts, error) {
	if err := c.Validate(); err != nil {
		return Counts{}, err
	}
	products := max(1, int(math.Round(baseProducts*c.Scale)))
	return Counts{
		Categories: min(baseCategories, products),
		Products:   products,
		Reviews:    int(math.Round(baseReviews * c.Scale)),
	}, nil
}
