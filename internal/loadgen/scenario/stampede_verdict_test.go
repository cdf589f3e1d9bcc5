package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPhaseVerdictByPurpose: a ttl or none phase never fails, whatever its
// errors, drops or duplicates, and says whether it stampeded; an xfetch
// phase fails on its failed requests and on its duplicate recomputes, not
// on its drops.
func TestPhaseVerdictByPurpose(t *testing.T) {
	for _, c := range []struct {
		name      string
		p         PhaseSummary
		pass      bool
		stampeded bool
	}{
		{"ttl stampede with drops", PhaseSummary{Name: "ttl", Strategy: "ttl", ErrorRate: 0.4, RecomputesPerKeyWindow: 40, DuplicatesPerKeyWindow: 30}, true, true},
		{"ttl without a stampede", PhaseSummary{Name: "ttl", Strategy: "ttl", RecomputesPerKeyWindow: 1.2}, true, false},
		{"none", PhaseSummary{Name: "none", Strategy: "none", ErrorRate: 1, RecomputesPerKeyWindow: 200}, true, true},
		{"xfetch within bounds", PhaseSummary{Name: "xfetch:1", Strategy: "xfetch", Requests: 100, Errors: 1, RecomputesPerKeyWindow: 1.1, DuplicatesPerKeyWindow: 0.5}, true, false},
		{"xfetch drops are figures", PhaseSummary{Name: "xfetch:1", Strategy: "xfetch", Requests: 100, Dropped: 50, ErrorRate: 0.33, RecomputesPerKeyWindow: 1}, true, false},
		{"xfetch errors", PhaseSummary{Name: "xfetch:1", Strategy: "xfetch", Requests: 100, Errors: 2, ErrorRate: 0.02, RecomputesPerKeyWindow: 1}, false, false},
		{"xfetch duplicates", PhaseSummary{Name: "xfetch:1", Strategy: "xfetch", RecomputesPerKeyWindow: 3, DuplicatesPerKeyWindow: 2}, false, true},
	} {
		c.p.judge(0.01, 0.5)
		if c.p.Verdict.Passed != c.pass || c.p.Verdict.Stampeded != c.stampeded || c.p.Verdict.Passed != (len(c.p.Verdict.Failures) == 0) {
			t.Errorf("%s: verdict %+v, want passed %v, stampeded %v", c.name, c.p.Verdict, c.pass, c.stampeded)
		}
	}
}

// fakeStatsAPI is a stand-in API for the stampede scenario: it keeps the
// strategy loadgen sets, answers the hot reads (failing every failTTL-th
// read while the strategy is ttl) and serves cachex counters that grow by
// duplicates per read under xfetch.
func fakeStatsAPI(t *testing.T, failTTL int64, xfetchDuplicates float64) string {
	t.Helper()
	var (
		mu                sync.Mutex
		strategy          = "xfetch"
		reads, duplicates atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/admin/caches" && r.Method == http.MethodGet:
			fmt.Fprintf(w, `{"category_stats":{"strategy":%q,"beta":1}}`, strategy)
		case r.URL.Path == "/admin/caches/category_stats" && r.Method == http.MethodPut:
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			for _, s := range []string{"ttl", "xfetch", "none"} {
				if strings.Contains(b.String(), `"`+s+`"`) {
					strategy = s
				}
			}
			fmt.Fprint(w, "{}")
		case r.URL.Path == "/metrics":
			n := reads.Load()
			fmt.Fprintf(w, "cachex_gets_total{cache=\"category_stats\",result=\"hit\"} %d\n", n)
			fmt.Fprintf(w, "cachex_recomputes_total{cache=\"category_stats\",reason=\"early\",status=\"ok\"} %d\n", n/10)
			fmt.Fprintf(w, "cachex_recomputes_discarded_total{cache=\"category_stats\"} %d\n", duplicates.Load())
		case strings.HasPrefix(r.URL.Path, "/v1/categories/"):
			n := reads.Add(1)
			if strategy == "xfetch" && xfetchDuplicates > 0 && n%int64(1/xfetchDuplicates) == 0 {
				duplicates.Add(1)
			}
			if strategy == "ttl" && failTTL > 0 && n%failTTL == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, `{"category_id":1}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStampedeJudgesEachPhase: a run whose ttl phase fails a tenth of its
// requests passes (the baseline's errors are its figures, recorded in the
// summary), while a run whose xfetch phase throws away many recomputes
// fails on that phase alone.
func TestStampedeJudgesEachPhase(t *testing.T) {
	run := func(t *testing.T, api string) (*StampedeSummary, error) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		err := runArgs(t.Context(), []string{"-target", api, "-admin-token", "t", "-rate", "100", "-metrics-addr", "",
			"-cache-ttl", "100ms", "-phase-duration", "1s", "-phases", "ttl,xfetch:1", "-report-dir", dir, "stampede"}, &stdout, &stderr)
		sum, rerr := ReadStampedeSummary(filepath.Join(dir, "summary.json"))
		if rerr != nil {
			t.Fatalf("no summary: %v (run: %v)\n%s", rerr, err, stderr.String())
		}
		return sum, err
	}
	t.Run("ttl errors are figures", func(t *testing.T) {
		sum, err := run(t, fakeStatsAPI(t, 10, 0))
		if err != nil {
			t.Fatalf("run failed on its baseline's errors: %v", err)
		}
		ttl, xf := sum.Phases[0], sum.Phases[1]
		if ttl.Errors == 0 || ttl.ErrorRate <= sum.MaxErrorRate || ttl.Verdict.Purpose != purposeBaseline || !ttl.Verdict.Passed {
			t.Errorf("ttl phase: %d errors, rate %.3f, verdict %+v", ttl.Errors, ttl.ErrorRate, ttl.Verdict)
		}
		if xf.Verdict.Purpose != purposeBounded || !xf.Verdict.Passed || !sum.Passed {
			t.Errorf("xfetch verdict %+v, run passed %v", xf.Verdict, sum.Passed)
		}
	})
	t.Run("xfetch duplicates fail", func(t *testing.T) {
		sum, err := run(t, fakeStatsAPI(t, 0, 0.5))
		if !errors.Is(err, errPhaseBounds) {
			t.Fatalf("run = %v, want errPhaseBounds", err)
		}
		xf := sum.Phases[1]
		if xf.Duplicates == 0 || xf.Verdict.Passed || sum.Passed || !strings.Contains(strings.Join(sum.Failures, ";"), "xfetch:1: ") {
			t.Errorf("xfetch: %.0f duplicates, verdict %+v; run failures %q", xf.Duplicates, xf.Verdict, sum.Failures)
		}
		if !sum.Phases[0].Verdict.Passed {
			t.Errorf("ttl verdict %+v", sum.Phases[0].Verdict)
		}
	})
}
