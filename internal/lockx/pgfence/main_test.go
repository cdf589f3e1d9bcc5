package pgfence_test

import (
	"os"
	"testing"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestMain runs the runnable Example against a private redis-server
// (redistest.RunExamples) and the Postgres DATABASE_URL names.
func TestMain(m *testing.M) { os.Exit(redistest.RunExamples(m)) }
