package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
)

// Config wires a Service. Store, Warehouse, Cache and Locker are required.
type Config struct {
	Store     *Store
	Warehouse *Warehouse
	// Mode guards reservations; "" means ModeFenced. The admin API changes
	// it at run time.
	Mode Mode
	// HoldTTL is how long a reservation holds its units before the sweeper
	// (RunSweeper) gives them back; 0 means DefaultHoldTTL (15m).
	HoldTTL time.Duration
	// Cache is the client of the caches' Redis: one server's, or a Redis
	// Cluster's. Service adds the fault injection hook to it.
	Cache redis.UniversalClient
	// NearCache, when set, is the client of the product and category_stats
	// caches instead of Cache: one with go-redis client-side caching serves
	// their hits from process memory (docs/cachex.md, "Near cache").
	NearCache redis.UniversalClient
	Locker    *lockx.Locker
	// Faults, shared with the admin API; nil means none can be injected.
	Faults *Injector
	// TTLs of the caches; zero takes the default in brackets.
	ProductTTL time.Duration // [1m]
	StatsTTL   time.Duration // [10s] short, so that stampedes are frequent in the demo
	TopTTL     time.Duration // [30s]
	SearchTTL  time.Duration // [30s] searches are not invalidated by updates: this bounds staleness
	// AutoPipeline is cachex.Options.AutoPipeline of every cache: while
	// requests overlap, their commands share round trips
	// (docs/cachex.md#clients).
	AutoPipeline bool
	// ReuseDecoded is cachex.Options.ReuseDecoded of the product and
	// category_stats caches, the hot ones; 0 turns it off. Their values are
	// only read and encoded, never modified.
	ReuseDecoded int
	// CacheTimeout bounds each cache call to Redis [100ms]; the client's
	// read/write timeouts should equal it (see cachex.Options.Timeout).
	CacheTimeout time.Duration
	Registerer   prometheus.Registerer
	// Logger receives the caches' reports of loader panics; nil means
	// slog.Default().
	Logger *slog.Logger
	// TracerProvider, when set, traces the caches (cachex.Options) and
	// reservations (a catalog.reserve span); nil traces nothing
	// (docs/metrics.md#spans).
	TracerProvider trace.TracerProvider
	// PendingAge is how old an intent must be before Reconcile settles it;
	// 0 means DefaultPendingAge.
	PendingAge time.Duration
	// Flaws, for checkers only, put back bugs the saga fixed, to prove
	// that the checkers catch them; never set them otherwise.
	Flaws Flaws
}

// Service is the catalog: reads through the caches, writes that invalidate
// them, and reservations under a per-product lock with fenced writes.
type Service struct {
	store     *Store
	warehouse *Warehouse
	locker    *lockx.Locker
	faults    *Injector
	mode      *modeSwitch
	holdTTL   time.Duration
	expired   prometheus.Counter
	// reconciled counts what Reconcile finished, by action.
	reconciled *prometheus.CounterVec
	pendingAge time.Duration
	flaws      Flaws
	hooks      hooks
	log        *slog.Logger

	product *cachex.Cache[Product]
	stats   *cachex.Cache[CategoryStats]
	top     *cachex.Cache[[]TopProduct]
	search  *cachex.Cache[[]SearchHit]

	reservations *prometheus.CounterVec
	tracer       trace.Tracer // nil when Config.TracerProvider is
	// hot counts each cache's recomputes per key per TTL window
	// (catalog_hottest_key_recomputes).
	hot *hottestKeys
}

