// Command floor is the performance floor of plantstore: the least a server
// can do and still honour POST /plants's contract on Redis. It reads the
// body, decodes it with encoding/json, stores it with one SET key value NX GET
// (the key shape the service uses), encodes the Plant and answers 200, or 409
// when a different plant holds the id. Nothing else: no authentication, no
// validation, no telemetry. GET /readyz (a Redis ping) exists only so that
// the harness can time its start-up the way it times the service's.
//
// API 1.1.0's routes do the same Redis work as the service, on its key
// layout (the service's own internal/store names its keys), so that they read what the service created:
// GET /plants/{id} one GET and one decode; GET /plants?limit=N one pipeline
// of a ZRANGE BYLEX per shard, a merge, one pipeline of MGETs, and a Link to
// the next page whose cursor is the last id in decimal; DELETE /plants/{id}
// the service's delete script.
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
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/store"
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

// plantBody is a plant as GET answers it.
type plantBody struct {
	ID   int64   `json:"id"`
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

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func (f *floor) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	v, err := f.rdb.Get(r.Context(), store.PlantKey(f.prefix, id)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		http.Error(w, "no such plant", http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	var p plant
	if err := json.Unmarshal(v, &p); err != nil {
		http.Error(w, "decoding", http.StatusInternalServerError)
		return
	}
	writeJSON(w, plantBody{ID: id, Name: p.Name, Tag: p.Tag})
}

// deleteScript removes a plant and its index entry in one step, as the
// service's delete does; it returns 1 when the plant was there.
var deleteScript = redis.NewScript(`
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

func (f *floor) remove(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	n, err := deleteScript.Run(r.Context(), f.rdb,
		[]string{store.PlantKey(f.prefix, id), store.PlantIndexKey(f.prefix, id)}, store.IndexMember(id)).Int()
	switch {
	case err != nil:
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	case n == 0:
		http.Error(w, "no such plant", http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *floor) list(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			http.Error(w, "bad limit", http.StatusBadRequest)
			return
		}
		limit = n
	}
	start := "-"
	if s := q.Get("cursor"); s != "" {
		after, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "bad cursor", http.StatusBadRequest)
			return
		}
		start = "(" + store.IndexMember(after)
	}
	ranges := make([]*redis.StringSliceCmd, store.Shards)
	if _, err := f.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range store.Shards {
			ranges[s] = pipe.ZRangeArgs(ctx, redis.ZRangeArgs{
				Key: store.PlantIndexKey(f.prefix, int64(s)), Start: start, Stop: "+", ByLex: true, Count: int64(limit) + 1,
			})
		}
		return nil
	}); err != nil {
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	var ids []int64
	for _, cmd := range ranges {
		for _, m := range cmd.Val() {
			id, err := store.ParseIndexMember(m)
			if err != nil {
				http.Error(w, "bad index", http.StatusInternalServerError)
				return
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	more := len(ids) > limit
	ids = ids[:min(len(ids), limit)]
	body := make([]plantBody, 0, len(ids))
	if len(ids) > 0 {
		byShard := make([][]int64, store.Shards)
		for _, id := range ids {
			byShard[store.ShardOf(id)] = append(byShard[store.ShardOf(id)], id)
		}
		values := make([]*redis.SliceCmd, store.Shards)
		if _, err := f.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for s, shardIDs := range byShard {
				if len(shardIDs) == 0 {
					continue
				}
				keys := make([]string, len(shardIDs))
				for i, id := range shardIDs {
					keys[i] = store.PlantKey(f.prefix, id)
				}
				values[s] = pipe.MGet(ctx, keys...)
			}
			return nil
		}); err != nil {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		found := make(map[int64]string, len(ids))
		for s, cmd := range values {
			if cmd == nil {
				continue
			}
			for i, v := range cmd.Val() {
				if str, ok := v.(string); ok {
					found[byShard[s][i]] = str
				}
			}
		}
		for _, id := range ids {
			v, ok := found[id]
			if !ok {
				continue // deleted since the index was read
			}
			var p plant
			if err := json.Unmarshal([]byte(v), &p); err != nil {
				http.Error(w, "decoding", http.StatusInternalServerError)
				return
			}
			body = append(body, plantBody{ID: id, Name: p.Name, Tag: p.Tag})
		}
		if more {
			w.Header().Set("Link", "</plants?limit="+strconv.Itoa(limit)+"&cursor="+
				strconv.FormatInt(ids[len(ids)-1], 10)+`>; rel="next"`)
		}
	}
	writeJSON(w, body)
}

func (f *floor) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /plants", f.create)
	mux.HandleFunc("GET /plants", f.list)
	mux.HandleFunc("GET /plants/{id}", f.get)
	mux.HandleFunc("DELETE /plants/{id}", f.remove)
	mux.HandleFunc("GET /readyz", f.readyz)
	return mux
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

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 5 * time.Second}
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
