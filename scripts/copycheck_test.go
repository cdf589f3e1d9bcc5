//go:build unix

package scripts_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCopyCheck runs scripts/copy-check.sh: cachex, lockx, pgfence and
// redistest copied into a fresh module with go-redis at the lowest version
// the docs state build, vet clean and pass their own tests there. The same
// copy on the version before it must fail to build for want of the
// AutoPipeliner, or the stated minimum is not the real one.
func TestCopyCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the packages into a new module and runs their tests")
	}
	t.Parallel()
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL: pgfence's tests in the copy need a Postgres")
	}
	out, err := copyCheck(t, "v9.22.0", "-count=1")
	if err != nil {
		t.Fatalf("the copy with go-redis v9.22.0: %v\n%s", err, out)
	}
	for _, pkg := range []string{"example.com/shop/cachex", "example.com/shop/lockx", "example.com/shop/lockx/pgfence"} {
		if !strings.Contains(out, "ok  \t"+pkg) {
			t.Errorf("no passing tests of %s in the copy:\n%s", pkg, out)
		}
	}
	out, err = copyCheck(t, "v9.21.0", "-run=^$")
	if err == nil || !strings.Contains(out, "undefined: redis.AutoPipeliner") {
		t.Errorf("the copy with go-redis v9.21.0: %v, want a build failure naming redis.AutoPipeliner:\n%s", err, out)
	}
}

func copyCheck(t *testing.T, goredis string, flags ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"copy-check.sh"}, flags...)...)
	cmd.Env = append(os.Environ(), "GOREDIS="+goredis, "COPY_DIR="+t.TempDir())
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestCopyItIsTheTestedExample: the code in the "Copy it" section of
// docs/cachex.md and docs/lockx.md is the body of a runnable Example, so
// that what a reader copies is what go test runs.
func TestCopyItIsTheTestedExample(t *testing.T) {
	for doc, example := range map[string]string{
		"../docs/cachex.md": "../internal/cachex/example_test.go",
		"../docs/lockx.md":  "../internal/lockx/pgfence/example_test.go",
	} {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(md), "## Copy it\n")
		_, block, _ := strings.Cut(section, "```go\n")
		block, _, _ = strings.Cut(block, "```")
		_, fn, _ := strings.Cut(string(src), "func Example_copyIt() {\n")
		fn, _, _ = strings.Cut(fn, "\n}\n")
		var body []string
		for _, line := range strings.Split(fn, "\n") {
			if !strings.Contains(line, "// Output:") {
				body = append(body, strings.TrimPrefix(line, "\t"))
			}
		}
		if got, want := block, strings.Join(body, "\n")+"\n"; block == "" || got != want {
			t.Errorf("%s's Copy it code is not the body of Example_copyIt in %s:\n--- doc\n%s--- example\n%s", doc, example, got, want)
		}
	}
}
