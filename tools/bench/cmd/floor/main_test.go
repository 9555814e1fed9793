package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	domain "github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

// startRedis starts a throw-away redis-server on a free loopback port.
// redis-server cannot bind port 0 and report the port it got, so the port
// is chosen first (below the kernel's ephemeral range, which any outgoing
// connection may take) and may be taken before redis-server binds it: a
// start that fails so is tried again on another, up to 10 times.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			bin = "/usr/bin/redis-server"
		}
	}
	var taken []string
	for range 10 {
		addr, log, ok := launchRedis(t, bin)
		if ok {
			return addr
		}
		taken = append(taken, addr+": "+log)
	}
	t.Fatalf("redis-server found its port taken 10 times:\n%s", strings.Join(taken, "\n"))
	return ""
}

// launchRedis is one start of startRedis; ok is false when the port was
// taken (redis-server exited on "Address already in use", or another
// process answered on it), and log says so.
func launchRedis(t *testing.T, bin string) (addr, log string, ok bool) {
	t.Helper()
	port := 0
	for range 1000 {
		p := 10000 + rand.IntN(32768-10000)
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			ln.Close()
			port = p
			break
		}
	}
	if port == 0 {
		t.Fatal("no free loopback port below 32768 in 1000 tries")
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	var out strings.Builder // read only once the process has exited
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server (set REDIS_SERVER): %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	kill := func() { _ = cmd.Process.Kill(); <-exited }
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err := c.Info(context.Background(), "server").Result(); err == nil {
			if !strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
				kill()
				return addr, "another process answered on the port", false
			}
			t.Cleanup(kill)
			return addr, "", true
		}
		select {
		case <-exited:
			if strings.Contains(out.String(), "Address already in use") {
				return addr, out.String(), false
			}
			t.Fatalf("redis-server exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			kill()
			t.Fatalf("redis-server did not answer:\n%s", out.String())
		}
	}
}

// The floor keeps the contract's observable behaviour for valid requests:
// 200 and the Plant, 200 again for the same body, 409 for a different one,
// stored under the service's key.
func TestFloor(t *testing.T) {
	addr := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	f := &floor{rdb: rdb, prefix: "plantstore:"}
	post := func(body string) (int, string) {
		w := httptest.NewRecorder()
		f.create(w, httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body)))
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		body, want string
		code       int
	}{
		{`{"id": 7, "name": "Monstera", "tag": "tropical"}`, `{"name":"Monstera","tag":"tropical"}`, 200},
		{`{"id": 7, "name": "Monstera", "tag": "tropical"}`, `{"name":"Monstera","tag":"tropical"}`, 200},
		{`{"id": 7, "name": "Ficus"}`, `{"name":"Monstera","tag":"tropical"}`, 409},
		{`{"id": 8, "name": "Ficus"}`, `{"name":"Ficus"}`, 200},
		{`{"id": `, "", 400},
	} {
		code, body := post(c.body)
		if code != c.code || (c.want != "" && body != c.want) {
			t.Errorf("POST %s = %d %s, want %d %s", c.body, code, body, c.code, c.want)
		}
	}
	if v, err := rdb.Get(context.Background(), "plantstore:plant:{8}").Result(); err != nil || v != `{"name":"Ficus"}` {
		t.Errorf("stored value = %q, %v", v, err)
	}
	w := httptest.NewRecorder()
	f.readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 200 {
		t.Errorf("/readyz = %d", w.Code)
	}
}

// The 1.1.0 routes read and delete what the service's layout holds: GET the
// plant, pages in id order linked by cursors until the last, DELETE once
// (204) then 404, and the deleted plant gone from the listing.
func TestFloorResourceRoutes(t *testing.T) {
	addr := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	const prefix = "plantstore:"
	tropical := "tropical"
	if err := store.Fill(ctx, rdb, prefix, 45, func(i int) domain.Plant { return domain.Plant{ID: int64(i) - 20, Name: "Monstera", Tag: &tropical} }); err != nil { // ids -20 to 24
		t.Fatal(err)
	}
	h := (&floor{rdb: rdb, prefix: prefix}).routes()
	do := func(method, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w
	}
	for _, c := range []struct {
		method, target string
		code           int
		body           string
	}{
		{"GET", "/plants/-7", 200, `{"id":-7,"name":"Monstera","tag":"tropical"}`},
		{"GET", "/plants/99", 404, ""},
		{"GET", "/plants/x", 400, ""},
		{"GET", "/plants?limit=0", 400, ""},
		{"GET", "/plants?cursor=zz", 400, ""},
		{"DELETE", "/plants/3", 204, ""},
		{"DELETE", "/plants/3", 404, ""},
		{"GET", "/plants/3", 404, ""},
	} {
		w := do(c.method, c.target)
		if w.Code != c.code || (c.body != "" && w.Body.String() != c.body) {
			t.Errorf("%s %s = %d %s, want %d %s", c.method, c.target, w.Code, w.Body, c.code, c.body)
		}
	}
	var got []int64
	pages := 0
	for next := "/plants?limit=20"; next != ""; pages++ {
		w := do("GET", next)
		var page []plantBody
		if err := json.Unmarshal(w.Body.Bytes(), &page); w.Code != 200 || err != nil {
			t.Fatalf("GET %s = %d %s (%v)", next, w.Code, w.Body, err)
		}
		for _, p := range page {
			got = append(got, p.ID)
		}
		next = ""
		if link := w.Header().Get("Link"); link != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	var want []int64
	for id := int64(-20); id <= 24; id++ {
		if id != 3 {
			want = append(want, id)
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("walk: %d pages, ids %v, want 3 pages of %v", pages, got, want)
	}
}
