package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
)

// redisModes are the Redis deployments the contract is checked on: each
// starts its servers and returns the service's --redis-addr and a client
// that reads any key.
var redisModes = []struct {
	name  string
	start func(t *testing.T) (addr string, client goredis.UniversalClient)
}{
	{"single", func(t *testing.T) (string, goredis.UniversalClient) {
		r := redistest.Start(t)
		return r.Addr, r.Client()
	}},
	{"cluster", func(t *testing.T) (string, goredis.UniversalClient) {
		c := redistest.StartCluster(t, 3)
		client := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs()})
		t.Cleanup(func() { _ = client.Close() })
		return strings.Join(c.Addrs(), ","), client
	}},
}

// TestContract walks every row of contract.md against the binary on real
// Redis, a single node and a three-master Cluster, checking status, headers
// and body shape as a client sees them.
func TestContract(t *testing.T) {
	for _, mode := range redisModes {
		t.Run(mode.name, func(t *testing.T) {
			addr, client := mode.start(t)
			contract(t, startService(t, options{RedisAddr: addr}), client)
		})
	}
}

// plantKeys lists the plant keys on every node (master) client reaches.
func plantKeys(t *testing.T, client goredis.UniversalClient) []string {
	t.Helper()
	var (
		mu   sync.Mutex // ForEachMaster calls scan concurrently
		keys []string
	)
	scan := func(c *goredis.Client) error {
		ks, err := c.Keys(t.Context(), "plantstore:plants:*").Result()
		mu.Lock()
		for _, k := range ks {
			if !strings.HasSuffix(k, ":index") {
				keys = append(keys, k)
			}
		}
		mu.Unlock()
		return err
	}
	var err error
	switch c := client.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(t.Context(), func(_ context.Context, n *goredis.Client) error { return scan(n) })
	case *goredis.Client:
		err = scan(c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func contract(t *testing.T, s *service, redis goredis.UniversalClient) {
	long := func(n int) string { return strings.Repeat("é", n) }

	type check struct {
		name    string
		method  string
		path    string
		body    string
		header  map[string]string
		status  int
		code    int32  // for failures
		want    string // for successes: the exact Plant body
		headers map[string]string
	}
	auth := `Bearer realm="plantstore"`
	checks := []check{
		// 1. POST /plants: success, Plant shape, no id, tag left out when absent.
		{name: "create with tag", body: `{"id": 1, "name": "Monstera", "tag": "tropical"}`, status: 200, want: `{"name":"Monstera","tag":"tropical"}`},
		{name: "create without tag", body: `{"id": 2, "name": "Fern"}`, status: 200, want: `{"name":"Fern"}`},
		{name: "tag null is absent", body: `{"id": 3, "name": "Ivy", "tag": null}`, status: 200, want: `{"name":"Ivy"}`},
		{name: "empty tag is kept", body: `{"id": 4, "name": "Moss", "tag": ""}`, status: 200, want: `{"name":"Moss","tag":""}`},
		{name: "charset parameter", body: `{"id": 5, "name": "Aloe"}`, header: map[string]string{"Content-Type": "Application/JSON; Charset=UTF-8"}, status: 200, want: `{"name":"Aloe"}`},
		{name: "unknown fields ignored", body: `{"id": 6, "name": "Palm", "color": "green", "x": {"y": [1, 2]}}`, status: 200, want: `{"name":"Palm"}`},
		{name: "zero id", body: `{"id": 0, "name": "Zero"}`, status: 200, want: `{"name":"Zero"}`},
		{name: "negative id", body: `{"id": -9223372036854775808, "name": "Min"}`, status: 200, want: `{"name":"Min"}`},
		{name: "max id", body: `{"id": 9223372036854775807, "name": "Max"}`, status: 200, want: `{"name":"Max"}`},
		{name: "200 code points", body: `{"id": 7, "name": "` + long(200) + `", "tag": "` + long(100) + `"}`, status: 200, want: `{"name":"` + long(200) + `","tag":"` + long(100) + `"}`},
		{name: "html characters round-trip", body: `{"id": 8, "name": "Rose <b> & Ivy"}`, status: 200, want: `{"name":"Rose <b> & Ivy"}`},

		// 2. Validation.
		{name: "empty body", body: ``, status: 400, code: 40001},
		{name: "not JSON", body: `{"id": 1,`, status: 400, code: 40001},
		{name: "array", body: `[{"id": 1, "name": "x"}]`, status: 400, code: 40001},
		{name: "trailing object", body: `{"id": 9, "name": "x"}{"id": 10, "name": "y"}`, status: 400, code: 40001},
		{name: "invalid UTF-8", body: "{\"id\": 9, \"name\": \"\xff\"}", status: 400, code: 40001},
		{name: "id missing", body: `{"name": "x"}`, status: 400, code: 40002},
		{name: "name missing", body: `{"id": 9}`, status: 400, code: 40002},
		{name: "case-variant key", body: `{"id": 9, "Name": "x"}`, status: 400, code: 40007},
		{name: "id string", body: `{"id": "9", "name": "x"}`, status: 400, code: 40003},
		{name: "id fraction", body: `{"id": 9.0, "name": "x"}`, status: 400, code: 40003},
		{name: "id exponent", body: `{"id": 9e0, "name": "x"}`, status: 400, code: 40003},
		{name: "name number", body: `{"id": 9, "name": 5}`, status: 400, code: 40003},
		{name: "tag bool", body: `{"id": 9, "name": "x", "tag": true}`, status: 400, code: 40003},
		{name: "id over int64", body: `{"id": 9223372036854775808, "name": "x"}`, status: 400, code: 40004},
		{name: "name empty", body: `{"id": 9, "name": ""}`, status: 400, code: 40004},
		{name: "name 201", body: `{"id": 9, "name": "` + long(201) + `"}`, status: 400, code: 40004},
		{name: "tag 101", body: `{"id": 9, "name": "x", "tag": "` + long(101) + `"}`, status: 400, code: 40004},
		{name: "duplicate key", body: `{"id": 9, "name": "x", "name": "y"}`, status: 400, code: 40005},
		{name: "control character", body: `{"id": 9, "name": "a\u0007b"}`, status: 400, code: 40006},
		{name: "lone surrogate", body: `{"id": 9, "name": "\ud800"}`, status: 400, code: 40006},
		{name: "body over 64 KiB", body: `{"id": 9, "name": "x", "pad": "` + strings.Repeat("a", 64<<10) + `"}`, status: 413, code: 41301},
		{name: "text/plain", body: `{"id": 9, "name": "x"}`, header: map[string]string{"Content-Type": "text/plain"}, status: 415, code: 41501},
		{name: "no content type", body: `{"id": 9, "name": "x"}`, header: map[string]string{"Content-Type": ""}, status: 415, code: 41501},

		// 3. Identity.
		{name: "same body again is a safe retry", body: `{"id": 1, "name": "Monstera", "tag": "tropical"}`, status: 200, want: `{"name":"Monstera","tag":"tropical"}`},
		{name: "other name conflicts", body: `{"id": 1, "name": "Cactus", "tag": "tropical"}`, status: 409, code: 40901},
		{name: "other tag conflicts", body: `{"id": 1, "name": "Monstera"}`, status: 409, code: 40901},

		// 4. Authentication.
		{name: "no credentials", body: `{"id": 9, "name": "x"}`, header: map[string]string{"Authorization": ""}, status: 401, code: 40101, headers: map[string]string{"WWW-Authenticate": auth}},
		{name: "basic scheme", body: `{"id": 9, "name": "x"}`, header: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, status: 401, code: 40103, headers: map[string]string{"WWW-Authenticate": auth}},
		{name: "wrong token", body: `{"id": 9, "name": "x"}`, header: map[string]string{"Authorization": "Bearer not-the-token"}, status: 401, code: 40102, headers: map[string]string{"WWW-Authenticate": auth + `, error="invalid_token"`}},
		{name: "scheme case-insensitive", body: `{"id": 11, "name": "Lily"}`, header: map[string]string{"Authorization": "bEaReR " + s.Token}, status: 200, want: `{"name":"Lily"}`},

		// 5. Other statuses.
		{name: "unknown path", method: "GET", path: "/nope", status: 404, code: 40401},
		{name: "trailing slash", path: "/plants/", body: `{"id": 9, "name": "x"}`, status: 404, code: 40401},
		{name: "other method", method: "PUT", path: "/plants", status: 405, code: 40501, headers: map[string]string{"Allow": "GET, POST"}},
		{name: "delete", method: "DELETE", path: "/plants", status: 405, code: 40501, headers: map[string]string{"Allow": "GET, POST"}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			method, path := c.method, c.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/plants"
			}
			r := s.Do(t, method, path, c.body, c.header)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d; body %s", r.Status, c.status, r.Body)
			}
			for k, v := range c.headers {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if c.status == 200 {
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				if got := strings.TrimSpace(string(r.Body)); got != c.want {
					t.Errorf("body %s, want %s", got, c.want)
				}
				return
			}
			if code := r.ErrorCode(t); code != c.code {
				t.Errorf("error code %d, want %d: %s", code, c.code, r.Body)
			}
		})
	}

	t.Run("bad input changed nothing", func(t *testing.T) {
		keys := plantKeys(t, redis)
		// ids 0..8, 11 and the two int64 extremes were created; id 9 and 10 never were.
		for _, k := range keys {
			if k == store.PlantKey("plantstore:", 9) || k == store.PlantKey("plantstore:", 10) {
				t.Errorf("rejected request stored %s", k)
			}
		}
		if len(keys) != 12 {
			t.Errorf("%d plants in Redis, want 12: %v", len(keys), keys)
		}
		v, err := redis.Get(t.Context(), store.PlantKey("plantstore:", 1)).Result()
		if err != nil || v != `{"name":"Monstera","tag":"tropical"}` {
			t.Errorf("plant 1 = %q, %v; the conflicts must not change it", v, err)
		}
	})

	t.Run("OpenAPI document is public", func(t *testing.T) {
		r := s.Do(t, http.MethodGet, "/openapi.yaml", "", map[string]string{"Authorization": ""})
		if r.Status != 200 || r.Header.Get("Content-Type") != "application/yaml" {
			t.Fatalf("GET /openapi.yaml = %d %q", r.Status, r.Header.Get("Content-Type"))
		}
		release, err := os.ReadFile("../../VERSION")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.Body), "version: "+strings.TrimSpace(string(release))) || !strings.Contains(string(r.Body), "/plants:") {
			t.Fatalf("not the OpenAPI document: %.200s", r.Body)
		}
	})

	t.Run("admin port needs no token and the API port has no probes", func(t *testing.T) {
		for _, p := range []string{"/livez", "/readyz", "/metrics"} {
			resp, err := http.Get(s.Admin + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("admin %s = %d", p, resp.StatusCode)
			}
			if r := s.Do(t, http.MethodGet, p, "", nil); r.Status != 404 {
				t.Errorf("API %s = %d, want 404", p, r.Status)
			}
		}
	})

	t.Run("oversized headers are refused", func(t *testing.T) {
		r := s.Do(t, http.MethodPost, "/plants", `{"id": 9, "name": "x"}`, map[string]string{"X-Big": strings.Repeat("a", 64<<10)})
		if r.Status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", r.Status)
		}
	})
}

