package catalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Limits of the API, answered with 4xx problems.
const (
	MaxBodyBytes   = 16 << 10
	MaxBatchIDs    = 100
	MaxQueryRunes  = 200
	MaxSearchLimit = 50
	MaxQuantity    = 1000
)

type handlers struct {
	svc        *Service
	faults     *Injector
	adminToken string
	ready      func(ctx context.Context) error
	checks     map[string]func(ctx context.Context) error
	log        *slog.Logger
	// start is the settings when the handler was made, what POST
	// /admin/reset sets back.
	start Settings
}

func (h *handlers) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handlers) readyz(w http.ResponseWriter, r *http.Request) {
	if h.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := h.ready(ctx); err != nil {
			h.log.WarnContext(r.Context(), "not ready", "err", err)
			writeProblem(w, probUnavailable.with("Postgres does not answer"))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// health checks every dependency at once (2s each) and reports each as "ok"
// or "unavailable" (the error goes to the log, not to the client), with
// status "degraded" when any is unavailable. It always answers 200: it is for
// people and dashboards, not for load balancers (that is /readyz).
func (h *handlers) health(w http.ResponseWriter, r *http.Request) {
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(h.checks))
	for name, check := range h.checks {
		go func() {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			results <- result{name, check(ctx)}
		}()
	}
	status, checks := "ok", make(map[string]string, len(h.checks))
	for range h.checks {
		res := <-results
		checks[res.name] = "ok"
		if res.err != nil {
			checks[res.name], status = "unavailable", "degraded"
			h.log.WarnContext(r.Context(), "health check failed", "dependency", res.name, "err", res.err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "checks": checks})
}

func (h *handlers) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openAPI)
}

// parseID reads a positive integer id, written one way only (no sign, no
// leading zeros), so that each resource has one URL.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != s {
		return 0, fmt.Errorf("id %q is not a positive integer", truncate(s))
	}
	return id, nil
}

// ParseIDs reads a comma-separated list of 1..MaxBatchIDs positive ids.
func ParseIDs(s string) ([]int64, error) {
	if s == "" {
		return nil, errors.New("ids is required: ?ids=1,2,3")
	}
	// Count before splitting: a long run of commas must not cost a slice of
	// that many strings.
	if n := strings.Count(s, ",") + 1; n > MaxBatchIDs {
		return nil, fmt.Errorf("at most %d ids per request, got %d", MaxBatchIDs, n)
	}
	parts := strings.Split(s, ",")
	ids := make([]int64, len(parts))
	for i, p := range parts {
		id, err := parseID(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// limitParam reads ?limit= within 1..max, def when absent.
func limitParam(r *http.Request, def, max int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("limit must be an integer within 1..%d, got %q", max, truncate(s))
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// fail answers an error of the service with the matching problem.
func (h *handlers) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrOutcomeUnknown): // first: its cause is not the answer
		writeProblem(w, probUnavailable.with("the outcome could not be confirmed; retry the same request (a reservation with the same idempotency key): the retry answers what happened"))
	case errors.Is(err, ErrNotFound):
		writeProblem(w, probNotFound)
	case errors.Is(err, ErrInsufficientStock):
		writeProblem(w, probInsufficient.with(publicDetail(err)))
	case errors.Is(err, ErrFenced):
		writeProblem(w, probFenced)
	case errors.Is(err, ErrIdempotencyMismatch):
		writeProblem(w, probIdemMismatch.with(publicDetail(err))) // what the key already holds
	case errors.Is(err, ErrInvalidArgument):
		writeProblem(w, probInvalid.with(publicDetail(err)))
	case errors.Is(err, ErrLockBusy):
		writeProblem(w, probBusy)
	case errors.Is(context.Cause(r.Context()), errServerDeadline):
		writeProblem(w, probUnavailable.with("the request ran out of its time on the server; retry later"))
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer. 499 (as nginx
		// logs it) keeps it out of the 5xx that alerts count.
		writeProblem(w, Problem{Type: probUnavailable.Type, Title: "The client closed the request", Status: statusClientClosed})
	case isQueryCanceled(err):
		writeProblem(w, probUnavailable.with("a database query ran out of its time; retry later"))
	case errors.Is(err, context.DeadlineExceeded):
		// A recompute that ran out of its own time (cachex's LoadTimeout)
		// while the request still had some: the database is overloaded.
		writeProblem(w, probUnavailable.with("a dependency did not answer in time; retry later"))
	case isConnectionLost(err):
		h.log.WarnContext(r.Context(), "database connection lost", "method", r.Method, "path", r.URL.Path, "err", err)
		writeProblem(w, probUnavailable.with("the database connection was lost or could not be had; retry later"))
	default:
		h.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeProblem(w, probInternal)
	}
}

func (h *handlers) product(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	p, err := h.svc.Product(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (h *handlers) products(w http.ResponseWriter, r *http.Request) {
	ids, err := ParseIDs(r.URL.Query().Get("ids"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	ps, err := h.svc.Products(r.Context(), ids)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	found := make(map[int64]bool, len(ps))
	for _, p := range ps {
		found[p.ID] = true
	}
	missing := []int64{}
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
			found[id] = true
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"products": ps, "missing": missing})
}

// decodeBody reads one JSON object into v (a pointer to a struct): at most
// MaxBodyBytes, no unknown fields, field names matched exactly (encoding/json
// alone would take "PRODUCT_ID" for "product_id"), nothing after it.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) (Problem, bool) {
	_, p, ok := readBody(w, r, v)
	return p, ok
}

// readBody is decodeBody that also returns the body as read, for a caller
// that must see a field's raw JSON (see requestKey).
func readBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, Problem, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, probBadRequest.with("Content-Type must be application/json"), false
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, probTooLarge.with(fmt.Sprintf("at most %d bytes", MaxBodyBytes)), false
		}
		return nil, probBadRequest.with("the body could not be read"), false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, probBadRequest.with("invalid JSON body: " + jsonDetail(err)), false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, probBadRequest.with("the body must hold a single JSON object"), false
	}
	if name, ok := unknownName(body, v); !ok {
		return nil, probBadRequest.with(fmt.Sprintf("invalid JSON body: unknown field %q (names are case-sensitive)", truncate(name))), false
	}
	return body, Problem{}, true
}

