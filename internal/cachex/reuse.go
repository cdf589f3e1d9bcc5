package cachex

import (
	"hash/maphash"
	"sync/atomic"
)

// maxReused is the largest envelope whose decoded value is kept for reuse:
// bigger values are decoded on every hit, so that the memory the reuse
// holds stays within ReuseDecoded × maxReused plus the decoded values.
const maxReused = 64 << 10

// decoded is one reuse slot: the envelope last decoded for a key, and what
// decoding it gave.
type decoded[V any] struct {
	rk  string
	raw string
	e   entry
	v   V
}

// reuse keeps, per Redis key, the value decoded from the envelope last read
// (Options.ReuseDecoded). It is direct-mapped: a fixed array of slots, a
// key's slot chosen by hash, a newer key taking over its slot; reads take no
// lock. A slot serves a read only when the key and every byte of the
// envelope equal the ones it was decoded from, so a value that changed, was
// refreshed or invalidated (each writes another envelope) is never served
// from it.
type reuse[V any] struct {
	seed  maphash.Seed
	slots []atomic.Pointer[decoded[V]]
}

func newReuse[V any](n int) *reuse[V] {
	if n <= 0 {
		return nil
	}
	return &reuse[V]{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[decoded[V]], n)}
}

func (r *reuse[V]) slot(rk string) *atomic.Pointer[decoded[V]] {
	return &r.slots[maphash.String(r.seed, rk)%uint64(len(r.slots))]
}

// get returns what raw, read under rk, decoded to when it was last decoded.
func (r *reuse[V]) get(rk, raw string) (entry, V, bool) {
	if r != nil {
		if d := r.slot(rk).Load(); d != nil && d.rk == rk && d.raw == raw {
			return d.e, d.v, true
		}
	}
	var zero V
	return entry{}, zero, false
}

// put keeps what raw, read under rk, decoded to.
func (r *reuse[V]) put(rk, raw string, e entry, v V) {
	if r != nil && len(raw) <= maxReused {
		r.slot(rk).Store(&decoded[V]{rk: rk, raw: raw, e: e, v: v})
	}
}
