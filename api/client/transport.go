package client

import (
	"net"
	"net/http"
	"time"
)

// How the default transport finds a dead peer: a pod or a Gateway replica
// whose node is gone answers nothing, neither a reset nor a close.
const (
	// dialTimeout bounds a connect: on a healthy network it takes
	// milliseconds; a SYN to a vanished address is never answered, and
	// net/http's default waits 30 s for it.
	dialTimeout = 5 * time.Second
	// healthCheckAfter is how long an HTTP/2 connection may go without a
	// frame before the client pings it, and pingTimeout how long the ping
	// may go unanswered before the connection is closed. Without them a
	// connection to a vanished peer is kept, and every request and every
	// retry sent on it (HTTP/2 sends them all on one connection) waits for
	// its timeout. A ping that times out fails every request in flight on
	// the connection, so it leaves a live peer, or a caller, starved of CPU
	// for seconds (a node's loss is such a moment) time to answer; Go's own
	// default is 15 s.
	healthCheckAfter = 3 * time.Second
	pingTimeout      = 5 * time.Second
)

// NewTransport returns the transport of New's default HTTP client: net/http's
// default transport (proxy from the environment, HTTP/2 over TLS, keep-alive)
// with a connect timeout of 5 s and HTTP/2 health checks, so that a
// connection to a peer that vanished is closed within about 8 s and a retry
// dials anew. Callers that bring their own http.Client (WithHTTPDoer), to
// set TLS roots say, can start from it.
func NewTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: healthCheckAfter, PingTimeout: pingTimeout}
	return tr
}
