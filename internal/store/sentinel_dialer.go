package store

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelAwareDialer is the Dialer of a Sentinel-mode client: connections
// to a Sentinel give up sooner than those to a Redis server.
//
// go-redis asks its Sentinel for the master at each dial of a master
// connection, within that dial's deadline (DialTimeout), and moves to
// another Sentinel only when the question fails before that deadline. A
// Sentinel that stops answering (its node lost) held to the same timeouts
// as the dial never fails first: the client keeps asking it and never
// learns of the new master. So a Sentinel's every attempt (go-redis retries
// each question MaxRetries times) dials and waits at most a share of
// DialTimeout, leaving the last share to find another Sentinel.
//
// The dialer tells a Sentinel from a server by port: the ports of the
// Sentinel addresses given (the Sentinels go-redis discovers announce
// theirs, 26379 by convention, 6379 the servers').
func sentinelAwareDialer(o RedisOptions, cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	sentinelPorts := map[string]bool{}
	for _, a := range o.Addrs {
		if _, port, err := net.SplitHostPort(a); err == nil {
			sentinelPorts[port] = true
		}
	}
	limit := sentinelTimeout(o)
	server := redis.NewDialer(&redis.Options{DialTimeout: o.DialTimeout, TLSConfig: cfg})
	sentinel := redis.NewDialer(&redis.Options{DialTimeout: limit, TLSConfig: cfg})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, port, err := net.SplitHostPort(addr); err != nil || !sentinelPorts[port] {
			return server(ctx, network, addr)
		}
		conn, err := sentinel(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return capDeadlines(conn, limit), nil
	}
}

// sentinelTimeout is a Sentinel's share of DialTimeout: one per attempt
// go-redis makes (MaxRetries 0 meaning its default of 3 retries, -1 none),
// and one left over.
func sentinelTimeout(o RedisOptions) time.Duration {
	retries := o.MaxRetries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	return o.DialTimeout / time.Duration(retries+2)
}

// capDeadlines makes every read and write deadline go-redis sets on conn at
// most limit away. Zero (no deadline: a subscription waiting for messages)
// stays zero.
func capDeadlines(conn net.Conn, limit time.Duration) net.Conn {
	if tcp, ok := conn.(*net.TCPConn); ok {
		// Keep *net.TCPConn's SyscallConn: go-redis's pool checks idle
		// connections through it.
		return &cappedTCPConn{TCPConn: tcp, limit: limit}
	}
	return &cappedConn{Conn: conn, limit: limit}
}

func capped(t time.Time, limit time.Duration) time.Time {
	if latest := time.Now().Add(limit); !t.IsZero() && t.After(latest) {
		return latest
	}
	return t
}

type cappedConn struct {
	net.Conn
	limit time.Duration
}

func (c *cappedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(capped(t, c.limit)) }
func (c *cappedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(capped(t, c.limit))
}
func (c *cappedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(capped(t, c.limit))
}

type cappedTCPConn struct {
	*net.TCPConn
	limit time.Duration
}

func (c *cappedTCPConn) SetDeadline(t time.Time) error {
	return c.TCPConn.SetDeadline(capped(t, c.limit))
}
func (c *cappedTCPConn) SetReadDeadline(t time.Time) error {
	return c.TCPConn.SetReadDeadline(capped(t, c.limit))
}
func (c *cappedTCPConn) SetWriteDeadline(t time.Time) error {
	return c.TCPConn.SetWriteDeadline(capped(t, c.limit))
}

var _ syscall.Conn = (*cappedTCPConn)(nil)
