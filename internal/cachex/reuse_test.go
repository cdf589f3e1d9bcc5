package cachex

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// item is a value read through a pointer: reuse hands out the same one.
type item struct{ Name string }

// countingJSON is the JSON codec counting its decodes.
type countingJSON struct{ decodes *atomic.Int64 }

func (c countingJSON) Marshal(v *item) ([]byte, error) { return JSON[*item]{}.Marshal(v) }
func (c countingJSON) Unmarshal(b []byte) (*item, error) {
	c.decodes.Add(1)
	return JSON[*item]{}.Unmarshal(b)
}

// A hit whose envelope is the one decoded last returns that value without
// decoding; a changed, refreshed or invalidated entry is decoded afresh and
// never answered from the reuse.
func TestReuseDecodedServesOnlyTheSameEnvelope(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	ctx := context.Background()
	clk := newClock()
	var decodes atomic.Int64
	opts := Options{Name: "reuse", Prefix: "reuse-" + itoa(time.Now().UnixNano()) + ":", TTL: time.Minute, noEarlyRefresh: true, now: clk.Now, noClockSync: true}
	withReuse := opts
	withReuse.ReuseDecoded = 8
	c, _ := newCache(t, client(t, node), countingJSON{&decodes}, withReuse)
	other, _ := newCache(t, client(t, node), countingJSON{new(atomic.Int64)}, opts) // another instance
	var n atomic.Int64
	load := func(context.Context) (*item, error) { return &item{Name: "v" + itoa(n.Add(1))}, nil }
	get := func(want string) *item {
		t.Helper()
		v, err := c.Get(ctx, "k", load)
		if err != nil || v == nil || v.Name != want {
			t.Fatalf("Get = %+v, %v; want %s", v, err, want)
		}
		return v
	}
	hits := func(wantDecodes int64) {
		t.Helper()
		if got := decodes.Load(); got != wantDecodes {
			t.Fatalf("%d decodes, want %d", got, wantDecodes)
		}
	}

	get("v1") // a miss: loaded, written; nothing decoded
	first := get("v1")
	hits(1)
	if again := get("v1"); again != first {
		t.Fatal("a hit on the same envelope decoded again instead of reusing the value")
	}
	hits(1)
	if got, err := c.GetMany(ctx, []string{"k"}, nil); err != nil || got["k"] != first {
		t.Fatalf("GetMany = %v, %v; want the reused value", got, err)
	}
	hits(1)

	// Changed by another instance: invalidated there and loaded anew.
	if err := other.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, "k", load); err != nil { // writes v2
		t.Fatal(err)
	}
	get("v2")
	hits(2)

	// Invalidated here: a miss, whatever the reuse holds.
	if err := c.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	get("v3")
	get("v3")
	hits(3)

	// Refreshed: after its TTL the entry is recomputed and written anew.
	clk.Add(time.Minute + time.Millisecond)
	get("v4")
	get("v4")
	hits(4)
}

// The reuse holds at most ReuseDecoded values (rounded up to whole buckets):
// eight keys through one bucket of four slots push each other out, so a hit
// is decoded at least every other time, and every value is still the key's
// own. Off (the default), every hit decodes.
func TestReuseDecodedIsBoundedAndOffByDefault(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, slots := range []int{ways, 0} {
		var decodes atomic.Int64
		c, _ := newCache(t, client(t, node), countingJSON{&decodes}, Options{Name: "reuse" + itoa(int64(slots)), Prefix: "reuse-" + itoa(time.Now().UnixNano()) + ":",
			TTL: time.Minute, noEarlyRefresh: true, ReuseDecoded: slots})
		for pass := range 3 {
			for _, k := range keys {
				v, err := c.Get(ctx, k, func(context.Context) (*item, error) { return &item{Name: k}, nil })
				if err != nil || v.Name != k {
					t.Fatalf("slots %d, pass %d: Get(%s) = %+v, %v", slots, pass, k, v, err)
				}
			}
		}
		// Pass 0 misses (nothing decoded); passes 1 and 2 are 16 hits.
		held := 0
		if c.reused != nil {
			for j := range c.reused.buckets {
				for i := range c.reused.buckets[j] {
					if c.reused.buckets[j][i].Load() != nil {
						held++
					}
				}
			}
		}
		switch got := decodes.Load(); {
		case slots == 0 && (got != 16 || c.reused != nil):
			t.Fatalf("off: %d decodes for 16 hits, want 16", got)
		case slots > 0 && (got < 8 || held > slots):
			t.Fatalf("%d slots: %d decodes for 16 hits of 8 keys, want at least 8; %d values held, want at most %d", slots, got, held, slots)
		}
	}
	if _, err := New(client(t, node), JSON[string]{}, Options{Name: "neg", TTL: time.Second, ReuseDecoded: -1}); err == nil {
		t.Fatal("New accepted a negative ReuseDecoded")
	}
}
