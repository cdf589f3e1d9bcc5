package catalog

// The store's SQL, one constant per statement, so the cost test can EXPLAIN
// exactly what the store runs.

// productColumns are the columns scanProduct reads, in order.
const productColumns = `p.id, p.category_id, p.sku, p.name, p.description, p.price_cents, p.attributes, p.created_at, p.updated_at`

const sqlProduct = `SELECT ` + productColumns + ` FROM products p WHERE p.id = $1`

const sqlProducts = `SELECT ` + productColumns + ` FROM products p WHERE p.id = ANY($1)`

// sqlCategoryStats reads every review of the category's products. The
// newest-review time keeps it honest: it needs reviews.created_at, which no
// index carries, so Postgres scans the reviews table (in parallel) whatever
// the size of the category. The categories row makes an unknown category
// return no row at all (ErrNotFound) rather than a row of zeros.
const sqlCategoryStats = `
WITH prices AS (
    SELECT count(*) AS products,
           coalesce(min(price_cents), 0) AS price_min,
           coalesce(max(price_cents), 0) AS price_max,
           coalesce(avg(price_cents), 0)::float8 AS price_avg,
           coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents), 0) AS price_median
    FROM products
    WHERE category_id = $1
), ratings AS (
    SELECT count(*) AS reviews,
           count(DISTINCT r.product_id) AS reviewed_products,
           coalesce(avg(r.rating), 0)::float8 AS rating_avg,
           count(*) FILTER (WHERE r.rating = 1) AS stars1,
           count(*) FILTER (WHERE r.rating = 2) AS stars2,
           count(*) FILTER (WHERE r.rating = 3) AS stars3,
           count(*) FILTER (WHERE r.rating = 4) AS stars4,
           count(*) FILTER (WHERE r.rating = 5) AS stars5,
           max(r.created_at) AS last_review_at
    FROM products p
    JOIN reviews r ON r.product_id = p.id
    WHERE p.category_id = $1
)
SELECT c.id, prices.products, prices.price_min, prices.price_max, prices.price_avg, prices.price_median,
       ratings.reviews, ratings.reviewed_products, ratings.rating_avg,
       ratings.stars1, ratings.stars2, ratings.stars3, ratings.stars4, ratings.stars5,
       ratings.last_review_at
FROM categories c, prices, ratings
WHERE c.id = $1`

// PriorWeight is the number of virtual reviews at the category's mean rating
// that TopProducts adds to every product: a product needs several reviews
// before its own ratings outweigh the category's, so one five-star review
// does not top the list.
const PriorWeight = 10

// sqlTopProducts ranks a category's products by Bayesian average: (sum of
// ratings + PriorWeight × category mean) / (reviews + PriorWeight). Products
// without reviews score the category mean. Ties go to the lower id. Ranking
// happens on ids alone; only the winners are joined to their product rows.
const sqlTopProducts = `
WITH per_product AS (
    SELECT p.id, count(r.rating) AS reviews, coalesce(sum(r.rating), 0) AS rating_sum
    FROM products p
    LEFT JOIN reviews r ON r.product_id = p.id
    WHERE p.category_id = $1
    GROUP BY p.id
), prior AS (
    SELECT coalesce(sum(rating_sum)::float8 / nullif(sum(reviews), 0), 0) AS mean
    FROM per_product
), ranked AS (
    SELECT pp.id, pp.reviews, pp.rating_sum,
           (prior.mean * $3::float8 + pp.rating_sum) / ($3::float8 + pp.reviews) AS score
    FROM per_product pp CROSS JOIN prior
    ORDER BY score DESC, pp.id
    LIMIT $2
)
SELECT ` + productColumns + `,
       ranked.reviews,
       coalesce(ranked.rating_sum::float8 / nullif(ranked.reviews, 0), 0) AS rating_avg,
       ranked.score
FROM ranked
JOIN products p ON p.id = ranked.id
ORDER BY ranked.score DESC, p.id`

const sqlCategoryExists = `SELECT EXISTS (SELECT 1 FROM categories WHERE id = $1)`

// sqlSearch ranks matches with ts_rank_cd, whose default weights make a
// match in the name (weight A, 1.0) count more than one in the description
// (weight B, 0.4). A query of stop words only matches nothing, and so does
// one that the index cannot serve (querytree 'T': negated terms only, such as
// "the -lamp" once the stop word is dropped), instead of scanning and
// ranking the whole catalog.
const sqlSearch = `
SELECT ` + productColumns + `, ts_rank_cd(p.search, q)::float8 AS rank
FROM products p, websearch_to_tsquery('english', $1) q
WHERE querytree(q) <> 'T' AND p.search @@ q
ORDER BY rank DESC, p.id
LIMIT $2`

const sqlUpdateProduct = `
UPDATE products p SET
    name        = coalesce($2, p.name),
    description = coalesce($3, p.description),
    price_cents = coalesce($4, p.price_cents),
    attributes  = coalesce($5::jsonb, p.attributes),
    updated_at  = now()
WHERE p.id = $1
RETURNING ` + productColumns

// sqlInventory reads a product's inventory with the warehouse's count of
// free units beside it.
const sqlInventory = `
SELECT i.product_id, i.stock, i.reserved, w.available, w.fence_token, greatest(i.updated_at, w.updated_at)
FROM inventory i JOIN warehouse w USING (product_id) WHERE i.product_id = $1`

const sqlReservationByKey = `SELECT ` + reservationColumns + ` FROM reservations WHERE idempotency_key = $1`

// sqlAddReserved counts $2 more units as reserved: an increment, which
// Postgres serialises, so reserved is always the sum of the active holds.
const sqlAddReserved = `UPDATE inventory SET reserved = reserved + $2, updated_at = now() WHERE product_id = $1`

const sqlReservation = `SELECT ` + reservationColumns + ` FROM reservations WHERE id = $1`

// sqlExpiredReservations lists active holds past their expiry, oldest
// first (reservations_expiry_idx).
const sqlExpiredReservations = `SELECT ` + reservationColumns + ` FROM reservations
WHERE status = ` + sqlActive + ` AND expires_at <= now() ORDER BY expires_at LIMIT $1`

// sqlGivesDue lists ended holds whose give is due (reservations_give_due_idx).
const sqlGivesDue = `SELECT ` + reservationColumns + ` FROM reservations
WHERE give_due ORDER BY updated_at LIMIT $1`

// sqlStalePending lists pending reservations older than $2 ms
// (reservations_pending_idx).
const sqlStalePending = `SELECT ` + reservationColumns + ` FROM reservations
WHERE status = ` + sqlPending + ` AND created_at < now() - $2 * interval '1 millisecond' ORDER BY created_at LIMIT $1`

const sqlReturnStock = `UPDATE inventory SET reserved = reserved - $2, updated_at = now() WHERE product_id = $1`
