package cachex

import (
	"encoding/json"
	"fmt"
)

// A Codec turns values into bytes and back. Unmarshal must never modify b:
// cachex hands it a view of the Redis reply without copying it. It may keep b
// (Raw does) as long as it, and whoever it returns b to, only reads it.
type Codec[V any] interface {
	Marshal(v V) ([]byte, error)
	Unmarshal(b []byte) (V, error)
}

// JSON is the default codec: encoding/json.
type JSON[V any] struct{}

// Marshal encodes v with encoding/json.
func (JSON[V]) Marshal(v V) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes b with encoding/json; unknown fields are ignored, so a
// cached value written by an older version of V still decodes.
func (JSON[V]) Unmarshal(b []byte) (V, error) {
	var v V
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("cachex: json: %w", err)
	}
	return v, nil
}

// Raw stores bytes as they are: an HTTP handler can cache a rendered response
// and serve it without decoding or copying. The bytes a read returns are
// read-only (like go-redis's Bytes()): copy them before changing them.
type Raw struct{}

// Marshal returns b itself.
func (Raw) Marshal(b []byte) ([]byte, error) { return b, nil }

// Unmarshal returns b itself, without a copy: read-only.
func (Raw) Unmarshal(b []byte) ([]byte, error) { return b, nil }
