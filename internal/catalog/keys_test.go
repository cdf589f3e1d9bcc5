package catalog

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf16"
)

// reserveRaw sends a reservation of one unit of product whose
// idempotency_key is the JSON token tok exactly as written (e.g. `"\ud800"`),
// or has no key in the body when tok is empty.
func (a *testAPI) reserveRaw(product int64, tok string, header ...string) *httptest.ResponseRecorder {
	a.t.Helper()
	body := fmt.Sprintf(`{"product_id": %d, "quantity": 1}`, product)
	if tok != "" {
		body = fmt.Sprintf(`{"product_id": %d, "quantity": 1, "idempotency_key": %s}`, product, tok)
	}
	return a.do(http.MethodPost, "/v1/reservations", body, header...)
}

// TestKeyNotTextIsRefused: a body key that is not text (a lone surrogate
// escape, a byte that is not UTF-8) is refused with 422, and nothing is
// reserved; encoding/json alone would read each as U+FFFD.
func TestKeyNotTextIsRefused(t *testing.T) {
	t.Parallel()
	const product = 73
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 100, 0)
	for name, tok := range map[string]string{
		"lone high":                 `"\ud800"`,
		"lone low":                  `"\udfff"`,
		"lone high inside":          `"a\ud800b"`,
		"lone high, upper case hex": `"\uDBFF"`,
		"low before high":           `"\udc00\ud800"`,
		"high, then a pair":         `"\ud800\ud800\udc00"`,
		"high, then an escaped \\":  `"\ud800\\udc00"`,
		"high at the end":           `"key-\ud83d"`,
		"not UTF-8":                 "\"k\xff\"",
		"a surrogate as UTF-8":      "\"k\xed\xa0\x80\"",
	} {
		t.Run(name, func(t *testing.T) {
			p := checkProblem(t, a.reserveRaw(product, tok), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
			if !strings.Contains(p.Detail, "valid text") {
				t.Errorf("detail %q does not say the key is not valid text", p.Detail)
			}
			// The same with a header key that would otherwise be used.
			checkProblem(t, a.reserveRaw(product, tok, "Idempotency-Key", "fine"), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
			if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1", product); n != 0 {
				t.Errorf("%d reservations of product %d, want 0", n, product)
			}
			if stock, reserved, _ := a.inventoryRow(product); stock != 100 || reserved != 0 {
				t.Errorf("inventory stock %d reserved %d, want 100 and 0", stock, reserved)
			}
		})
	}
}

// TestKeyOldCollisionsAreDistinct: "\ud800", "\udfff" and U+FFFD were one
// key (the first two decode to the third), so the later two were answered
// 200 with the first's hold. Now the lone surrogates are refused, and a
// valid pair is a key of its own.
func TestKeyOldCollisionsAreDistinct(t *testing.T) {
	t.Parallel()
	const product = 74
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 100, 0)
	var first Reservation
	decodeJSON(t, a.reserveRaw(product, `"\ufffd"`), http.StatusCreated, &first)
	for _, tok := range []string{`"\ud800"`, `"\udfff"`} {
		checkProblem(t, a.reserveRaw(product, tok), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
	}
	var again Reservation
	decodeJSON(t, a.reserveRaw(product, `"`+"\ufffd"+`"`), http.StatusOK, &again) // U+FFFD as UTF-8: the same key
	if again.ID != first.ID {
		t.Errorf("U+FFFD as UTF-8 replayed reservation %d, want %d", again.ID, first.ID)
	}
	var pair Reservation
	decodeJSON(t, a.reserveRaw(product, `"\ud800\udc00"`), http.StatusCreated, &pair)
	if pair.ID == first.ID || pair.IdempotencyKey != "\U00010000" {
		t.Errorf("the pair \\ud800\\udc00 got reservation %d key %q; want a new one (not %d) with key U+10000", pair.ID, pair.IdempotencyKey, first.ID)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1", product); n != 2 {
		t.Errorf("%d reservations of product %d, want 2", n, product)
	}
}

