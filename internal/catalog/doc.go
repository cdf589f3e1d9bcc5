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
// Writes: Service.Reserve takes units from the Warehouse, a second store
// that can only be read and set to an absolute value, and records the
// reservation in one catalog transaction. The read-modify-write is guarded
// as the instance's Mode says: ModeUnsafe (nothing: units are oversold),
// ModeLock (the product's lock: oversold when a holder stops past the lock's
// TTL), ModeFenced (the lock, and the warehouse refuses an older fencing
// token: never oversold). A reservation, a cancel and an expiry are sagas
// across the two stores; holds.go holds the whole state machine of a hold
// (its states, every move with its SQL guard, and the statements the Store
// runs), and flaws.go the checker-only switches and test hooks, kept out of
// the saga's flow.
package catalog
