package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/plantstore/plantstore/internal/servicetest"
)

// TestServiceWebhooksMatchTheDocument runs plantstore with a subscriber on
// loopback, creates and deletes plants, and validates every webhook it
// delivers against the document it serves: the headers (webhook-id,
// webhook-timestamp, webhook-signature, User-Agent), the content type and
// the body, which must also carry no member the document does not declare.
// The events are built by internal/webhook; nothing here restates them.
func TestServiceWebhooksMatchTheDocument(t *testing.T) {
	hooks := newHookReceiver(t)
	dir := t.TempDir()
	const token = "openapi-webhooks-test-token"
	tokens := filepath.Join(dir, "tokens")
	subscribers := filepath.Join(dir, "subscribers")
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of thirty-two bytes....."))
	writeFile(t, tokens, token+"\n")
	writeFile(t, subscribers, hooks.URL+"/events "+secret+"\n")
	svc := service{servicetest.Start(t, servicetest.Binary(t), servicetest.Options{NoTokens: true,
		Extra: []string{"--auth-tokens-file", tokens,
			"--webhook-subscribers-file", subscribers, "--webhook-allow-cidrs", "127.0.0.0/8",
			"--webhook-poll-interval", "20ms"}})}

	served := svc.call(t, http.MethodGet, "/openapi.yaml", "", "", http.StatusOK)
	doc, err := loadDocument(served)
	if err != nil {
		t.Fatalf("the served document: %v", err)
	}
	auth := "Bearer " + token
	svc.call(t, http.MethodPost, "/plants", auth, `{"id":10,"name":"Monstera deliciosa","tag":"tropical"}`, http.StatusOK)
	svc.call(t, http.MethodPost, "/plants", auth, `{"id":-3,"name":"Ficus lyrata"}`, http.StatusOK)
	svc.call(t, http.MethodPost, "/plants", auth, `{"id":-3,"name":"Ficus lyrata"}`, http.StatusOK) // a replay: no event
	svc.call(t, http.MethodDelete, "/plants/10", auth, "", http.StatusNoContent)

	deliveries := hooks.wait(t, 3, svc)
	types := map[string]int{}
	for _, d := range deliveries {
		types[d.eventType()]++
		if err := validateWebhook(t.Context(), doc, d); err != nil {
			t.Errorf("a delivery the document does not describe:\n%s\n%v", d, err)
		}
	}
	if types["plant.created"] != 2 || types["plant.deleted"] != 1 {
		t.Errorf("event types delivered %v, want 2 plant.created and 1 plant.deleted", types)
	}

	// The check can fail: deliveries changed as a drift of the service would
	// change them are refused.
	created := deliveries[0]
	for _, d := range deliveries {
		if d.eventType() == "plant.created" && strings.Contains(string(d.body), `"tag"`) {
			created = d
		}
	}
	mutations := []struct {
		name   string
		change func(*delivery)
	}{
		{"timestamp renamed", func(d *delivery) { d.body = bytes.Replace(d.body, []byte(`"timestamp"`), []byte(`"time"`), 1) }},
		{"data.tag renamed", func(d *delivery) { d.body = bytes.Replace(d.body, []byte(`"tag"`), []byte(`"tags"`), 1) }},
		{"data.id a string", func(d *delivery) { d.body = bytes.Replace(d.body, []byte(`"id":10`), []byte(`"id":"10"`), 1) }},
		{"an unknown event type", func(d *delivery) {
			d.body = bytes.Replace(d.body, []byte(`"plant.created"`), []byte(`"plant.updated"`), 1)
		}},
		{"no webhook-signature", func(d *delivery) { d.header.Del("webhook-signature") }},
		{"webhook-timestamp in milliseconds", func(d *delivery) {
			d.header.Set("webhook-timestamp", d.header.Get("webhook-timestamp")+".000")
		}},
		{"a signature of another scheme", func(d *delivery) { d.header.Set("webhook-signature", "v1a,abc") }},
	}
	for _, m := range mutations {
		d := created.clone()
		m.change(&d)
		if err := validateWebhook(t.Context(), doc, d); err == nil {
			t.Errorf("%s: the check accepted\n%s", m.name, d)
		}
	}
}

