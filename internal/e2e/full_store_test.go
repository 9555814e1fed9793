package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
)

// TestFullStore: contract §12. A Redis over its maxmemory with noeviction
// (the chart's setting) refuses new plants: a create answers 507 50701 with
// no Retry-After, whoever asks (a rate-limited client too, whose budget
// cannot be written on a full store either), and changes nothing. Reads,
// lists, replays and deletes keep working, the delete's plant.deleted event
// is delivered, the service stays ready, and the refusals are counted
// (plantstore_store_operation_duration_seconds{outcome="full"}). With room
// again, creates work as before.
func TestFullStore(t *testing.T) {
	redis := redistest.Start(t, "--maxmemory-policy", "noeviction")
	var mu sync.Mutex
	var events []string
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		events = append(events, string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hooks.Close)
	dir := t.TempDir()
	subscribers := filepath.Join(dir, "subscribers")
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of thirty-two bytes....."))
	tokens := filepath.Join(dir, "tokens")
	for file, text := range map[string]string{
		subscribers: hooks.URL + "/hooks " + secret + "\n",
		tokens:      "plain-token\nlimited-token name=limited rate=1000/s burst=1000\n",
	} {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := startService(t, options{RedisAddr: redis.Addr, NoTokens: true, Extra: []string{
		"--auth-tokens-file", tokens, "--webhook-subscribers-file", subscribers,
		"--webhook-allow-cidrs", "127.0.0.0/8", "--webhook-poll-interval", "20ms"}})
	s.Token = "plain-token"
	limited := *s
	limited.Token = "limited-token"

	for id := 1; id <= 20; id++ {
		if r := s.Post(t, fmt.Sprintf(`{"id": %d, "name": "plant %d"}`, id, id)); r.Status != 200 {
			t.Fatalf("create %d: %d %s", id, r.Status, r.Body)
		}
	}
	ctx := context.Background()
	raw := redis.Client()
	usedMemory := redis.InfoInt("memory", "used_memory")
	if err := raw.ConfigSet(ctx, "maxmemory", strconv.FormatInt(usedMemory/2, 10)).Err(); err != nil {
		t.Fatal(err)
	}

	for name, c := range map[string]*service{"unlimited": s, "rate-limited": &limited} {
		r := c.Post(t, `{"id": 100, "name": "one too many"}`)
		if r.Status != 507 || r.ErrorCode(t) != 50701 || r.Header.Get("Retry-After") != "" ||
			!strings.Contains(string(r.Body), "full") {
			t.Errorf("%s create on a full store: %d Retry-After %q %s; want 507 50701 saying full, no Retry-After",
				name, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	}
	// Nothing of the refused plant was stored: no key, no index entry (the
	// listing), no event (checked below, once the delete's is delivered).
	var listed []json.RawMessage
	if r := s.Do(t, http.MethodGet, "/plants?limit=100", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &listed) != nil || len(listed) != 20 {
		t.Errorf("list after the refused creates: %d, %d plants; want 200 and the 20 stored: %s", r.Status, len(listed), r.Body)
	}
	for _, req := range []struct {
		what, method, path, body string
		want                     int
	}{
		{"read of the refused", http.MethodGet, "/plants/100", "", 404},
		{"replay", http.MethodPost, "/plants", `{"id": 3, "name": "plant 3"}`, 200},
		{"read", http.MethodGet, "/plants/4", "", 200},
		{"list", http.MethodGet, "/plants?limit=100", "", 200},
		{"delete", http.MethodDelete, "/plants/5", "", 204},
		{"read of the deleted", http.MethodGet, "/plants/5", "", 404},
	} {
		if r := s.Do(t, req.method, req.path, req.body, nil); r.Status != req.want {
			t.Errorf("%s on a full store: %d %s, want %d", req.what, r.Status, r.Body, req.want)
		}
	}
	if status, err := s.Ready(); err != nil || status != 200 {
		t.Errorf("/readyz on a full store = %d, %v; want 200: the pod serves reads and deletes", status, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !delivered(&mu, &events, `"plant.deleted"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the delete's plant.deleted event not delivered within 5s; delivered: %q\n%s", events, s.Logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if delivered(&mu, &events, `"id":100,`) {
		t.Errorf("an event of the refused plant 100 was delivered: %q", events)
	}
	families, _ := s.Metrics(t)
	full := 0.0
	for _, m := range families["plantstore_store_operation_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["operation"] == "create" && labels["outcome"] == "full" {
			full += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if full != 2 {
		t.Errorf(`store creates with outcome="full" = %v, want 2`, full)
	}

	if err := raw.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if r := s.Post(t, `{"id": 100, "name": "one too many"}`); r.Status != 200 {
		t.Errorf("create with room again: %d %s", r.Status, r.Body)
	}
}

func delivered(mu *sync.Mutex, events *[]string, what string) bool {
	mu.Lock()
	defer mu.Unlock()
	for _, e := range *events {
		if strings.Contains(e, what) {
			return true
		}
	}
	return false
}
