package cachex

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

type titled struct{ Title string }

// Two versions of a service whose values cannot read each other's run side
// by side (a rolling upgrade): neither takes the other's entries for corrupt
// ones, each computes its value once, and an Invalidate through either
// clears both.
func TestTwoValueVersionsSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	v1, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "upgrade", TTL: time.Minute, Version: "1", InvalidateVersions: []string{"2"}})
	v2, _ := newCache(t, rdb, JSON[titled]{}, Options{Name: "upgrade", TTL: time.Minute, Version: "2", InvalidateVersions: []string{"1"}})
	loads1, loads2 := 0, 0
	load1 := func(context.Context) (string, error) { loads1++; return "lamp", nil }
	load2 := func(context.Context) (titled, error) { loads2++; return titled{Title: "lamp"}, nil }
	for range 5 {
		if v, err := v1.Get(ctx, "k", load1); err != nil || v != "lamp" {
			t.Fatalf("version 1: %q, %v", v, err)
		}
		if v, err := v2.Get(ctx, "k", load2); err != nil || v.Title != "lamp" {
			t.Fatalf("version 2: %+v, %v", v, err)
		}
	}
	if loads1 != 1 || loads2 != 1 {
		t.Fatalf("loads: %d by version 1, %d by version 2; want one each", loads1, loads2)
	}
	for name, c := range map[string]float64{"1": counterOf(v1.m.redisErrs.WithLabelValues("decode")), "2": counterOf(v2.m.redisErrs.WithLabelValues("decode"))} {
		if c != 0 {
			t.Fatalf("version %s counted %v corrupt entries", name, c)
		}
	}
	if err := v2.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	_, _ = v1.Get(ctx, "k", load1)
	_, _ = v2.Get(ctx, "k", load2)
	if loads1 != 2 || loads2 != 2 {
		t.Fatalf("after an Invalidate through version 2: loads %d and %d, want both versions to load again", loads1, loads2)
	}
}
