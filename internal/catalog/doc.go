// Package catalog is the product catalog behind the stampede demo: a
// Postgres store (products, categories with expensive statistics, search,
// inventory and reservations), a Service that reads through cachex caches and
// reserves stock under lockx locks with fenced writes, and the HTTP API.
//
// routes.go maps the whole HTTP surface; docs/api.md describes it, with the
// errors (RFC 9457 problem+json), the limits and the admin API's failure
// injections (Faults).
//
// Reads: Service.Product, Products (one cache round trip for a batch),
// CategoryStats (the aggregate whose stampede XFetch prevents), TopProducts
// and Search go through four caches named product, category_stats,
// top_products and search. UpdateProduct invalidates what it changes.
//
// Writes: Service.Reserve takes the product's lock, then in one transaction
// checks the idempotency key, claims the inventory row with the lock's
// fencing token (a holder whose lock expired is refused), checks the stock,
// inserts the reservation and raises the reserved count.
package catalog
