package chartcheck

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain silences Helm's loader, which logs every symbolic link it follows
// through slog's default logger: the chart's files/ are such links, on
// purpose (TestChartFilesAreTheRepositorysFiles).
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
