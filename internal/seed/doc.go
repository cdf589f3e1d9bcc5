// Package seed fills the catalog tables with a deterministic, realistic-looking
// product catalog, big enough that per-category aggregates over reviews cost
// tens to hundreds of milliseconds.
//
// # What it generates
//
// At DefaultScale (Config.Scale = 1):
//
//   - 40 categories (furniture, lighting, audio, ...), of uneven size: the
//     largest holds about ten times as many products as the smallest;
//   - 25,000 products named adjective + material + noun from the category's
//     word lists ("Rustic Oak Side Table"), with a one-to-three-sentence
//     description, an sku "SKU-000123", a log-normal price between 1.99 and
//     1999.99 ending in .99 and an attributes object
//     {"color", "material", "weight_g", "warranty_years"};
//   - one inventory row per product: stock 0..500 (about 5% out of stock),
//     reserved 0 (the warehouse is stocked with the same units by a trigger);
//   - 400,000 reviews, spread over products by a power law (the most popular
//     product has about a thousand reviews, the median one about seven), with
//     ratings skewed to four and five stars and products of three quality
//     tiers, so average ratings differ.
//
// Scale multiplies products and reviews (see Config.Counts). Timestamps start
// at 2024-01-01T00:00:00Z: products are created over 2024 in id order,
// reviews within a year of their product.
//
// # Determinism
//
// Equal scales give byte-identical rows in every table, including timestamps,
// ids and the jsonb attributes; Checksum proves it on a live database. Each
// row is derived from its table, its id and the counts alone, drawing from its
// own stream of math/rand/v2's PCG (PCG-DXSM, a specified algorithm) with
// fixed seeds. The package uses only the generator's raw 64-bit outputs and
// integer arithmetic (no rand.Rand helpers, no floating point after computing
// the counts), so the data do not depend on the Go release or CPU. They do
// depend on this package's word lists and code: changing either changes the
// catalog, which TestGoldenRows detects.
//
// # Idempotence and concurrency
//
// Run loads everything in one transaction under a Postgres advisory lock
// (LockKey) and records the seed in the seed_info table. A second Run at the
// same scale, from this or any other process, finds that record and returns
// with Result.Skipped set; a Run at another scale fails with ErrScaleMismatch
// and changes nothing.
package seed
