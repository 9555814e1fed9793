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
var refusals = [...]struct{ from, to string }{
	{
		from: "HTTP/1.1 501 Not Implemented" + plainClose + "Unsupported transfer encoding",
		to:   "HTTP/1.1 400 Bad Request: unsupported transfer encoding" + plainClose + "400 Bad Request: unsupported transfer encoding",
	},
	{
		from: "HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + plainClose + "505 HTTP Version Not Supported: unsupported protocol version",
		to:   "HTTP/1.1 400 Bad Request: unsupported protocol version" + plainClose + "400 Bad Request: unsupported protocol version",
	},
}

// plainClose are the headers of net/http's own refusals.
const plainClose = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

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
	for _, r := range refusals {
		if len(p) == len(r.from) && string(p) == r.from {
			if _, err := c.TCPConn.Write([]byte(r.to)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.TCPConn.Write(p)
}
