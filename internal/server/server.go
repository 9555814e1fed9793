// Package server runs the HTTP listeners, the API and the admin one, and
// their lifecycle: bind at start (a busy port fails start-up), drain at stop.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// HTTPServer is one listener and the http.Server on it.
type HTTPServer struct {
	name string // for messages: "API", "admin"
	flag string // the option that sets the address, for messages
	addr string
	srv  *http.Server
	ln   net.Listener
	log  *zap.Logger
	done chan struct{}
}

// NewHTTPServer returns a server for handler on addr; it binds on Start.
func NewHTTPServer(name, flag, addr string, handler http.Handler, o HTTPOptions, log *zap.Logger) *HTTPServer {
	return &HTTPServer{
		name: name, flag: flag, addr: addr, log: log,
		srv: &http.Server{
			Handler:           closeAfterChunked(handler),
			ReadHeaderTimeout: o.ReadHeaderTimeout,
			ReadTimeout:       o.ReadTimeout,
			WriteTimeout:      o.WriteTimeout,
			IdleTimeout:       o.IdleTimeout,
			MaxHeaderBytes:    o.MaxHeaderBytes,
			ErrorLog:          zap.NewStdLog(log.Named("http")),
		},
	}
}

// closeAfterChunked closes the connection after answering a request whose
// body came with a Transfer-Encoding. net/http frames such a body by the
// encoding, silently drops a Content-Length sent with it, and keeps the
// connection open for the next request; RFC 9112 section 6.3 requires the
// connection to be closed after responding, because a proxy in front that
// framed the request by its Content-Length would read what follows the body
// as a different request than this server does (request smuggling).
func closeAfterChunked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
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

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx ends, then closes what is left.
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