// NewService builds the Service and its four caches (product,
// category_stats, top_products, search), registering their metrics.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Warehouse == nil || cfg.Cache == nil || cfg.Locker == nil {
		return nil, errors.New("catalog: NewService needs a Store, a Warehouse, a cache Redis client and a Locker")
	}
	mode, err := ParseMode(cmp.Or(string(cfg.Mode), string(ModeFenced)))
	if err != nil {
		return nil, err
	}
	if cfg.Faults == nil {
		cfg.Faults = &Injector{}
	}
	cfg.Cache.AddHook(cfg.Faults.CacheHook())
	if cfg.NearCache != nil {
		cfg.NearCache.AddHook(cfg.Faults.CacheHook())
	}
	def := func(d, v time.Duration) time.Duration {
		if d == 0 {
			return v
		}
		return d
	}
	s := &Service{store: cfg.Store, warehouse: cfg.Warehouse, locker: cfg.Locker, faults: cfg.Faults, mode: newModeSwitch(mode),
		holdTTL: cmp.Or(cfg.HoldTTL, DefaultHoldTTL), pendingAge: cmp.Or(cfg.PendingAge, DefaultPendingAge), flaws: cfg.Flaws,
		log: cmp.Or(cfg.Logger, slog.Default())}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer("github.com/stampede-lab/stampede/internal/catalog")
	}
	opts := func(name string, ttl time.Duration, reuse int) cachex.Options {
		return cachex.Options{Name: name, TTL: ttl, Timeout: cfg.CacheTimeout, Registerer: cfg.Registerer, NegativeTTL: 5 * time.Second, Logger: cfg.Logger,
			AutoPipeline: cfg.AutoPipeline, ReuseDecoded: reuse, TracerProvider: cfg.TracerProvider}
	}
	ttls := map[string]time.Duration{"product": def(cfg.ProductTTL, time.Minute), "category_stats": def(cfg.StatsTTL, 10*time.Second),
		"top_products": def(cfg.TopTTL, 30*time.Second), "search": def(cfg.SearchTTL, 30*time.Second)}
	s.hot = newHottestKeys(ttls, time.Now)
	hot := cmp.Or[redis.UniversalClient](cfg.NearCache, cfg.Cache)
	if s.product, err = cachex.New(hot, cachex.JSON[Product]{}, opts("product", ttls["product"], cfg.ReuseDecoded)); err != nil {
		return nil, err
	}
	if s.stats, err = cachex.New(hot, cachex.JSON[CategoryStats]{}, opts("category_stats", ttls["category_stats"], cfg.ReuseDecoded)); err != nil {
		return nil, err
	}
	if s.top, err = cachex.New(cfg.Cache, cachex.JSON[[]TopProduct]{}, opts("top_products", ttls["top_products"], 0)); err != nil {
		return nil, err
	}
	if s.search, err = cachex.New(cfg.Cache, cachex.JSON[[]SearchHit]{}, opts("search", ttls["search"], 0)); err != nil {
		return nil, err
	}
	s.reservations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catalog_reservations_total",
		Help: "Reservation requests by result: reserved, insufficient (not enough stock), fenced (the lock was lost: write refused), lock_timeout (the product's lock was busy or its Redis unavailable), duplicate (idempotent replay), cancelled (the caller went away), unknown (the commit's outcome could not be learned: retry with the same key).",
	}, []string{"result"})
	for _, r := range []string{"reserved", "insufficient", "fenced", "lock_timeout", "duplicate", "cancelled", "unknown"} {
		s.reservations.WithLabelValues(r)
	}
	s.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "catalog_reservations_expired_total",
		Help: "Reservations the sweeper ended because their hold expired, their units given back (once each, whichever instance swept).",
	})
	s.reconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catalog_reconciled_total",
		Help: "Saga steps the reconciler finished after a cut, by action: give (the units of an ended hold given back), activate (an intent whose take the warehouse applied made active), abandon (an intent that took nothing removed).",
	}, []string{"action"})
	for _, a := range []string{"give", "activate", "abandon"} {
		s.reconciled.WithLabelValues(a)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.reservations, s.mode.gauge, s.expired, s.reconciled, s.hot} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("catalog: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Close stops the caches' background refreshes.
func (s *Service) Close() {
	for _, c := range []interface{ Close() }{s.product, s.stats, s.top, s.search} {
		c.Close()
	}
}

// notFound maps the store's not-found error to the cache's, so misses of
// unknown ids are cached briefly (NegativeTTL) and still match ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %w", cachex.ErrNotFound, err)
	}
	return err
}