// TestTokensNeverLogged checks that neither the accepted nor a rejected token
// reaches the logs, whatever happens to the request.
func TestTokensNeverLogged(t *testing.T) {
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Extra: []string{"--log-level", "debug"}})
	s.Post(t, `{"id": 1, "name": "x"}`)
	s.Post(t, `{"id": 1, "name": "y"}`)
	s.Do(t, http.MethodPost, "/plants", `{}`, map[string]string{"Authorization": "Bearer secret-wrong-token"})
	redis.Stop()
	s.Post(t, `{"id": 2, "name": "z"}`)
	s.Signal(t, 15, defaultExitWait)
	for _, line := range s.Logs.All() {
		if strings.Contains(line, s.Token) || strings.Contains(line, "secret-wrong-token") {
			t.Fatalf("a token reached the log: %s", line)
		}
	}
}

// TestBusyPortFailsStartup checks that a taken port stops start-up with a
// message naming the option.
func TestBusyPortFailsStartup(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = launch(t, options{Extra: []string{"--http-addr", l.Addr().String()}})
	if err == nil {
		t.Fatal("plantstore started on a busy port")
	}
	if !strings.Contains(err.Error(), "--http-addr") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start-up error does not name the option and the cause:\n%v", err)
	}
}

// TestRefusesToStartWithoutTokens checks the contract's operator rule.
func TestRefusesToStartWithoutTokens(t *testing.T) {
	_, err := launch(t, options{NoTokens: true})
	if err == nil || !strings.Contains(err.Error(), "--auth-tokens-file") || !strings.Contains(err.Error(), "--dev") {
		t.Fatalf("want a refusal that says how to configure tokens, got:\n%v", err)
	}
}

