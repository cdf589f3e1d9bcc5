package catalog

import (
	"crypto/subtle"
	"math"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/stampede-lab/stampede/internal/cachex"
)

// adminOnly lets a request through only with the admin token (compared in
// constant time; the scheme "Bearer" in any case, as RFC 9110 says); without
// a configured token the admin API, and PATCH of products, do not exist.
func (h *handlers) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.adminToken == "" {
			writeProblem(w, probAdminOff)
			return
		}
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(h.adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="admin"`)
			writeProblem(w, probUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CacheSettings are a cache's run-time settings in the admin API.
type CacheSettings struct {
	Strategy cachex.Strategy `json:"strategy"`
	Beta     *float64        `json:"beta,omitempty"`
}

func (h *handlers) adminCaches(w http.ResponseWriter, r *http.Request) {
	out := map[string]CacheSettings{}
	for name, c := range h.svc.Caches() {
		beta := c.Beta()
		out[name] = CacheSettings{Strategy: c.Strategy(), Beta: &beta}
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handlers) adminSetCache(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	c, ok := h.svc.Caches()[name]
	if !ok {
		writeProblem(w, probNotFound.with("no cache "+truncate(name)+": product, category_stats, top_products or search"))
		return
	}
	var s CacheSettings
	if p, ok := decodeBody(w, r, &s); !ok {
		writeProblem(w, p)
		return
	}
	if s.Strategy != "" {
		if _, err := cachex.ParseStrategy(string(s.Strategy)); err != nil {
			writeProblem(w, probInvalid.with(publicDetail(err)))
			return
		}
	}
	if s.Beta != nil && (*s.Beta <= 0 || *s.Beta > 100 || math.IsNaN(*s.Beta)) {
		writeProblem(w, probInvalid.with("beta must be above 0 and at most 100 (strategy ttl turns early refresh off)"))
		return
	}
	if s.Strategy != "" {
		_ = c.SetStrategy(s.Strategy) // validated above
	}
	if s.Beta != nil {
		_ = c.SetBeta(*s.Beta)
	}
	beta := c.Beta()
	writeJSON(w, http.StatusOK, CacheSettings{Strategy: c.Strategy(), Beta: &beta})
}

func (h *handlers) adminFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.faults.Get())
}

func (h *handlers) adminSetFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	if p, ok := decodeBody(w, r, &f); !ok {
		writeProblem(w, p)
		return
	}
	if err := h.faults.Set(f); err != nil {
		writeProblem(w, probInvalid.with(publicDetail(err)))
		return
	}
	writeJSON(w, http.StatusOK, h.faults.Get())
}

func (h *handlers) adminPatchFaults(w http.ResponseWriter, r *http.Request) {
	var p FaultsPatch
	if prob, ok := decodeBody(w, r, &p); !ok {
		writeProblem(w, prob)
		return
	}
	f, err := h.faults.Patch(p)
	if err != nil {
		writeProblem(w, probInvalid.with(publicDetail(err)))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// adminReset sets the fault knobs to 0 and the caches' strategies and betas
// and the reservation mode back to what the instance started with, and
// answers the settings now. It takes no body (an empty one, or {}).
func (h *handlers) adminReset(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		var empty struct{}
		if p, ok := decodeBody(w, r, &empty); !ok {
			writeProblem(w, p)
			return
		}
	}
	if err := h.reset(h.start); err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "settings reset", "mode", h.start.Mode)
	writeJSON(w, http.StatusOK, settingsOf(h.svc, h.faults))
}

// ModeSetting is the reservation mode in the admin API.
type ModeSetting struct {
	Mode Mode `json:"mode"`
}

func (h *handlers) adminMode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ModeSetting{h.svc.Mode()})
}

func (h *handlers) adminSetMode(w http.ResponseWriter, r *http.Request) {
	var m ModeSetting
	if p, ok := decodeBody(w, r, &m); !ok {
		writeProblem(w, p)
		return
	}
	if err := h.svc.SetMode(m.Mode); err != nil {
		writeProblem(w, probInvalid.with(publicDetail(err)))
		return
	}
	h.log.InfoContext(r.Context(), "reservation mode changed", "mode", m.Mode)
	writeJSON(w, http.StatusOK, ModeSetting{h.svc.Mode()})
}

// StockSetting is a product's stock in the admin API.
type StockSetting struct {
	Stock *int `json:"stock"`
}

func (h *handlers) adminSetStock(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	var s StockSetting
	if p, ok := decodeBody(w, r, &s); !ok {
		writeProblem(w, p)
		return
	}
	if s.Stock == nil {
		writeProblem(w, probInvalid.with("stock is required"))
		return
	}
	inv, err := h.svc.SetStock(r.Context(), id, *s.Stock)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}
