package cachex

import (
	"testing"
	"time"
)

func TestBreakerOpensAfterFailuresAndProbesAfterCooldown(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := newBreaker(3, time.Second, clk.Now)
	for i := range 2 {
		b.failure()
		if !b.allow() {
			t.Fatalf("open after %d failures, want 3", i+1)
		}
	}
	b.success() // a success resets the count
	b.failure()
	b.failure()
	if !b.allow() {
		t.Fatal("open after a success and 2 failures")
	}
	b.failure()
	if b.allow() || !b.open() {
		t.Fatal("closed after 3 failures in a row")
	}
	clk.Add(999 * time.Millisecond)
	if b.allow() {
		t.Fatal("allowed before the cooldown passed")
	}
	clk.Add(time.Millisecond)
	if !b.allow() {
		t.Fatal("no probe after the cooldown")
	}
	if b.allow() {
		t.Fatal("a second call allowed while the probe is out")
	}
	b.failure() // the probe failed: open for another cooldown
	if b.allow() {
		t.Fatal("allowed right after a failed probe")
	}
	clk.Add(time.Second)
	if !b.allow() {
		t.Fatal("no probe after the second cooldown")
	}
	b.success()
	if !b.allow() || b.open() {
		t.Fatal("still open after a successful probe")
	}
}
