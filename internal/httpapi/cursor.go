package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// A page cursor is opaque to clients. It carries the id the next page starts
// after, a version byte and a check of both, base64url without padding:
//
//	version (1) | id, big-endian (8) | SHA-256("plantstore/cursor" | version | id)[:4]
//
// The check tells a cursor this service issued from a mistyped, truncated or
// invented one (40009). It is not a secret: a cursor is only a position in a
// listing the client may read anyway, so a forged one gains nothing.
const cursorVersion = 1

var errBadCursor = errors.New("not a cursor this service issued")

// cursorEncoding is strict: one string per cursor, no ignored newlines.
var cursorEncoding = base64.RawURLEncoding.Strict()

// EncodeCursor returns the cursor of the page that starts after id.
func EncodeCursor(after int64) string {
	var b [13]byte
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(after))
	sum := cursorCheck(b[:9])
	copy(b[9:], sum[:4])
	return cursorEncoding.EncodeToString(b[:])
}

// DecodeCursor is EncodeCursor's inverse; anything it did not make is
// refused.
func DecodeCursor(s string) (int64, error) {
	if len(s) != cursorEncoding.EncodedLen(13) {
		return 0, errBadCursor
	}
	var b [13]byte
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != 13 || b[0] != cursorVersion {
		return 0, errBadCursor
	}
	sum := cursorCheck(b[:9])
	if string(sum[:4]) != string(b[9:]) {
		return 0, errBadCursor
	}
	return int64(binary.BigEndian.Uint64(b[1:9])), nil
}

func cursorCheck(payload []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte("plantstore/cursor"), payload...))
}
