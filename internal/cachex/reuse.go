package cachex

import (
	"hash/maphash"
	"math/rand/v2"
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

// ways is how many slots a bucket of the reuse holds: a key may sit in any
// of its bucket's, so keys that hash alike seldom push each other out.
const ways = 4

// reuse keeps, per Redis key, the value decoded from the envelope last read
// (Options.ReuseDecoded): a fixed array of buckets of ways slots each, a
// key's bucket chosen by hash; a new key takes an empty slot of its bucket,
// or a random one. Reads take no lock. A slot serves a read only when the
// key and every byte of the envelope equal the ones it was decoded from, so
// a value that changed, was refreshed or invalidated (each writes another
// envelope) is never served from it.
type reuse[V any] struct {
	seed    maphash.Seed
	buckets [][ways]atomic.Pointer[decoded[V]]
}

func newReuse[V any](n int) *reuse[V] {
	if n <= 0 {
		return nil
	}
	return &reuse[V]{seed: maphash.MakeSeed(), buckets: make([][ways]atomic.Pointer[decoded[V]], (n+ways-1)/ways)}
}

func (r *reuse[V]) bucket(rk string) *[ways]atomic.Pointer[decoded[V]] {
	return &r.buckets[maphash.String(r.seed, rk)%uint64(len(r.buckets))]
}

// get returns what raw, read under rk, decoded to when it was last decoded.
func (r *reuse[V]) get(rk, raw string) (entry, V, bool) {
	if r != nil {
		b := r.bucket(rk)
		for i := range b {
			if d := b[i].Load(); d != nil && d.rk == rk {
				if d.raw == raw {
					return d.e, d.v, true
				}
				break
			}
		}
	}
	var zero V
	return entry{}, zero, false
}

// put keeps what raw, read under rk, decoded to: in rk's slot, else an
// empty one, else a random one of its bucket.
func (r *reuse[V]) put(rk, raw string, e entry, v V) {
	if r == nil || len(raw) > maxReused {
		return
	}
	b := r.bucket(rk)
	slot := -1
	for i := range b {
		d := b[i].Load()
		if d != nil && d.rk == rk {
			slot = i
			break
		}
		if d == nil && slot < 0 {
			slot = i
		}
	}
	if slot < 0 {
		slot = rand.IntN(ways)
	}
	b[slot].Store(&decoded[V]{rk: rk, raw: raw, e: e, v: v})
}
