//go:build unix

package scripts_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestCopyCheck runs scripts/copy-check.sh: cachex, lockx, pgfence and
// redistest copied into a fresh module with go-redis at the lowest version
// the docs state, and its go line at the stated minimum Go, build, vet clean
// and pass their own tests there, tidy keeping that go line and requiring
// the stated modules (TestCopyItStatesGoAndModules checks the docs state
// the script's list). The same
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
	gomin, modules := stated(t)
	if !strings.Contains(out, ", go "+gomin+", go-redis v9.22.0\n") || !strings.Contains(out, "copy-check: requires "+strings.Join(modules, " ")+"\n") {
		t.Errorf("the copy's go line or modules are not reported as go %s and %v:\n%s", gomin, modules, out)
	}
	for _, pkg := range []string{"example.com/shop/cachex", "example.com/shop/lockx", "example.com/shop/lockx/pgfence", "example.com/shop/redistest"} {
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

// stated returns the minimum Go and the modules that copy-check.sh checks
// the copy against.
func stated(t *testing.T) (gomin string, modules []string) {
	t.Helper()
	b, err := os.ReadFile("copy-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	g := regexp.MustCompile(`(?m)^gomin=(\d+\.\d+\.\d+)$`).FindSubmatch(b)
	m := regexp.MustCompile(`(?m)^modules='([^']+)'$`).FindSubmatch(b)
	if g == nil || m == nil {
		t.Fatal("copy-check.sh sets no gomin=X.Y.Z or modules='...' line")
	}
	return string(g[1]), strings.Fields(string(m[1]))
}

// TestCopyItStatesGoAndModules: the "Copy it" sections of docs/cachex.md and
// docs/lockx.md and each package's doc.go state the minimum Go and every
// module copy-check.sh finds the copy requires (cachex's without pgfence's
// pgx), and no longer say "no SDK".
func TestCopyItStatesGoAndModules(t *testing.T) {
	gomin, modules := stated(t)
	minor := gomin[:strings.LastIndex(gomin, ".")] // 1.26.0: "Go 1.26"
	copyIt := func(doc string) string {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(md), "## Copy it\n")
		section, _, _ = strings.Cut(section, "\n## ")
		return section
	}
	read := func(f string) string {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "\n// ", " ")
	}
	for name, text := range map[string]string{
		"docs/cachex.md":         copyIt("../docs/cachex.md"),
		"docs/lockx.md":          copyIt("../docs/lockx.md"),
		"internal/cachex/doc.go": read("../internal/cachex/doc.go"),
		"internal/lockx/doc.go":  read("../internal/lockx/doc.go"),
	} {
		text = strings.Join(strings.Fields(text), " ")
		if !strings.Contains(text, "Go "+minor+" or later") {
			t.Errorf("%s does not state Go %s or later", name, minor)
		}
		if strings.Contains(text, "no SDK") {
			t.Errorf("%s says \"no SDK\"; the tests import go.opentelemetry.io/otel/sdk", name)
		}
		for _, m := range modules {
			if m == "github.com/jackc/pgx/v5" && strings.Contains(name, "cachex") {
				continue
			}
			if !strings.Contains(text, m) {
				t.Errorf("%s does not name the module %s, which the copy requires", name, m)
			}
		}
	}
}
