// Package report renders a load generator run for people: report.md with
// Markdown tables, PNG line charts (gonum/plot) with gaps for missing
// points and shaded spans for faults, and trace waterfalls (Waterfall, a
// bar per span of a trace). The same input always gives the same
// bytes, so a report can be re-rendered from its summary.json and compared.
package report