// TestDevModePrintsAWorkingToken is what `make run` promises: a token and a
// curl line that stores a plant, on the embedded store.
func TestDevModePrintsAWorkingToken(t *testing.T) {
	s := startService(t, options{Dev: true})
	logs := s.Logs.String()
	if !strings.Contains(logs, "curl -i -X POST "+s.API+"/plants -H 'Authorization: Bearer "+s.Token+"'") {
		t.Fatalf("no curl line with the token and address:\n%s", logs)
	}
	if !strings.Contains(logs, "NOT DURABLE") {
		t.Fatalf("the embedded store was not announced as not durable:\n%s", logs)
	}
	// The body of the printed curl line.
	r := s.Post(t, `{"id": 1, "name": "Monstera", "tag": "tropical"}`)
	if r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"name":"Monstera","tag":"tropical"}` {
		t.Fatalf("the printed token did not create a plant: %d %s", r.Status, r.Body)
	}
	if n := strings.Count(logs, s.Token); n != 2 { // the token line and the curl line
		t.Fatalf("the token appears %d times in the output, want exactly the banner's 2", n)
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, err := exec_(binary, "--version")
	if err != nil || !strings.HasPrefix(out, "plantstore ") {
		t.Fatalf("--version: %v %q", err, out)
	}
	out, err = exec_(binary, "--help")
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, flag := range []string{"--http-addr", "--admin-addr", "--redis-addr", "--auth-tokens-file", "--dev", "PLANTSTORE_HTTP_ADDR", "default :8080"} {
		if !strings.Contains(out, flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}
	if out, err = exec_(binary, "--store-timeout", "-1s", "--dev"); err == nil || !strings.Contains(out, "--store-timeout") {
		t.Fatalf("invalid option accepted or not named: %v %q", err, out)
	}
}
