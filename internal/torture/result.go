package torture

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Anomaly is a check that failed, with the shortest excerpt of the history
// that shows it.
type Anomaly struct {
	Check   string   `json:"check"`
	Detail  string   `json:"detail"`
	Excerpt []string `json:"excerpt,omitempty"`
}

// maxAnomalies is how many anomalies of one check a result keeps; the
// first ones show the defect, the count says how often it struck.
const maxAnomalies = 20

// capAnomalies keeps the first maxAnomalies of each check and one more
// saying how many were left out.
func capAnomalies(as []Anomaly) []Anomaly {
	seen := map[string]int{}
	var out []Anomaly
	for _, a := range as {
		seen[a.Check]++
		if seen[a.Check] <= maxAnomalies {
			out = append(out, a)
		}
	}
	for check, n := range seen {
		if n > maxAnomalies {
			out = append(out, Anomaly{Check: check, Detail: fmt.Sprintf("%d more like these left out", n-maxAnomalies)})
		}
	}
	return out
}

// Result is what a workload did and found, written as summary.json.
type Result struct {
	Workload  string         `json:"workload"`
	Seed      uint64         `json:"seed"`
	Duration  time.Duration  `json:"duration_ns"`
	Ops       map[string]int `json:"operations"`
	Faults    []FaultRecord  `json:"faults"`
	Checks    []string       `json:"checks"`
	Anomalies []Anomaly      `json:"anomalies"`
}

// FaultsByKind counts the faults that were applied, by kind.
func (r *Result) FaultsByKind() map[Kind]int {
	out := map[Kind]int{}
	for _, f := range r.Faults {
		if !f.Began.IsZero() && f.Err == "" {
			out[f.Kind]++
		}
	}
	return out
}

// WriteSummary writes rs as dir/summary.json, creating dir.
func WriteSummary(dir string, rs []*Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "summary.json")
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// Print writes r for people: operations, faults, checks, anomalies.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "%s: seed %d, %v\n", r.Workload, r.Seed, r.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "  operations: %s\n", joinCounts(r.Ops))
	byKind := map[string]int{}
	for k, n := range r.FaultsByKind() {
		byKind[string(k)] = n
	}
	fmt.Fprintf(w, "  faults: %s\n", joinCounts(byKind))
	fmt.Fprintf(w, "  checks: %s\n", strings.Join(r.Checks, "; "))
	fmt.Fprintf(w, "  anomalies: %d\n", len(r.Anomalies))
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "  ANOMALY %s: %s\n", a.Check, a.Detail)
		for _, e := range a.Excerpt {
			fmt.Fprintf(w, "      %s\n", e)
		}
	}
}

func joinCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
