package loadgen

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the progress goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgress checks the progress line on a virtual clock: one line per
// second, redrawn in place on a terminal (carriage return, erase line, a
// final newline when stopped), one log line each otherwise.
func TestProgress(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			stats := NewStats(nil)
			stats.SetPhase("xfetch:1")
			var out lockedBuffer
			stop := StartProgress(stats, &out, terminal, time.Second)
			stats.Observe("stampede", Outcome{Endpoint: "category_stats", Code: "200"}, 3*time.Millisecond)
			time.Sleep(3500 * time.Millisecond)
			synctest.Wait()
			stop()
			got := out.String()
			if n := strings.Count(got, "phase=xfetch:1"); n != 3 {
				t.Fatalf("terminal=%v: %d progress lines in 3.5s, want 3:\n%q", terminal, n, got)
			}
			if !strings.Contains(got, "elapsed=1s") || !strings.Contains(got, "elapsed=3s") {
				t.Errorf("terminal=%v: elapsed not counted: %q", terminal, got)
			}
			if terminal {
				if strings.Count(got, "\r\x1b[K") != 3 || strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
					t.Errorf("terminal: want 3 in-place redraws and one final newline, got %q", got)
				}
			} else if strings.Count(got, "loadgen: elapsed=") != 3 || strings.Count(got, "\n") != 3 || strings.Contains(got, "\r") {
				t.Errorf("plain: want 3 log lines, got %q", got)
			}
		})
	}
}
