package catalog

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

// curlCall is one documented curl command, as curl would send it.
type curlCall struct {
	line   string
	method string
	target string // path and query
	header http.Header
	body   string
	want   int // the status the document says it answers
}

// documentedCalls reads the sh block under "## Examples" of docs/api.md:
// one curl command per line (a trailing backslash continues it), ending in
// "# <status>". $ADMIN_TOKEN is replaced by token. Only the curl options the
// examples use are understood; any other fails the test, so that a new
// example is run as written or not at all.
func documentedCalls(t *testing.T, token string) []curlCall {
	t.Helper()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Examples\n")
	if !ok {
		t.Fatal("docs/api.md has no Examples section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		t.Fatal("the Examples section has no sh block")
	}
	wantStatus := regexp.MustCompile(`\s+#\s*(\d{3})\s*$`)
	var calls []curlCall
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		m := wantStatus.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("example %q does not end in # <status>", line)
		}
		want, _ := strconv.Atoi(m[1])
		p := shellwords.NewParser()
		p.ParseEnv = true
		p.Getenv = func(name string) string {
			if name == "ADMIN_TOKEN" {
				return token
			}
			t.Fatalf("example %q uses $%s", line, name)
			return ""
		}
		args, err := p.Parse(strings.TrimSuffix(line, m[0]))
		if err != nil {
			t.Fatalf("example %q: %v", line, err)
		}
		calls = append(calls, parseCurl(t, line, args, want))
	}
	return calls
}

// parseCurl turns curl's arguments into the request it sends: -d makes it
// a POST with Content-Type application/x-www-form-urlencoded unless -H sets
// one, -I a HEAD, -X sets the method.
func parseCurl(t *testing.T, line string, args []string, want int) curlCall {
	t.Helper()
	c := curlCall{line: line, method: http.MethodGet, header: http.Header{}, want: want}
	if len(args) == 0 || args[0] != "curl" {
		t.Fatalf("example %q is not a curl command", line)
	}
	method, hasBody := "", false
	for i := 1; i < len(args); i++ {
		next := func() string {
			if i+1 >= len(args) {
				t.Fatalf("example %q: %s needs a value", line, args[i])
			}
			i++
			return args[i]
		}
		switch a := args[i]; {
		case a == "-s":
		case a == "-I":
			method = http.MethodHead
		case a == "-X":
			method = next()
		case a == "-H":
			k, v, _ := strings.Cut(next(), ":")
			c.header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "-d":
			c.body, hasBody = next(), true
		case strings.HasPrefix(a, "-"):
			t.Fatalf("example %q: the test does not know curl's %s", line, a)
		default:
			u, err := url.Parse("http://" + strings.TrimPrefix(a, "http://"))
			if err != nil || u.Host != "localhost:8080" {
				t.Fatalf("example %q: URL %q is not on localhost:8080", line, a)
			}
			c.target = u.RequestURI()
		}
	}
	switch {
	case method != "":
		c.method = method
	case hasBody:
		c.method = http.MethodPost
	}
	if hasBody && c.header.Get("Content-Type") == "" {
		c.header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.target == "" {
		t.Fatalf("example %q has no URL", line)
	}
	return c
}

// TestDocumentedExamples runs docs/api.md's examples in order against a
// fresh API and checks each answers the status written beside it.
func TestDocumentedExamples(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	calls := documentedCalls(t, testAdminToken)
	if len(calls) < 20 {
		t.Fatalf("%d examples found, want the whole block", len(calls))
	}
	a.runCalls(t, calls, "the document")
}

// runCalls sends each documented call in order and checks it answers the
// status the document (doc) writes beside it, under the OpenAPI check.
func (a *testAPI) runCalls(t *testing.T, calls []curlCall, doc string) {
	t.Helper()
	for _, c := range calls {
		req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		req.Header = c.header
		rec := a.spec.serve(t, a.handler, req)
		if rec.Code != c.want {
			t.Errorf("%s\n  answered %d, %s says %d: %s", c.line, rec.Code, doc, c.want, rec.Body.String())
		}
	}
}
