package cachex

import (
	"bytes"
	"testing"
	"time"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_767_225_600_123)
	for _, e := range []entry{
		{computedAt: now, expiry: now.Add(time.Minute), delta: 42 * time.Millisecond, payload: []byte(`{"id":7}`)},
		{computedAt: now, expiry: now.Add(time.Second), delta: 0, negative: true},
		{computedAt: now, expiry: now, delta: 2 * time.Hour, payload: []byte{}}, // delta saturates
	} {
		b := encodeEntry(nil, e)
		got, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", e, err)
		}
		wantDelta := min(e.delta, time.Duration(1<<32-1)*time.Microsecond)
		if !got.computedAt.Equal(e.computedAt) || !got.expiry.Equal(e.expiry) || got.delta != wantDelta ||
			got.negative != e.negative || !bytes.Equal(got.payload, e.payload) {
			t.Fatalf("round trip: got %+v, want %+v", got, e)
		}
	}
}

func TestEnvelopeRejectsWhatItDidNotWrite(t *testing.T) {
	t.Parallel()
	good := encodeEntry(nil, entry{computedAt: time.UnixMilli(1000), expiry: time.UnixMilli(2000), payload: []byte("x")})
	for name, b := range map[string][]byte{
		"empty":             nil,
		"short":             good[:envHeaderSize-1],
		"plain text":        []byte("this is not an envelope at all, just text"),
		"wrong magic":       append([]byte{0x00}, good[1:]...),
		"future version":    append([]byte{envMagic, 2}, good[2:]...),
		"unknown flag":      append([]byte{envMagic, envVersion, 0x80}, good[3:]...),
		"negative w/ value": append([]byte{envMagic, envVersion, flagNegative}, good[3:]...),
		"expiry < computed": encodeEntry(nil, entry{computedAt: time.UnixMilli(2000), expiry: time.UnixMilli(1000)}),
	} {
		if _, err := decodeEntry(b); err != errCorrupt {
			t.Errorf("%s: decode err = %v, want errCorrupt", name, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(nil, entry{computedAt: time.UnixMilli(1000), expiry: time.UnixMilli(2000), payload: []byte(`"v"`)}))
	f.Add(encodeEntry(nil, entry{computedAt: time.UnixMilli(1000), expiry: time.UnixMilli(2000), negative: true}))
	f.Add([]byte("hello"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		if again := encodeEntry(nil, e); !bytes.Equal(again, b) {
			t.Fatalf("decode/encode changed %x into %x", b, again)
		}
		if _, err := (JSON[string]{}).Unmarshal(e.payload); err != nil {
			return // a codec error is the caller's to count; no panic is what matters
		}
	})
}
