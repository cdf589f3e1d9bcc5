package seed

import (
	"math/bits"
	"math/rand/v2"
)

// rootSeed is mixed into every random stream. Changing it changes all data.
const rootSeed = 0x5eed_ca7a_1095_2024

// Stream identifiers: every table (and every independent decision) draws
// from its own family of streams, so adding a draw to one never shifts
// another.
const (
	streamCategory uint64 = iota + 1
	streamProduct
	streamProductTime
	streamProductTier
	streamInventory
	streamReview
	streamPopularity
	streamReviewOrder
)

// rng is a deterministic random source for one stream and one row: raw
// outputs of math/rand/v2's PCG (PCG-DXSM, 128-bit state) and integer
// arithmetic only (package doc, Determinism).
type rng struct {
	pcg rand.PCG
}

// newRNG returns the source for row id of the given stream.
func newRNG(stream, id uint64) *rng {
	r := new(rng)
	r.pcg.Seed(splitmix64(rootSeed^stream), splitmix64(id))
	return r
}

// splitmix64 scrambles nearby integers (row ids) into unrelated seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// intn returns a uniform integer in [0, n); n must be positive. It is
// Lemire's multiply-and-reject method, so it is unbiased.
func (r *rng) intn(n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(r.pcg.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), un)
		}
	}
	return int(hi)
}

// between returns a uniform integer in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// percent reports true with probability p/100.
func (r *rng) percent(p int) bool { return r.intn(100) < p }

// pick returns a uniformly chosen element of words.
func pick[T any](r *rng, words []T) T { return words[r.intn(len(words))] }

// shuffle permutes s uniformly (Fisher–Yates).
func shuffle[T any](r *rng, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}
