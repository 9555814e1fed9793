// Command floor is the performance floor of plantstore: the least a server
// can do and still honour POST /plants's contract on Redis. It reads the
// body, decodes it with encoding/json, stores it with one SET key value NX GET
// (the key shape the service uses), encodes the Plant and answers 200, or 409
// when a different plant holds the id. Nothing else: no authentication, no
// validation, no telemetry. GET /readyz (a Redis ping) exists only so that
// the harness can time its start-up the way it times the service's.
//
// The harness runs it as a process of its own so that its CPU time and
// resident memory are measured like the service's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

type createRequest struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag"`
}

type plant struct {
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

type floor struct {
	rdb    *redis.Client
	prefix string
}

func (f *floor) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the body", http.StatusBadRequest)
		return
	}
	var in createRequest
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, "malformed JSON", http.StatusBadRequest)
		return
	}
	value, err := json.Marshal(plant{Name: in.Name, Tag: in.Tag})
	if err != nil {
		http.Error(w, "encoding", http.StatusInternalServerError)
		return
	}
	key := f.prefix + "plant:{" + strconv.FormatInt(in.ID, 10) + "}"
	status := http.StatusOK
	old, err := f.rdb.SetArgs(r.Context(), key, value, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil): // stored
	case err != nil:
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	case old != string(value):
		status, value = http.StatusConflict, []byte(old)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(value)
}

func (f *floor) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 500*time.Millisecond)
	defer cancel()
	if err := f.rdb.Ping(ctx).Err(); err != nil {
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	redisAddr := flag.String("redis-addr", "", "Redis address")
	prefix := flag.String("redis-key-prefix", "plantstore:", "prefix of every Redis key")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log, *addr, *redisAddr, *prefix); err != nil {
		log.Error("floor failed", "error", err.Error())
		os.Exit(1)
	}
}

func run(log *slog.Logger, addr, redisAddr, prefix string) error {
	if redisAddr == "" {
		return errors.New("--redis-addr is required")
	}
	// The service's client settings, less its options that cost nothing here.
	rdb := redis.NewClient(&redis.Options{
		Addr:            redisAddr,
		DisableIdentity: true,
		DialTimeout:     time.Second,
		ReadTimeout:     time.Second,
		WriteTimeout:    time.Second,
	})
	defer rdb.Close()
	f := &floor{rdb: rdb, prefix: prefix}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /plants", f.create)
	mux.HandleFunc("GET /readyz", f.readyz)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// The harness reads the address from these lines, as it does the service's.
	log.Info("API listening", "addr", ln.Addr().String())
	log.Info("admin listening", "addr", ln.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
