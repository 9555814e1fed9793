package httpapi

import (
	"math/rand/v2"
	"net/http"
	"unsafe"
)

// newExchange starts the exchange of a request whose X-Request-ID values are
// incoming, and sets the response's X-Request-ID: the first incoming value
// if validRequestID accepts it, a new random id otherwise.
func newExchange(w http.ResponseWriter, incoming []string) *exchange {
	x := &exchange{rec: responseRecorder{ResponseWriter: w, status: http.StatusOK}}
	x.info = requestInfo{route: RouteUnmatched}
	if len(incoming) > 0 && validRequestID(incoming[0]) {
		x.info.id = incoming[0]
	} else {
		newRequestID(&x.idBytes)
		// The bytes live in x and are never written again, so the string
		// can share them instead of copying them into an allocation of its own.
		x.info.id = unsafe.String(&x.idBytes[0], len(x.idBytes))
	}
	x.idHeader[0] = x.info.id
	w.Header()["X-Request-Id"] = x.idHeader[:]
	return x
}

// validRequestID tells whether an incoming X-Request-ID is honoured: 1 to
// 128 of letters, digits and -._: (nothing that could forge a log field).
func validRequestID(in string) bool {
	if len(in) == 0 || len(in) > 128 {
		return false
	}
	for i := 0; i < len(in); i++ {
		c := in[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// newRequestID writes a random request id of 32 hex digits into b.
func newRequestID(b *[32]byte) {
	const hexdigits = "0123456789abcdef"
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := range 16 {
		b[i] = hexdigits[hi>>(60-4*i)&0xf]
		b[16+i] = hexdigits[lo>>(60-4*i)&0xf]
	}
}
