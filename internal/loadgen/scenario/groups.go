package scenario

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// HotKeys is the stampede load on the category_stats cache: the strategy
// phases and the hot categories (stampede; demo's bursts; capacity's
// category_stats class reads the hot categories).
type HotKeys struct {
	phasesRaw string
	Phases    []Phase
	Keys      int
	CacheTTL  time.Duration
	Warmup    time.Duration
}

// Phase is one strategy setting of the category_stats cache.
type Phase struct {
	Name     string
	Strategy string
	Beta     *float64 // nil: leave the cache's beta as it is
}

// maxHotKeys bounds -hot-keys: the catalog has 40 categories at scale 1.
const maxHotKeys = 10000

func (h *HotKeys) register(fs *flag.FlagSet) {
	fs.StringVar(&h.phasesRaw, "phases", "ttl,xfetch:1",
		"stampede, demo: comma-separated strategy phases of the category_stats cache, each ttl, none, xfetch or xfetch:BETA (xfetch alone means beta 1)")
	fs.IntVar(&h.Keys, "hot-keys", 3,
		"stampede, demo, capacity: number of hot categories (ids 1..N, requested round robin; capacity's category_stats class reads them)")
	fs.DurationVar(&h.CacheTTL, "cache-ttl", 10*time.Second,
		"stampede: the API's category_stats TTL, used to count recomputes per TTL window")
	fs.DurationVar(&h.Warmup, "warmup", 0,
		"stampede: start of each phase excluded from the latency_after_warmup figures (default 0: one -cache-ttl)")
}

func (h *HotKeys) validate() error {
	ps, err := parsePhases(h.phasesRaw)
	if err != nil {
		return err
	}
	h.Phases = ps
	if h.Warmup == 0 {
		h.Warmup = h.CacheTTL
	}
	switch {
	case h.Keys <= 0 || h.Keys > maxHotKeys:
		return fmt.Errorf("-hot-keys must be in [1, %d], got %d", maxHotKeys, h.Keys)
	case h.CacheTTL <= 0:
		return fmt.Errorf("-cache-ttl must be > 0, got %v", h.CacheTTL)
	case h.Warmup < 0:
		return fmt.Errorf("-warmup must be >= 0, got %v", h.Warmup)
	}
	return nil
}

// parsePhases parses "ttl,xfetch:1,xfetch:0.5".
func parsePhases(s string) ([]Phase, error) {
	var out []Phase
	for _, part := range splitList(s) {
		strategy, betaRaw, hasBeta := strings.Cut(part, ":")
		p := Phase{Name: part, Strategy: strategy}
		switch strategy {
		case "ttl", "none":
			if hasBeta {
				return nil, fmt.Errorf("-phases: %q: only xfetch takes a beta", part)
			}
		case "xfetch":
			beta := 1.0
			if hasBeta {
				b, err := strconv.ParseFloat(betaRaw, 64)
				if err != nil || b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
					return nil, fmt.Errorf("-phases: %q: beta must be a number >= 0", part)
				}
				beta = b
			} else {
				p.Name = "xfetch:1"
			}
			p.Beta = &beta
		default:
			return nil, fmt.Errorf("-phases: %q: strategy must be ttl, none or xfetch[:beta]", part)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("-phases is empty")
	}
	return out, nil
}

// Mix is the browsing traffic: Zipf-distributed product reads, batch reads
// and searches (browse; demo; capacity reads each kind on its own).
type Mix struct {
	Products      int
	ZipfS         float64
	BatchPercent  float64
	SearchPercent float64
	BatchSize     int
}

func (m *Mix) register(fs *flag.FlagSet) {
	fs.IntVar(&m.Products, "products", 25000,
		"browse, demo, capacity: product ids 1..N to read (25,000 at seed scale 1)")
	fs.Float64Var(&m.ZipfS, "zipf-s", 1.1,
		"browse, demo, capacity: Zipf exponent (> 1) of product and search popularity; larger is more skewed")
	fs.Float64Var(&m.BatchPercent, "batch-percent", 10,
		"browse, demo: share of requests (0..100) that read -batch-size products in one GET /v1/products?ids=")
	fs.Float64Var(&m.SearchPercent, "search-percent", 10,
		"browse, demo: share of requests (0..100) that search; the rest read one product")
	fs.IntVar(&m.BatchSize, "batch-size", 20,
		"browse, demo, capacity: ids per batch read (1..100)")
}

