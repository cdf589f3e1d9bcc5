package catalog

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

// HandlerConfig wires the HTTP API.
type HandlerConfig struct {
	Service *Service
	Faults  *Injector
	// AdminToken enables /admin when set; requests must carry it as a
	// Bearer token.
	AdminToken string
	// Registry is served at /metrics and receives the http_* metrics.
	Registry *prometheus.Registry
	// Ready reports whether what the instance cannot serve without answers
	// (Postgres): /readyz fails only when it fails.
	Ready func(ctx context.Context) error
	// Checks are the dependencies /health reports on, by name, including
	// those the API serves through an outage of (the caches' Redis, the lock
	// servers): /health answers 200 with each one's state.
	Checks map[string]func(ctx context.Context) error
	// RequestTimeout bounds the work of each /v1 request on the server;
	// when it runs out the answer is 503 problem+json with Retry-After.
	// Default 10s.
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// TracerProvider, when set, gives every request but probes and scrapes
	// a server span named "METHOD route" (chi's pattern) that continues the
	// caller's W3C traceparent; its trace and span ids go on the request's
	// log lines and, when sampled, on http_request_duration_seconds as an
	// exemplar. Nil traces nothing.
	TracerProvider trace.TracerProvider
}

// errServerDeadline is the cause of a request context that ran out of its
// server-side time (as opposed to a client that went away).
var errServerDeadline = errors.New("catalog: the request ran out of its server-side time")

// deadline gives every request a server-side deadline of d.
func deadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeoutCause(r.Context(), d, errServerDeadline)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

//go:embed openapi.yaml
var openAPI []byte

// NewHandler returns the API's router. This is the whole HTTP surface.
func NewHandler(cfg HandlerConfig) (http.Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handlers{svc: cfg.Service, faults: cfg.Faults, adminToken: cfg.AdminToken, ready: cfg.Ready, checks: cfg.Checks,
		log: slog.New(withRequestID{cfg.Logger.Handler()}), start: settingsOf(cfg.Service, cfg.Faults)}
	m, err := newHTTPMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Use(h.accessLog, m.middleware, h.recoverer, middleware.GetHead) // HEAD on every GET route
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, probNotFound.with("no route "+r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var allow []string // RFC 9110: a 405 says which methods the resource has
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allow = append(allow, m)
				if m == http.MethodGet {
					allow = append(allow, http.MethodHead)
				}
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, probMethod)
	})

	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
	r.Get("/health", h.health)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	r.Get("/openapi.yaml", h.openapi)

	r.Route("/v1", func(r chi.Router) {
		r.Use(deadline(cmp.Or(cfg.RequestTimeout, 10*time.Second)))
		r.Get("/products", h.products)                               // ?ids=1,2,3 (at most 100)
		r.Get("/products/{id}", h.product)                           // cached
		r.With(h.adminOnly).Patch("/products/{id}", h.updateProduct) // a write: the admin token; invalidates
		r.Get("/products/{id}/inventory", h.inventory)
		r.Get("/categories/{id}/stats", h.categoryStats) // cached: the XFetch showcase
		r.Get("/categories/{id}/top", h.topProducts)     // ?limit=10 (at most 50)
		r.Get("/search", h.search)                       // ?q=...&limit=20
		r.Post("/reservations", h.reserve)               // 201 with Location, 200 for a replay
		r.Get("/reservations/{id}", h.reservation)
		r.Post("/reservations/{id}/cancel", h.cancel)
	})

	r.Route("/admin", func(r chi.Router) {
		r.Use(h.adminOnly)
		r.Get("/caches", h.adminCaches)
		r.Put("/caches/{name}", h.adminSetCache)
		r.Get("/faults", h.adminFaults)
		r.Put("/faults", h.adminSetFaults)
		r.Patch("/faults", h.adminPatchFaults)
		r.Post("/reset", h.adminReset)
		r.Get("/reservation-mode", h.adminMode)
		r.Put("/reservation-mode", h.adminSetMode)
		r.Put("/inventory/{id}", h.adminSetStock)
	})
	return traced(r, cfg.TracerProvider), nil
}