// cacheNotFound turns a cached negative answer back into ErrNotFound.
func cacheNotFound(err error) error {
	if errors.Is(err, cachex.ErrNotFound) && !errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// Product returns one product, through the product cache.
func (s *Service) Product(ctx context.Context, id int64) (Product, error) {
	key := strconv.FormatInt(id, 10)
	p, err := s.product.Get(ctx, key, func(ctx context.Context) (Product, error) {
		s.hot.record("product", key)
		p, err := s.store.Product(ctx, id)
		return p, notFound(err)
	})
	return p, cacheNotFound(err)
}

// Products returns the products with the given ids that exist, in the order
// asked, reading the cache in one round trip and the database once for all
// misses.
func (s *Service) Products(ctx context.Context, ids []int64) ([]Product, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	got, err := s.product.GetMany(ctx, keys, func(ctx context.Context, missing []string) (map[string]Product, error) {
		want := make([]int64, len(missing))
		for i, k := range missing {
			s.hot.record("product", k)
			want[i], _ = strconv.ParseInt(k, 10, 64)
		}
		found, err := s.store.Products(ctx, want)
		if err != nil {
			return nil, err
		}
		out := make(map[string]Product, len(found))
		for id, p := range found {
			out[strconv.FormatInt(id, 10)] = p
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Product, 0, len(got))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if p, ok := got[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// CategoryStats returns a category's statistics (the expensive aggregate),
// through the category_stats cache.
func (s *Service) CategoryStats(ctx context.Context, id int64) (CategoryStats, error) {
	key := strconv.FormatInt(id, 10)
	st, err := s.stats.Get(ctx, key, func(ctx context.Context) (CategoryStats, error) {
		s.hot.record("category_stats", key)
		st, err := s.store.CategoryStats(ctx, id)
		return st, notFound(err)
	})
	return st, cacheNotFound(err)
}

// MaxTop is the longest top list: the cache holds this many per category
// and shorter lists are cut from it.
const MaxTop = 50

// TopProducts returns a category's limit (1..MaxTop) best-rated products,
// through the top_products cache.
func (s *Service) TopProducts(ctx context.Context, id int64, limit int) ([]TopProduct, error) {
	key := strconv.FormatInt(id, 10)
	top, err := s.top.Get(ctx, key, func(ctx context.Context) ([]TopProduct, error) {
		s.hot.record("top_products", key)
		top, err := s.store.TopProducts(ctx, id, MaxTop)
		return top, notFound(err)
	})
	return top[:min(limit, len(top))], cacheNotFound(err)
}

// NormalizeQuery lower-cases a search query and folds its white space, so
// that equivalent queries share a cache entry.
func NormalizeQuery(q string) string { return strings.Join(strings.Fields(strings.ToLower(q)), " ") }

// Search runs a ranked full-text search, cached per normalised query.
func (s *Service) Search(ctx context.Context, q string, limit int) ([]SearchHit, error) {
	q = NormalizeQuery(q)
	key := strconv.Itoa(limit) + ":" + q
	return s.search.Get(ctx, key, func(ctx context.Context) ([]SearchHit, error) {
		s.hot.record("search", key)
		return s.store.Search(ctx, q, limit)
	})
}

// UpdateProduct changes a product and invalidates what it affects: the
// product and its category's statistics and top lists. (Cached searches are
// not keyed by product; they expire within SearchTTL.)
func (s *Service) UpdateProduct(ctx context.Context, id int64, patch ProductPatch) (Product, error) {
	p, err := s.store.UpdateProduct(ctx, id, patch)
	if err != nil {
		return p, err
	}
	cat := strconv.FormatInt(p.CategoryID, 10)
	err = errors.Join(
		s.product.Invalidate(ctx, strconv.FormatInt(id, 10)),
		s.stats.Invalidate(ctx, cat),
		s.top.Invalidate(ctx, cat),
	)
	if err != nil {
		// The write is committed; the caches expire by themselves.
		return p, fmt.Errorf("%w: %w", ErrStaleCache, err)
	}
	return p, nil
}

// ErrStaleCache reports a committed write whose cache invalidation failed:
// reads may be stale until the entries expire.
var ErrStaleCache = errors.New("catalog: cache invalidation failed")

// SetStock sets a product's stock and stocks the warehouse with what is not
// reserved (Store.SetStock), under the product's guard as a reservation
// is: the stocktake that repairs the warehouse's count after writes were
// lost. Run it when the product has no reservation in flight whose lock
// may have been lost (docs/api.md).
func (s *Service) SetStock(ctx context.Context, productID int64, stock int) (Inventory, error) {
	if _, err := s.Product(ctx, productID); err != nil { // no lock for a made-up id
		return Inventory{}, err
	}
	g, err := s.guard(ctx, productID)
	if err != nil {
		return Inventory{}, err
	}
	defer g.release()
	inv, err := s.store.SetStock(g.ctx, productID, stock, g.fence)
	if errors.Is(err, pgfence.ErrStaleToken) || (err != nil && g.lost()) {
		err = fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return inv, err
}

// Inventory returns a product's stock, not cached: it changes with every
// reservation.
func (s *Service) Inventory(ctx context.Context, productID int64) (Inventory, error) {
	return s.store.Inventory(ctx, productID)
}

// Caches returns the service's caches by name, for the admin API.
func (s *Service) Caches() map[string]AdminCache {
	return map[string]AdminCache{
		"product": s.product, "category_stats": s.stats, "top_products": s.top, "search": s.search,
	}
}

// AdminCache is what the admin API may change on a cache at run time.
type AdminCache interface {
	Strategy() cachex.Strategy
	SetStrategy(cachex.Strategy) error
	Beta() float64
	SetBeta(float64) error
}

// Mode returns how reservations are guarded now.
func (s *Service) Mode() Mode { return s.mode.get() }

// SetMode changes how reservations are guarded, from the next one on;
// reservations in flight finish as they began.
func (s *Service) SetMode(m Mode) error {
	if _, err := ParseMode(string(m)); err != nil {
		return err
	}
	s.mode.set(m)
	return nil
}