// TestKeySameAndDifferent: a key is what the client sent, wherever it sent
// it: an escaped surrogate pair equals the character as UTF-8, the body's
// key is trimmed like the header's, and a header and a body that name
// different keys are refused rather than one silently chosen.
func TestKeySameAndDifferent(t *testing.T) {
	t.Parallel()
	const product = 75
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 100, 0)
	type send struct {
		tok    string   // the body's idempotency_key as a JSON token; "" for none
		header []string // e.g. {"Idempotency-Key", "k"}
		status int
	}
	hdr := func(k string) []string { return []string{"Idempotency-Key", k} }
	for _, c := range []struct {
		name    string
		sends   []send // every 200 must replay the first 201
		key     string // the key stored, when something is
		problem string // what a 422's detail says
	}{
		{name: "escaped pair equals raw UTF-8", key: "pair-\U0001F600", sends: []send{
			{tok: `"pair-\ud83d\ude00"`, status: 201},
			{tok: `"pair-` + "\U0001F600" + `"`, status: 200},
			{tok: `"pair-\uD83D\uDE00"`, status: 200},
			{header: hdr("pair-\U0001F600"), status: 200},
		}},
		{name: "body trimmed like header", key: "trim", sends: []send{
			{tok: `" trim "`, status: 201},
			{header: hdr("trim"), status: 200},
			{tok: `"\ttrim\n"`, status: 200},
			{header: hdr(" trim\t"), status: 200},
		}},
		{name: "header and a different body", problem: "differ", sends: []send{
			{tok: `"b-diff"`, header: hdr("a-diff"), status: 422},
			{tok: `" b-diff "`, header: hdr("a-diff"), status: 422},
		}},
		{name: "header and the same body", key: "same", sends: []send{
			{tok: `"same"`, header: hdr("same"), status: 201},
			{tok: `" same"`, header: hdr("same "), status: 200},
			{tok: `"same"`, status: 200},
		}},
		{name: "blank body key, header key", key: "blank", sends: []send{
			{tok: `"  "`, header: hdr("blank"), status: 201},
		}},
		{name: "blank both", problem: "is required", sends: []send{
			{tok: `" \t "`, header: hdr("  "), status: 422},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first Reservation
			for i, s := range c.sends {
				rec := a.reserveRaw(product, s.tok, s.header...)
				switch s.status {
				case http.StatusUnprocessableEntity:
					p := checkProblem(t, rec, s.status, "/problems/invalid-parameter")
					if !strings.Contains(p.Detail, c.problem) {
						t.Errorf("send %d: detail %q does not say %q", i, p.Detail, c.problem)
					}
					continue
				case http.StatusCreated:
					decodeJSON(t, rec, s.status, &first)
					continue
				}
				var res Reservation
				decodeJSON(t, rec, s.status, &res)
				if res.ID != first.ID {
					t.Errorf("send %d replayed reservation %d, want %d", i, res.ID, first.ID)
				}
			}
			if c.key == "" {
				return
			}
			if first.IdempotencyKey != c.key {
				t.Errorf("stored key %q, want %q", first.IdempotencyKey, c.key)
			}
			if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = $1", c.key); n != 1 {
				t.Errorf("%d reservations under %q, want 1", n, c.key)
			}
		})
	}
	// Only the cases that stored a key wrote anything.
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1", product); n != 4 {
		t.Errorf("%d reservations of product %d, want 4", n, product)
	}
}

// TestKeyHeaderSentTwice: two Idempotency-Key headers must agree, as a
// header and a body must.
func TestKeyHeaderSentTwice(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		values []string
		ok     bool
	}{
		"different": {[]string{"k1", "k2"}, false},
		"same":      {[]string{"k1", " k1"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/reservations", strings.NewReader(`{"product_id": 1, "quantity": 1}`))
			for _, v := range c.values {
				r.Header.Add("Idempotency-Key", v)
			}
			req, p, ok := DecodeReserveRequest(httptest.NewRecorder(), r)
			switch {
			case c.ok && (!ok || req.IdempotencyKey != "k1"):
				t.Errorf("headers %q: key %q, problem %+v; want k1", c.values, req.IdempotencyKey, p)
			case !c.ok && (ok || p.Type != probInvalid.Type || !strings.Contains(p.Detail, "different")):
				t.Errorf("headers %q: key %q, problem %+v; want %s", c.values, req.IdempotencyKey, p, probInvalid.Type)
			}
		})
	}
}

