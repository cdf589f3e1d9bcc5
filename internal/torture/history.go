package torture

import (
	"slices"
	"sync"
)

// historyChunk is how many entries a history holds per chunk.
const historyChunk = 1 << 16

// history records a workload's operations from many goroutines. It grows
// in chunks of fixed capacity, so that adding never copies what was
// recorded: a 30-minute cache run records eleven million reads, and growing
// one slice that size copies a gigabyte at once, during which the whole
// process stalled (9.5 s measured by the lag monitor).
type history[T any] struct {
	mu     sync.Mutex
	chunks [][]T
}

// add records v after everything added before.
func (h *history[T]) add(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.chunks); n == 0 || len(h.chunks[n-1]) == historyChunk {
		h.chunks = append(h.chunks, make([]T, 0, historyChunk))
	}
	last := &h.chunks[len(h.chunks)-1]
	*last = append(*last, v)
}

// all returns every entry, in the order added; call it when no goroutine
// adds any more.
func (h *history[T]) all() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Concat(h.chunks...)
}
