package scenario

import (
	"context"
	"io"
)

// runArgs does what cmd/loadgen does with a command line.
func runArgs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, cfg, err := ParseArgs(args, func(string) string { return "" }, stderr)
	if err != nil {
		return err
	}
	if s == nil {
		return Replot(cfg.ReportDir, stdout)
	}
	return Run(ctx, s, cfg, stdout, stderr)
}