// TestKeyLoneSurrogateScanner checks hasLoneSurrogate on JSON string
// tokens, escaped backslashes and hex case included.
func TestKeyLoneSurrogateScanner(t *testing.T) {
	t.Parallel()
	for tok, want := range map[string]bool{
		`""`:                     false,
		`"plain"`:                false,
		`"\ud800"`:               true,
		`"\udfff"`:               true,
		`"a\ud800b"`:             true,
		`"\ud800\udc00"`:         false,
		`"\uD83D\uDE00"`:         false,
		`"\uD83d\ude00"`:         false,
		`"\udc00\ud800"`:         true,
		`"\ud800\ud800\udc00"`:   true,
		`"\ud800\udc00\udc00"`:   true,
		`"\ud800\\udc00"`:        true,
		`"\\ud800"`:              false, // a backslash, then "ud800"
		`"\\\ud800"`:             true,
		`"\\\\ud800"`:            false,
		`"\ud7ff\ue000"`:         false, // just outside the surrogates
		`"\ufffd"`:               false,
		`"\ud800\n\udc00"`:       true,
		`"\u00e9\"\/\b"`:         false,
		`"` + "\U0001F600" + `"`: false,
	} {
		if got := hasLoneSurrogate([]byte(tok)); got != want {
			t.Errorf("hasLoneSurrogate(%s) = %v, want %v", tok, got, want)
		}
	}
}

// FuzzKeyLoneSurrogate checks hasLoneSurrogate against unicode/utf16 on
// strings of UTF-16 units written as JSON: each unit escaped (hex in either
// case) or, if printable ASCII, as itself. A token has a lone surrogate
// exactly when utf16.Decode makes a U+FFFD that was not among the units;
// otherwise encoding/json must decode it to what utf16 does.
func FuzzKeyLoneSurrogate(f *testing.F) {
	unit := func(u uint16, style byte) []byte { return []byte{byte(u >> 8), byte(u), style} }
	for _, seed := range [][]uint16{
		{0xD800}, {0xDFFF}, {'a', 0xD800, 'b'}, {0xD800, 0xDC00}, {0xDBFF, 0xDFFF}, {0xDC00, 0xD800},
		{'\\', 'u', 'd', '8', '0', '0'}, {'\\', 0xD800}, {0xFFFD}, {0xD83D, 0xDE00, 0xD83D}, {},
	} {
		for _, style := range []byte{0, 1, 2, 3} {
			var data []byte
			for _, u := range seed {
				data = append(data, unit(u, style)...)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var units []uint16
		tok := []byte{'"'}
		for ; len(data) >= 3; data = data[3:] {
			u, style := uint16(data[0])<<8|uint16(data[1]), data[2]
			units = append(units, u)
			switch hex := "%04x"; {
			case style&1 == 1 && u >= 0x20 && u < 0x7f && u != '"' && u != '\\':
				tok = append(tok, byte(u))
			case style&1 == 1 && (u == '"' || u == '\\'):
				tok = append(tok, '\\', byte(u))
			default:
				if style&2 == 2 {
					hex = "%04X"
				}
				tok = fmt.Appendf(tok, `\u`+hex, u)
			}
		}
		tok = append(tok, '"')
		decoded := utf16.Decode(units)
		// utf16.Decode keeps other units and pairs, and makes each lone
		// surrogate U+FFFD.
		want := count(decoded, 0xFFFD) > count(units, 0xFFFD)
		if got := hasLoneSurrogate(tok); got != want {
			t.Fatalf("hasLoneSurrogate(%s) = %v, want %v", tok, got, want)
		}
		if want {
			return
		}
		r := httptest.NewRequest(http.MethodPost, "/v1/reservations",
			strings.NewReader(fmt.Sprintf(`{"product_id": 1, "quantity": 1, "idempotency_key": %s}`, tok)))
		req, p, ok := DecodeReserveRequest(httptest.NewRecorder(), r)
		if key := strings.TrimSpace(string(decoded)); ok && req.IdempotencyKey != key {
			t.Fatalf("%s decoded to key %q, want %q", tok, req.IdempotencyKey, key)
		} else if !ok && strings.Contains(p.Detail, "valid text") {
			t.Fatalf("%s refused as not text: %+v", tok, p)
		}
	})
}

// count counts x in xs.
func count[T comparable](xs []T, x T) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
