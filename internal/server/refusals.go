package server

import (
	"net"
)

// net/http refuses some requests itself, before any handler runs, and
// answers two of them with a 5xx: a Transfer-Encoding other than "chunked"
// (501, as RFC 9112 section 6.1 suggests) and an HTTP version it does not
// speak, such as HTTP/2.0 on this HTTP/1 listener (505). Both are the
// client's mistake, or a request smuggling attempt, not a failure of the
// service; as 5xx they would count against its availability on every load
// balancer and dashboard in front of it, and let anyone trigger 5xx alerts.
// refusalListener rewrites exactly these two answers, byte for byte as
// net/http writes them straight to the connection, into 400s; the
// connection is closed after them as before.
var refusals = map[string]string{
	"HTTP/1.1 501 Not Implemented" + plainClose + "Unsupported transfer encoding":                                                                         "HTTP/1.1 400 Bad Request: unsupported transfer encoding" + plainClose + "400 Bad Request: unsupported transfer encoding",
	"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + plainClose + "505 HTTP Version Not Supported: unsupported protocol version": "HTTP/1.1 400 Bad Request: unsupported protocol version" + plainClose + "400 Bad Request: unsupported protocol version",
}

// plainClose are the headers of net/http's own refusals.
const plainClose = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// refusalLengths are the lengths of the answers to rewrite: a write of any
// other length goes through without a lookup.
var refusalLengths = func() map[int]bool {
	m := map[int]bool{}
	for k := range refusals {
		m[len(k)] = true
	}
	return m
}()

type refusalListener struct{ net.Listener }

func (l refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &refusalConn{TCPConn: tc}, nil
	}
	return c, nil
}

// refusalConn is a TCP connection whose writes of net/http's 5xx refusals
// become 400s. It embeds *net.TCPConn so that net/http still finds the
// methods it looks for (CloseWrite, ReadFrom).
type refusalConn struct {
	*net.TCPConn
}

func (c *refusalConn) Write(p []byte) (int, error) {
	if refusalLengths[len(p)] {
		if r, ok := refusals[string(p)]; ok {
			if _, err := c.TCPConn.Write([]byte(r)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.TCPConn.Write(p)
}