// jsonDetail says what is wrong with a JSON body in the API's terms: field
// names and JSON types, never Go's.
func jsonDetail(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("field %q must be a JSON %s", truncate(typ.Field), jsonType(typ.Type))
	case errors.As(err, &typ):
		return "the body must be a JSON object"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is empty or cut short"
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + truncate(name)
	}
	return "not the expected JSON object"
}

// jsonType names the JSON type that a Go type is decoded from.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64 {
		if t.Kind() >= reflect.Float32 {
			return "number"
		}
		return "integer"
	}
	return "value"
}

// publicDetail is err's message for a client: without the package and query
// name prefixes ("catalog: ", "reserve: ") that errors carry for the log.
func publicDetail(err error) string {
	msg := err.Error()
	for _, prefix := range append([]string{"catalog", "cachex", "lockx"}, QueryNames()...) {
		msg = strings.ReplaceAll(msg, prefix+": ", "")
	}
	return msg
}

// unknownName returns the first key of the JSON object body that is not
// exactly the json name of a field of the struct v points to.
func unknownName(body []byte, v any) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return "", true // not an object: the decoder has judged it
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "", true
	}
	known := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[cmp.Or(name, t.Field(i).Name)] = true
	}
	for k := range obj {
		if !known[k] {
			return k, false
		}
	}
	return "", true
}

func (h *handlers) updateProduct(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	var patch ProductPatch
	if p, ok := decodeBody(w, r, &patch); !ok {
		writeProblem(w, p)
		return
	}
	if err := validatePatch(patch); err != nil {
		writeProblem(w, probInvalid.with(err.Error()))
		return
	}
	p, err := h.svc.UpdateProduct(r.Context(), id, patch)
	if err != nil && !errors.Is(err, ErrStaleCache) {
		h.fail(w, r, err)
		return
	}
	if err != nil {
		h.log.WarnContext(r.Context(), "update committed, cache not invalidated", "product", id, "err", err)
	}
	writeJSON(w, http.StatusOK, p)
}

func validatePatch(p ProductPatch) error {
	switch {
	case p.Name == nil && p.Description == nil && p.PriceCents == nil && p.Attributes == nil:
		return errors.New("nothing to update: give name, description, price_cents or attributes")
	case p.Name != nil && (strings.TrimSpace(*p.Name) == "" || utf8.RuneCountInString(*p.Name) > 200):
		return errors.New("name must be 1..200 characters")
	case p.Description != nil && utf8.RuneCountInString(*p.Description) > 5000:
		return errors.New("description must be at most 5000 characters")
	case p.PriceCents != nil && (*p.PriceCents < 0 || *p.PriceCents > 100_000_000):
		return errors.New("price_cents must be within 0..100000000")
	case p.Attributes != nil && !isJSONObject(*p.Attributes):
		return errors.New("attributes must be a JSON object")
	case p.Name != nil && hasControl(*p.Name, false):
		return errors.New("name must not contain NUL or control characters")
	case p.Description != nil && hasControl(*p.Description, true):
		return errors.New("description must not contain NUL or control characters other than tab and line breaks")
	case p.Attributes != nil && !cleanJSON(*p.Attributes):
		return errors.New("attribute keys and values must not contain NUL or control characters")
	}
	return nil
}

func isJSONObject(b []byte) bool {
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m != nil
}

// statusClientClosed is the status recorded for a request whose client went
// away before the answer: no client reads it, and it is not a server error.
const statusClientClosed = 499

