package catalog

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// requestKey returns a reservation request's idempotency key as the client
// sent it, or why it is refused (a problem detail). The body's
// idempotency_key and the Idempotency-Key header are trimmed alike
// (strings.TrimSpace), and must name the same key when both are sent: a
// silent choice between two keys could replay another request's hold. The
// body's key must be text: encoding/json turns a lone surrogate escape, or a
// byte that is not UTF-8, into U+FFFD, so distinct keys would become one.
// body has already decoded into a ReserveRequest.
func requestKey(body []byte, h http.Header) (key, problem string) {
	var field struct {
		Key json.RawMessage `json:"idempotency_key"`
	}
	_ = json.Unmarshal(body, &field) // cannot fail: the body decoded before
	var bodyKey string
	if len(field.Key) > 0 && field.Key[0] == '"' { // absent or null: no key
		if !utf8.Valid(field.Key) || hasLoneSurrogate(field.Key) {
			return "", `idempotency_key must be valid text: UTF-8, without a lone surrogate escape (\ud800-\udfff not in a high-low pair)`
		}
		if err := json.Unmarshal(field.Key, &bodyKey); err != nil {
			return "", "idempotency_key must be a JSON string"
		}
		bodyKey = strings.TrimSpace(bodyKey)
	}
	var headerKey string
	for i, v := range h.Values("Idempotency-Key") {
		v = strings.TrimSpace(v)
		if i > 0 && v != headerKey {
			return "", "the Idempotency-Key header is sent more than once with different keys"
		}
		headerKey = v
	}
	switch {
	case bodyKey != "" && headerKey != "" && bodyKey != headerKey:
		return "", "idempotency_key and the Idempotency-Key header differ: send the key once, or the same key in both"
	case bodyKey != "":
		return bodyKey, ""
	}
	return headerKey, ""
}

// hasLoneSurrogate reports whether the JSON string token raw (quotes
// included) has a \u escape of a UTF-16 surrogate (D800-DFFF) that is not
// half of a high-low pair: such an escape is not text, and encoding/json
// decodes it to U+FFFD. Hex digits are matched in either case.
func hasLoneSurrogate(raw []byte) bool {
	high := false // the previous character was an escaped high surrogate
	for i := 0; i < len(raw); {
		u, n := escapedUnit(raw[i:])
		low := 0xDC00 <= u && u <= 0xDFFF
		switch {
		case high && !low, !high && low:
			return true
		case high:
			high = false
		default:
			high = 0xD800 <= u && u <= 0xDBFF
		}
		i += n
	}
	return high
}

// escapedUnit returns the UTF-16 unit of the \uXXXX escape that b starts
// with, or -1 when b starts with another escape or character, and how many
// bytes that escape or character takes (a byte of a UTF-8 sequence counts as
// one: none of them is a backslash).
func escapedUnit(b []byte) (unit, n int) {
	switch {
	case len(b) < 2 || b[0] != '\\':
		return -1, 1
	case b[1] != 'u' || len(b) < 6:
		return -1, 2
	}
	u, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	if err != nil {
		return -1, 2
	}
	return int(u), 6
}
