package catalog

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

// readmeCalls returns the curl commands to the API of README.md and of
// docs/running.md (where the README's live demo and "Without Docker" moved),
// in order: the lines of their sh blocks (a trailing backslash continues one) that start
// with curl and name the API's address (127.0.0.1:8080 or $HTTP_ADDR),
// each ending in "# <status>" and maybe a comment. The documented tokens
// (demo-admin, local-admin, $ADMIN_TOKEN) become token, the address
// localhost:8080.
func readmeCalls(t *testing.T, token string) []curlCall {
	t.Helper()
	var doc []byte
	for _, path := range readmeDocs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc = append(doc, b...)
	}
	status := regexp.MustCompile(`\s+#\s*(\d{3})\b[^#]*$`)
	var calls []curlCall
	blocks := strings.Split(string(doc), "```sh\n")
	for _, b := range blocks[1:] {
		b, _, _ = strings.Cut(b, "\n```")
		for _, line := range strings.Split(strings.ReplaceAll(b, "\\\n", " "), "\n") {
			if !strings.HasPrefix(line, "curl ") || !(strings.Contains(line, "127.0.0.1:8080") || strings.Contains(line, "$HTTP_ADDR")) {
				continue
			}
			m := status.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("README example %q does not end in # <status>", line)
			}
			want, _ := strconv.Atoi(m[1])
			cmd := strings.NewReplacer("demo-admin", token, "local-admin", token, "127.0.0.1:8080", "localhost:8080").
				Replace(strings.TrimSuffix(line, m[0]))
			p := shellwords.NewParser()
			p.ParseEnv = true
			p.Getenv = func(name string) string {
				switch name {
				case "ADMIN_TOKEN":
					return token
				case "HTTP_ADDR":
					return "localhost:8080"
				}
				t.Fatalf("README example %q uses $%s", line, name)
				return ""
			}
			args, err := p.Parse(cmd)
			if err != nil {
				t.Fatalf("README example %q: %v", line, err)
			}
			calls = append(calls, parseCurl(t, line, args, want))
		}
	}
	return calls
}

// readmeDocs are the pages whose curl commands TestReadmeExamples runs: the
// README and the page its live demo and "Without Docker" moved to.
var readmeDocs = []string{"../../README.md", "../../docs/running.md"}

// TestReadmeExamples runs the curl commands to the API of README.md and
// docs/running.md (the compose demo's What to try, then the one without
// Docker) in order
// against a fresh API, and checks each answers the status written beside
// it and matches openapi.yaml.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	calls := readmeCalls(t, testAdminToken)
	if len(calls) < 8 {
		t.Fatalf("%d README examples found, want both What to try blocks", len(calls))
	}
	a.runCalls(t, calls, "docs/running.md")
	if f := a.faults.Get(); f != (Faults{}) {
		t.Errorf("after the last reset of docs/running.md the knobs are %+v", f)
	}
}