// isQueryCanceled reports a query that Postgres cancelled, as its
// statement_timeout does (SQLSTATE 57014).
func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// isConnectionLost reports an error of a database connection that was cut
// or could not be had: a server that went away (SQLSTATE class 08, 57P01..
// 57P03: terminated, shut down, not accepting connections) or is out of
// resources (class 53: too many connections, out of memory or disk), a
// connection that could not be made or was closed, a network error or an
// unexpected end of the stream. The request may be retried.
func isConnectionLost(err error) bool {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") ||
			slices.Contains([]string{"57P01", "57P02", "57P03"}, pgErr.Code)
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// hasPositiveTerm reports whether a search query (Postgres's websearch
// syntax) has a term that is neither the operator "or" nor excluded with a
// leading "-".
func hasPositiveTerm(q string) bool {
	for _, f := range strings.Fields(q) {
		f = strings.Trim(f, `"`)
		if f == "" || strings.EqualFold(f, "or") || strings.HasPrefix(f, "-") {
			continue
		}
		if strings.ContainsFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			return true
		}
	}
	return false
}

// hasControl reports whether s holds NUL or another control character
// (Postgres rejects NUL in text, and no field of the API needs the others);
// multiline allows tab and line breaks.
func hasControl(s string, multiline bool) bool {
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\t' || r == '\n' || r == '\r')) {
			return true
		}
	}
	return false
}

// cleanJSON reports whether no key or string value in the JSON document b
// has a control character (values may hold tab and line breaks).
func cleanJSON(b []byte) bool {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	var clean func(v any) bool
	clean = func(v any) bool {
		switch v := v.(type) {
		case string:
			return !hasControl(v, true)
		case []any:
			for _, e := range v {
				if !clean(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range v {
				if hasControl(k, false) || !clean(e) {
					return false
				}
			}
		}
		return true
	}
	return clean(v)
}

func (h *handlers) inventory(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	inv, err := h.svc.Inventory(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}

func (h *handlers) categoryStats(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	st, err := h.svc.CategoryStats(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *handlers) topProducts(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	limit, err := limitParam(r, 10, MaxTop)
	if err != nil {
		writeProblem(w, probInvalid.with(err.Error()))
		return
	}
	top, err := h.svc.TopProducts(r.Context(), id, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"category_id": id, "products": top})
}

func (h *handlers) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	switch n := utf8.RuneCountInString(q); {
	case strings.TrimSpace(q) == "":
		writeProblem(w, probBadRequest.with("q is required"))
		return
	case n > MaxQueryRunes || !utf8.ValidString(q) || hasControl(q, false):
		writeProblem(w, probInvalid.with(fmt.Sprintf("q must be valid UTF-8 of at most %d characters, without NUL or control characters", MaxQueryRunes)))
		return
	case !hasPositiveTerm(q):
		writeProblem(w, probInvalid.with("q needs at least one term to look for: exclusions (-word) alone would match the whole catalog"))
		return
	}
	limit, err := limitParam(r, 20, MaxSearchLimit)
	if err != nil {
		writeProblem(w, probInvalid.with(err.Error()))
		return
	}
	hits, err := h.svc.Search(r.Context(), q, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": NormalizeQuery(q), "hits": hits})
}

// DecodeReserveRequest reads and validates a reservation request; the
// Idempotency-Key header may carry the key instead of the body, or as well
// if both say the same (see requestKey).
func DecodeReserveRequest(w http.ResponseWriter, r *http.Request) (ReserveRequest, Problem, bool) {
	var req ReserveRequest
	body, p, ok := readBody(w, r, &req)
	if !ok {
		return req, p, false
	}
	key, keyProblem := requestKey(body, r.Header)
	req.IdempotencyKey = key
	switch {
	case req.ProductID <= 0:
		return req, probInvalid.with("product_id must be a positive integer"), false
	case req.Quantity < 1 || req.Quantity > MaxQuantity:
		return req, probInvalid.with(fmt.Sprintf("quantity must be within 1..%d", MaxQuantity)), false
	case keyProblem != "":
		return req, probInvalid.with(keyProblem), false
	case req.IdempotencyKey == "" || !utf8.ValidString(req.IdempotencyKey) || utf8.RuneCountInString(req.IdempotencyKey) > MaxIdempotencyKeyLen ||
		hasControl(req.IdempotencyKey, false):
		return req, probInvalid.with(fmt.Sprintf("idempotency_key (or the Idempotency-Key header) is required: 1..%d characters of UTF-8 without NUL or control characters", MaxIdempotencyKeyLen)), false
	}
	return req, Problem{}, true
}

func (h *handlers) reserve(w http.ResponseWriter, r *http.Request) {
	req, p, ok := DecodeReserveRequest(w, r)
	if !ok {
		writeProblem(w, p)
		return
	}
	res, created, err := h.svc.Reserve(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusOK // a replay of an earlier request
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/reservations/"+strconv.FormatInt(res.ID, 10))
	}
	writeJSON(w, status, res)
}

func (h *handlers) reservation(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	res, err := h.svc.Reservation(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handlers) cancel(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(chi.URLParam(r, "id"))
	if err != nil {
		writeProblem(w, probBadRequest.with(err.Error()))
		return
	}
	res, err := h.svc.Cancel(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handlers) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				h.log.ErrorContext(r.Context(), "panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeProblem(w, probInternal)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
