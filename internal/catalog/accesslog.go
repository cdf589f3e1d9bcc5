package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// requestIDHeader carries a request's id: taken from the request when it is
// a usable one, else generated, and always echoed on the response.
const requestIDHeader = "X-Request-Id"

// maxRequestID is the longest request id accepted from a caller.
const maxRequestID = 128

type requestIDKey struct{}

// requestID returns the id of the request ctx belongs to, or "".
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// usableRequestID reports whether a caller's id may be kept: 1 to
// maxRequestID characters of letters, digits and - _ . : only, so that no id
// can break a log line or a header.
func usableRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// accessLog gives every request an id (X-Request-Id, kept from the request
// when usable) and writes one line per request when it ends, at Debug:
// method, route (chi's pattern), status, duration_ms and, through the
// logger's handler, request_id (docs/architecture.md#logs). At Info they
// cost the API most of its capacity on two CPUs.
func (h *handlers) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(requestIDHeader)
		if !usableRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(requestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		h.log.Log(r.Context(), slog.LevelDebug, "request", "method", methodLabel(r.Method), "route", routePattern(r),
			"status", sw.answered(), "duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}

// withRequestID adds request_id, and trace_id and span_id when the request
// is traced, to every record logged with the context of a request.
type withRequestID struct{ slog.Handler }

func (h withRequestID) Handle(ctx context.Context, r slog.Record) error {
	if id := requestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h withRequestID) WithAttrs(attrs []slog.Attr) slog.Handler {
	return withRequestID{h.Handler.WithAttrs(attrs)}
}

func (h withRequestID) WithGroup(name string) slog.Handler {
	return withRequestID{h.Handler.WithGroup(name)}
}
