package catalog

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// openAPIOperations reads the path+method pairs of openapi.yaml with a line
// scan: paths at two spaces of indent under `paths:`, methods at four.
func openAPIOperations(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	pathRE := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodRE := regexp.MustCompile(`^    (get|put|post|patch|delete|head|options|trace):`)
	ops := map[string]bool{}
	inPaths, path := false, ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && !strings.HasPrefix(line, " "):
			inPaths = false // the next top-level key
		case !inPaths:
		case pathRE.MatchString(line):
			path = pathRE.FindStringSubmatch(line)[1]
		case methodRE.MatchString(line) && path != "":
			ops[strings.ToUpper(methodRE.FindStringSubmatch(line)[1])+" "+path] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatal("no operations found in openapi.yaml")
	}
	return ops
}

// routerOperations walks the router: "METHOD /pattern" for every route.
func routerOperations(t *testing.T, h http.Handler) map[string]bool {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("NewHandler returned %T, not a chi router", h)
	}
	ops := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		ops[method+" "+strings.TrimSuffix(route, "/")] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestOpenAPIMatchesRouter checks openapi.yaml documents exactly the routes
// of the router, the admin API's included, method by method.
func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	h, err := NewHandler(HandlerConfig{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	routes := routerOperations(t, h)
	documented := openAPIOperations(t, openAPI)

	for op := range routes {
		if !documented[op] {
			t.Errorf("route %s is not documented in openapi.yaml", op)
		}
	}
	for op := range documented {
		if !routes[op] {
			t.Errorf("openapi.yaml documents %s, which the router does not have", op)
		}
	}
	ops := slices.Sorted(func(yield func(string) bool) {
		for op := range documented {
			if !yield(op) {
				return
			}
		}
	})
	t.Logf("%d documented operations: %v", len(ops), ops)

	// The embedded document is the file in the repository.
	file, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, openAPI) {
		t.Error("the embedded openapi.yaml differs from the file")
	}
}

// TestOpenAPIProblemTypes checks every problem type the API can answer is
// listed in openapi.yaml's Problem description, except the admin API's own.
func TestOpenAPIProblemTypes(t *testing.T) {
	t.Parallel()
	adminOnly := map[string]bool{"/problems/unauthorized": true, "/problems/admin-disabled": true}
	for typ := range problemTypes {
		if !adminOnly[typ] && !bytes.Contains(openAPI, []byte(typ)) {
			t.Errorf("problem type %s is not documented in openapi.yaml", typ)
		}
	}
}
