package catalog

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Problem is an RFC 9457 problem detail. Type is a stable identifier a
// client can switch on (documented in openapi.yaml); Title is its
// human-readable summary; Detail says what was wrong with this request.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// The problem types of the API.
var (
	probBadRequest   = Problem{Type: "/problems/bad-request", Title: "The request is malformed", Status: http.StatusBadRequest}
	probInvalid      = Problem{Type: "/problems/invalid-parameter", Title: "A parameter is out of range or invalid", Status: http.StatusUnprocessableEntity}
	probNotFound     = Problem{Type: "/problems/not-found", Title: "No such resource", Status: http.StatusNotFound}
	probTooLarge     = Problem{Type: "/problems/too-large", Title: "The request body is too large", Status: http.StatusRequestEntityTooLarge}
	probInsufficient = Problem{Type: "/problems/insufficient-stock", Title: "Not enough stock for the reservation", Status: http.StatusConflict}
	probFenced       = Problem{Type: "/problems/fenced", Title: "The product's lock was lost before the warehouse gave the units: nothing was reserved; retry the same request", Status: http.StatusConflict}
	probIdemMismatch = Problem{Type: "/problems/idempotency-mismatch", Title: "The idempotency key was used for another request", Status: http.StatusUnprocessableEntity}
	probBusy         = Problem{Type: "/problems/busy", Title: "The product is busy or the lock service unavailable; retry", Status: http.StatusServiceUnavailable}
	probUnauthorized = Problem{Type: "/problems/unauthorized", Title: "A valid admin token is required", Status: http.StatusUnauthorized}
	probAdminOff     = Problem{Type: "/problems/admin-disabled", Title: "The admin API is disabled (no ADMIN_TOKEN)", Status: http.StatusNotFound}
	probMethod       = Problem{Type: "/problems/method-not-allowed", Title: "Method not allowed", Status: http.StatusMethodNotAllowed}
	probInternal     = Problem{Type: "/problems/internal", Title: "Internal error", Status: http.StatusInternalServerError}
	probUnavailable  = Problem{Type: "/problems/unavailable", Title: "A dependency is unavailable", Status: http.StatusServiceUnavailable}
)

// with returns p with a detail.
func (p Problem) with(detail string) Problem { p.Detail = detail; return p }

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, p Problem) {
	if p.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
