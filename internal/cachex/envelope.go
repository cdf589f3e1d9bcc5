package cachex

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"
	"unsafe"
)

// The envelope is what cachex stores under a key: a 23-byte header with the
// XFetch inputs (computedAt, logical expiry, delta) and flags (negative,
// tombstone), then the codec's bytes, so one GET reads everything; the
// constants below are the byte layout.
const (
	envMagic      = 0xCE
	envVersion    = 1
	envHeaderSize = 23
	flagNegative  = 1 << 0
	flagTombstone = 1 << 1
)

// errCorrupt reports a value that is not a cachex envelope of this version.
var errCorrupt = errors.New("cachex: corrupt or foreign cache entry")

// entry is a decoded envelope.
type entry struct {
	computedAt time.Time
	expiry     time.Time
	delta      time.Duration
	negative   bool
	tombstone  bool
	payload    []byte // aliases the decoded buffer
	raw        string // everything stored under the key ("" when absent): its identity
	valid      bool   // set by decodeReply: a value or a negative answer, fresh or expired
}

// encodeEntry appends the envelope of e with payload to dst.
func encodeEntry(dst []byte, e entry) []byte {
	var h [envHeaderSize]byte
	h[0], h[1] = envMagic, envVersion
	if e.negative {
		h[2] = flagNegative
	}
	binary.BigEndian.PutUint64(h[3:], uint64(e.computedAt.UnixMilli()))
	binary.BigEndian.PutUint64(h[11:], uint64(e.expiry.UnixMilli()))
	us := e.delta.Microseconds()
	us = max(0, min(us, 1<<32-1)) // saturate: a recompute of more than 71 minutes is "long"
	binary.BigEndian.PutUint32(h[19:], uint32(us))
	dst = append(dst, h[:]...)
	return append(dst, e.payload...)
}

// decodeEntry parses an envelope. It never panics, whatever b holds, and
// rejects anything this version did not write.
func decodeEntry(b []byte) (entry, error) {
	if len(b) < envHeaderSize || b[0] != envMagic || b[1] != envVersion || b[2]&^(flagNegative|flagTombstone) != 0 {
		return entry{}, errCorrupt
	}
	computed := int64(binary.BigEndian.Uint64(b[3:]))
	expiry := int64(binary.BigEndian.Uint64(b[11:]))
	if computed < 0 || expiry < computed {
		return entry{}, errCorrupt
	}
	e := entry{
		computedAt: time.UnixMilli(computed),
		expiry:     time.UnixMilli(expiry),
		delta:      time.Duration(binary.BigEndian.Uint32(b[19:])) * time.Microsecond,
		negative:   b[2]&flagNegative != 0,
		tombstone:  b[2]&flagTombstone != 0,
		payload:    b[envHeaderSize:],
	}
	if e.negative && (len(e.payload) > 0 || e.tombstone) {
		return entry{}, errCorrupt
	}
	return e, nil
}

// tombstone returns what Invalidate stores: an envelope that no read serves
// and no write made before it can match (its payload is random).
func tombstone(now time.Time) []byte {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	b := encodeEntry(nil, entry{computedAt: now, expiry: now, payload: id})
	b[2] = flagTombstone
	return b
}

// identity is what the scripts compare a stored value with (identitySrc):
// the SHA-1 of everything stored under the key, or "" when it held no string
// (absent, or a key of another type, which MGET cannot tell apart: either is
// overwritten). It depends on no byte offset of the envelope.
func (e *entry) identity() string {
	if e == nil || e.raw == "" {
		return ""
	}
	sum := sha1.Sum(bytesOf(e.raw))
	return hex.EncodeToString(sum[:])
}

// bytesOf views a Redis reply as bytes without copying it. The bytes must not
// be modified: decodeEntry and codecs only read them (see Codec).
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