// validateWebhook validates a delivery against the webhook of the document
// named by its event type.
func validateWebhook(ctx context.Context, doc *openapi3.T, d delivery) error {
	path := webhookPath(d.eventType())
	item := doc.Paths.Value(path)
	if item == nil || item.Post == nil {
		return fmt.Errorf("the document declares no webhook %q", d.eventType())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://subscriber.invalid/events", bytes.NewReader(d.body))
	if err != nil {
		return err
	}
	req.Header = d.header.Clone()
	err = openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
		Request: req,
		Route:   &routers.Route{Spec: doc, Path: path, PathItem: item, Method: http.MethodPost, Operation: item.Post},
		Options: &openapi3filter.Options{MultiError: true},
	})
	if err != nil {
		return err
	}
	var body any
	if err := json.Unmarshal(d.body, &body); err != nil {
		return err
	}
	if extra := undeclared("", body, item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value); len(extra) > 0 {
		return fmt.Errorf("members the document does not declare: %v", extra)
	}
	return nil
}

// undeclared lists the object members in v, at any depth, that schema does
// not declare (in its properties or those of its allOf): a schema allows
// them, but the service must send only what the document describes.
func undeclared(at string, v any, schema *openapi3.Schema) []string {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	declared := map[string]*openapi3.Schema{}
	var collect func(*openapi3.Schema)
	collect = func(s *openapi3.Schema) {
		for name, p := range s.Properties {
			if _, seen := declared[name]; !seen {
				declared[name] = p.Value
			}
		}
		for _, a := range s.AllOf {
			collect(a.Value)
		}
	}
	collect(schema)
	var out []string
	for name, member := range obj {
		p, ok := declared[name]
		if !ok {
			out = append(out, at+"."+name)
			continue
		}
		out = append(out, undeclared(at+"."+name, member, p)...)
	}
	sort.Strings(out)
	return out
}

// delivery is one webhook request as a subscriber received it.
type delivery struct {
	header http.Header
	body   []byte
}

func (d delivery) eventType() string {
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(d.body, &ev)
	return ev.Type
}

func (d delivery) clone() delivery {
	return delivery{header: d.header.Clone(), body: bytes.Clone(d.body)}
}

func (d delivery) String() string {
	var b strings.Builder
	_ = d.header.Write(&b) // sorted by name
	b.WriteString("\r\n")
	b.Write(d.body)
	return b.String()
}

// hookReceiver is a subscriber on loopback that accepts every delivery.
type hookReceiver struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries []delivery
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.deliveries = append(h.deliveries, delivery{header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

// wait returns the deliveries once there are n, and fails after 15 s.
func (h *hookReceiver) wait(t *testing.T, n int, svc service) []delivery {
	t.Helper()
	got := func() []delivery {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(h.deliveries)
	}
	if !servicetest.Eventually(15*time.Second, 20*time.Millisecond, func() bool { return len(got()) >= n }) {
		t.Fatalf("%d of %d webhooks delivered within 15s; plantstore's log:\n%s", len(got()), n, svc.Logs)
	}
	time.Sleep(200 * time.Millisecond) // a delivery too many would show
	all := got()
	if len(all) != n {
		t.Fatalf("%d deliveries, want %d", len(all), n)
	}
	return all
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// service is the running plantstore with this test's requests.
type service struct{ *servicetest.Service }

// call sends one API request, fails the test unless it answers want, and
// returns the body.
func (s service) call(t *testing.T, method, path, auth, body string, want int) []byte {
	t.Helper()
	r := s.Do(t, method, path, body, map[string]string{"Authorization": auth})
	if r.Status != want {
		t.Fatalf("%s %s answered %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r.Body
}
