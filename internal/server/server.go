// Package server runs the HTTP listeners, the API and the admin one, and
// their lifecycle: bind at start (a busy port fails start-up), drain at stop.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// HTTPOptions bound what one connection can cost the server.
type HTTPOptions struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

// idleGrace is how long a kept-alive connection must have been idle, since
// the drain began, before the drain closes it. Closing an idle connection races with a client that
// is sending a request on it at that moment; that request fails (EOF or
// reset) and, for a POST, the client cannot know whether it was processed,
// so it does not retry. A connection in use is instead closed after its
// next response ("Connection: close"), which is race-free; only connections
// nobody has used for idleGrace are closed under the client.
const idleGrace = time.Second

// HTTPServer is one listener and the http.Server on it.
type HTTPServer struct {
	name     string // for messages: "API", "admin"
	flag     string // the option that sets the address, for messages
	addr     string
	srv      *http.Server
	ln       net.Listener
	log      *zap.Logger
	done     chan struct{}
	draining atomic.Bool // answer "Connection: close": Shutdown has begun
	conns    *connTracker
}

// NewHTTPServer returns a server for handler on addr; it binds on Start.
func NewHTTPServer(name, flag, addr string, handler http.Handler, o HTTPOptions, log *zap.Logger) *HTTPServer {
	s := &HTTPServer{name: name, flag: flag, addr: addr, log: log, conns: newConnTracker()}
	s.srv = &http.Server{
		Handler:           s.closeConnection(handler),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
		ConnState:         s.conns.track,
	}
	return s
}

// closeConnection answers with "Connection: close" once the server drains,
// so that every kept-alive connection in use ends cleanly after its response
// and its client dials again (another replica, once this one's listener is
// closed).
//
// It also closes the connection after a request whose body came with a
// Transfer-Encoding. net/http frames such a body by the encoding, silently
// drops a Content-Length sent with it, and keeps the connection open; RFC
// 9112 section 6.3 requires closing it, because a proxy in front that framed
// the request by its Content-Length would read what follows the body as a
// different request than this server does (request smuggling).
func (s *HTTPServer) closeConnection(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() || len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// connTracker knows each open connection's state and since when. net/http
// reports two state changes a request (active, idle), from every
// connection's goroutine at once: a connection's record is made once, when
// it opens, and changed with atomics after, so that no lock shared between
// connections (nor a map write) is on a request's path.
type connTracker struct {
	conns sync.Map // net.Conn → *connRecord
	// epoch is what records count their time from: a monotonic clock
	// reading, so that a step of the wall clock cannot settle a connection
	// early or late.
	epoch time.Time
}

func newConnTracker() *connTracker { return &connTracker{epoch: time.Now()} }

type connRecord struct {
	state atomic.Int32 // an http.ConnState
	// since is when the connection opened or last went idle, in nanoseconds
	// from the tracker's epoch; an active connection is never settled,
	// whatever its time.
	since atomic.Int64
}

type connState struct {
	state http.ConnState
	since time.Time
}

func (c *connTracker) track(conn net.Conn, state http.ConnState) {
	switch state {
	case http.StateHijacked, http.StateClosed:
		c.conns.Delete(conn)
		return
	case http.StateNew:
	default:
		if v, ok := c.conns.Load(conn); ok {
			r := v.(*connRecord)
			if state != http.StateActive {
				// Before the state: settled, reading the new state, then
				// reads this time or a later one.
				r.since.Store(c.sinceEpoch())
			}
			r.state.Store(int32(state))
			return
		}
		// net/http reports StateNew first; a record is made all the same.
	}
	c.conns.Store(conn, c.newRecord(state))
}

func (c *connTracker) newRecord(state http.ConnState) *connRecord {
	r := new(connRecord)
	r.state.Store(int32(state))
	r.since.Store(c.sinceEpoch())
	return r
}

// sinceEpoch is now as a record stores it: nanoseconds from the epoch.
func (c *connTracker) sinceEpoch() int64 { return int64(time.Since(c.epoch)) }

// load reads r: its state first, then its time (see track).
func (c *connTracker) load(r *connRecord) connState {
	state := http.ConnState(r.state.Load())
	return connState{state: state, since: c.epoch.Add(time.Duration(r.since.Load()))}
}

// settled says every open connection has been idle (or new, with no request
// yet) for at least grace and has no unread bytes waiting: closing them now
// cuts no request short. The unread bytes matter when this process was
// stalled (CPU throttling, a long pause): net/http then still counts as idle
// a connection whose next request has already arrived.
func (c *connTracker) settled(now, drainStart time.Time, grace time.Duration) bool {
	settled := true
	c.conns.Range(func(k, v any) bool {
		cs := c.load(v.(*connRecord))
		// Idle since the drain began, not since its last use: a client
		// whose busy connections the drain closes falls back on the ones it
		// had left unused in its pool, whatever their age.
		if cs.state == http.StateActive || now.Sub(later(cs.since, drainStart)) < grace {
			settled = false
		} else if n, ok := pendingBytes(k.(net.Conn)); ok && n > 0 {
			settled = false
		}
		return settled
	})
	return settled
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Start binds the listener synchronously, so that a busy port fails
// start-up, then serves in a goroutine.
func (s *HTTPServer) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("%s listener on %q (%s): %w", s.name, s.addr, s.flag, err)
	}
	s.ln = ln
	s.done = make(chan struct{})
	s.log.Info(s.name+" listening", zap.String("addr", ln.Addr().String()))
	go func() {
		defer close(s.done)
		// net.ErrClosed: Shutdown closed the listener (see there).
		if err := s.srv.Serve(refusalListener{ln}); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.log.Error(s.name+" server failed", zap.Error(err))
		}
	}()
	return nil
}

// Addr is the bound address, known after Start.
func (s *HTTPServer) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections, lets every kept-alive connection in
// use end after its next response, closes the ones left idle for idleGrace,
// and waits for in-flight requests until ctx ends, then closes what is left.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	// Close the listener before net/http's Shutdown, which first marks the
	// server as shutting down, so that responses say "Connection: close"
	// and their clients dial again, and only then closes its listeners. A
	// dial landing in between waits in the kernel's accept queue of a
	// listener about to close and is reset after its request went out,
	// which a client cannot safely retry; with the listener closed first
	// every such dial is refused, which a client can retry elsewhere.
	// Serve returns on the closed listener; Shutdown drains what it left.
	_ = s.ln.Close()
	<-s.done
	// Only now, with dials refused, may responses say "Connection: close":
	// a client told so dials again at once, and a dial that lands just
	// before the listener closes is reset after its request went out.
	s.draining.Store(true)
	drainStart := time.Now()
	// net/http's Shutdown closes idle connections at once, under a client
	// that may be sending on one: wait until the connections in use have
	// closed themselves and the rest have been idle for idleGrace.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil && !s.conns.settled(time.Now(), drainStart, idleGrace) {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
		err = fmt.Errorf("draining the %s server: %w", s.name, err)
	}
	return err
}

// Options configure the listeners and the shutdown sequence.
type Options struct {
	HTTPAddr     string
	AdminAddr    string
	HTTP         HTTPOptions
	ReadyTimeout time.Duration
	// ShutdownDelay is how long the API keeps serving, with /readyz failing,
	// before its listener closes: time for load balancers to stop sending.
	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration
	Pprof           bool
}