func (m *Mix) validate() error {
	switch {
	case m.Products < 1:
		return fmt.Errorf("-products must be >= 1, got %d", m.Products)
	case !(m.ZipfS > 1) || math.IsInf(m.ZipfS, 0):
		return fmt.Errorf("-zipf-s must be > 1, got %v", m.ZipfS)
	case !(m.BatchPercent >= 0 && m.SearchPercent >= 0 && m.BatchPercent+m.SearchPercent <= 100):
		return fmt.Errorf("-batch-percent and -search-percent must be >= 0 and add up to at most 100, got %v and %v", m.BatchPercent, m.SearchPercent)
	case m.BatchSize < 1 || m.BatchSize > 100:
		return fmt.Errorf("-batch-size must be in [1, 100], got %d", m.BatchSize)
	}
	return nil
}

// Reservations is the reservation traffic on a few products (reserve,
// lostlock; demo and capacity use -skus).
type Reservations struct {
	skusRaw       string
	SKUs          []int64
	ReplayPercent float64
	PausePercent  int
	PauseMS       int
	MaxBusyRate   float64
}

func (r *Reservations) register(fs *flag.FlagSet) {
	fs.StringVar(&r.skusRaw, "skus", "1,2,3",
		"reserve, lostlock, demo, capacity: comma-separated product ids to reserve (quantity 1..3 each, picked at random; demo and capacity reserve one unit and cancel in turn)")
	fs.Float64Var(&r.ReplayPercent, "replay-percent", 10,
		"reserve, lostlock: share of requests (0..100) that replay the idempotency key of an earlier created reservation and must get it back with 200")
	fs.IntVar(&r.PausePercent, "pause-percent", 0,
		"reserve, lostlock: if > 0, set the API's reservation_pause_percent fault knob for the run (needs -admin-token; all fault knobs are reset to 0 afterwards)")
	fs.IntVar(&r.PauseMS, "pause-ms", 6000,
		"reserve, lostlock: reservation_pause_ms used with -pause-percent (longer than the lock TTL, 5s, makes paused writes lose their lock and be fenced)")
	fs.Float64Var(&r.MaxBusyRate, "max-busy-rate", 0.25,
		"reserve, lostlock: fail the run when the share of reservations answered 503 busy (lock not acquired in time) exceeds this: such a run tested little")
}

func (r *Reservations) validate() error {
	skus, err := parseSKUs(r.skusRaw)
	if err != nil {
		return err
	}
	r.SKUs = skus
	switch {
	case !(r.ReplayPercent >= 0 && r.ReplayPercent <= 100):
		return fmt.Errorf("-replay-percent must be in [0, 100], got %v", r.ReplayPercent)
	case r.PausePercent < 0 || r.PausePercent > 100:
		return fmt.Errorf("-pause-percent must be in [0, 100], got %d", r.PausePercent)
	case r.PauseMS < 0 || r.PauseMS > 60000:
		return fmt.Errorf("-pause-ms must be in [0, 60000], got %d", r.PauseMS)
	case !(r.MaxBusyRate >= 0 && r.MaxBusyRate <= 1):
		return fmt.Errorf("-max-busy-rate must be in [0, 1], got %v", r.MaxBusyRate)
	}
	return nil
}

// parseSKUs parses "1,2,3" into distinct positive product ids, in order.
func parseSKUs(s string) ([]int64, error) {
	var out []int64
	for _, part := range splitList(s) {
		id, err := strconv.ParseInt(part, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("-skus: %q is not a product id", part)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-skus is empty")
	}
	return out, nil
}

// splitList splits a comma-separated flag value into its non-empty,
// trimmed parts.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
