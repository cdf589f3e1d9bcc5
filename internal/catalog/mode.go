package catalog

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Mode is how reservations guard their read-modify-write of the warehouse.
// It is set per instance (Config.Mode, the admin API) so the lost-lock
// experiment can compare the three under the same load.
type Mode string

const (
	// ModeUnsafe takes no lock: concurrent reservations of a product read
	// the same count and overwrite each other's writes, and units are
	// oversold.
	ModeUnsafe Mode = "unsafe"
	// ModeLock takes the product's lock, but the warehouse does not check
	// tokens: safe while every holder keeps its lock, oversold when one
	// pauses past the lock's TTL and writes after the next holder.
	ModeLock Mode = "lock"
	// ModeFenced takes the lock and the warehouse checks its fencing token
	// on every read and write: a holder whose lock was lost is refused.
	// The default.
	ModeFenced Mode = "fenced"
)

// Modes lists the modes, safest last.
func Modes() []Mode { return []Mode{ModeUnsafe, ModeLock, ModeFenced} }

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: reservation mode %q: want unsafe, lock or fenced", ErrInvalidArgument, s)
}

// modeSwitch holds an instance's current mode and exports it as the gauge
// catalog_reservation_mode{mode}: 1 for the current mode, 0 for the others.
type modeSwitch struct {
	mu    sync.Mutex // serialises set, so the gauge shows one mode
	cur   atomic.Value
	gauge *prometheus.GaugeVec
}

func newModeSwitch(m Mode) *modeSwitch {
	s := &modeSwitch{gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "catalog_reservation_mode",
		Help: "The reservation mode of this instance: 1 for the current one of unsafe (no lock), lock (lock, the warehouse checks no token), fenced (lock and token), 0 for the others.",
	}, []string{"mode"})}
	s.set(m)
	return s
}

func (s *modeSwitch) get() Mode { return s.cur.Load().(Mode) }

func (s *modeSwitch) set(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Store(m)
	for _, o := range Modes() {
		v := 0.0
		if o == m {
			v = 1
		}
		s.gauge.WithLabelValues(string(o)).Set(v)
	}
}
