package cachex

import (
	"context"
	"testing"
	"time"
)

// TestDeadlinesEndEveryCallWithinTimeout: whatever the caller's context,
// a call's context has a deadline within Timeout and its Done channel
// closes by then.
func TestDeadlinesEndEveryCallWithinTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 40 * time.Millisecond
	d := newDeadlines(timeout)
	short, cancelShort := context.WithTimeout(context.Background(), timeout/2)
	defer cancelShort()
	long, cancelLong := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLong()
	for name, parent := range map[string]context.Context{
		"background":     context.Background(),
		"without cancel": context.WithoutCancel(long),
		"shorter caller": short,
		"longer caller":  long,
		"value only":     context.WithValue(context.Background(), struct{}{}, 1),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := d.bound(parent)
			defer cancel()
			if dl, ok := ctx.Deadline(); !ok || dl.After(time.Now().Add(timeout)) {
				t.Fatalf("deadline %v, %v: want one within %v", dl, ok, timeout)
			}
			select {
			case <-ctx.Done():
			case <-time.After(timeout + time.Second):
				t.Fatal("Done did not close")
			}
			if ctx.Err() == nil {
				t.Fatal("Err is nil after Done closed")
			}
			if took := time.Since(start); took > timeout+20*time.Millisecond {
				t.Errorf("Done closed after %v, want about %v", took, timeout)
			}
		})
	}
}
