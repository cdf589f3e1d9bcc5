package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// writeTable prints the figures as a Markdown paragraph naming the
// recording and a table: one column per class, each number cell the median
// of the class's samples and, in brackets, the highest.
func (f *figures) writeTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Recorded %s to %s (UTC), a sample every %v; each cell: the median of the class's samples (the highest in brackets).\n\n",
		f.start.UTC().Format(time.DateTime), f.end.UTC().Format(time.DateTime), step)
	b.WriteString("| |")
	for c := range classes {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---|---|---|\n| minutes sampled |")
	for c := range classes {
		fmt.Fprintf(&b, " %.1f |", (time.Duration(f.samples[c]) * step).Minutes())
	}
	b.WriteString("\n")
	for i, r := range f.rows {
		fmt.Fprintf(&b, "| %s |", r.name)
		for c := range classes {
			fmt.Fprintf(&b, " %s |", cell(f.values[i][c], r.format))
		}
		b.WriteString("\n")
	}
	b.WriteString("| alerts firing |")
	for c := range classes {
		names := "none"
		if len(f.alerts[c]) > 0 {
			names = strings.Join(f.alerts[c], ", ")
		}
		fmt.Fprintf(&b, " %s |", names)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cell is "median (highest)" of vs, or "–" when there are none.
func cell(vs []float64, format string) string {
	if len(vs) == 0 {
		return "–"
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf(format+" ("+format+")", median, s[len(s)-1])
}
