package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/apierror/apierrortest"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

func newMemory() *store.Memory { return store.NewMemory() }

// fakeStore is a PlantCreator that records its calls. By default it stores
// every plant as new; create, when set, decides instead. Reads, lists and
// deletes go to an embedded store of their own.
type fakeStore struct {
	create func(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error)
	memory *store.Memory

	mu    sync.Mutex
	calls []plant.Plant
}

func (f *fakeStore) Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
	f.mu.Lock()
	f.calls = append(f.calls, p)
	f.mu.Unlock()
	if f.create == nil {
		return p, plant.Created, nil
	}
	return f.create(ctx, p)
}

func (f *fakeStore) Calls() []plant.Plant {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]plant.Plant(nil), f.calls...)
}

// harness is the API router around a fake store, a counting pass-through
// authentication middleware and an observed logger.
type harness struct {
	t         *testing.T
	store     *fakeStore
	handler   http.Handler
	authCalls atomic.Int32
	logs      *observer.ObservedLogs

	mu       sync.Mutex
	outcomes []string
}

const testStoreTimeout = 2 * time.Second

func newHarness(t *testing.T, store *fakeStore) *harness {
	return newHarnessTimeout(t, store, testStoreTimeout)
}

func newHarnessTimeout(t *testing.T, store *fakeStore, timeout time.Duration) *harness {
	t.Helper()
	if store.memory == nil {
		store.memory = newMemory()
	}
	core, logs := observer.New(zap.DebugLevel)
	h := &harness{t: t, store: store, logs: logs}
	observe := func(outcome string) {
		h.mu.Lock()
		h.outcomes = append(h.outcomes, outcome)
		h.mu.Unlock()
	}
	passThrough := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.authCalls.Add(1)
			next.ServeHTTP(w, r)
		})
	}
	h.handler = httpapi.NewRouter(httpapi.RouterParams{
		CreatePlant:  httpapi.NewCreatePlantHandler(store, timeout, zap.New(core), observe),
		ListPlants:   httpapi.NewListPlantsHandler(store.memory, timeout, zap.New(core)),
		GetPlant:     httpapi.NewGetPlantHandler(store.memory, timeout, zap.New(core)),
		DeletePlant:  httpapi.NewDeletePlantHandler(store.memory, timeout, zap.New(core)),
		OpenAPI:      httpapi.NewOpenAPIHandler(api.OpenAPI),
		Authenticate: passThrough,
	})
	return h
}

func (h *harness) Outcomes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.outcomes...)
}

func (h *harness) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, r)
	return rec
}

// post sends body to POST /plants with Content-Type application/json.
func (h *harness) post(body string) *httptest.ResponseRecorder {
	return h.serve(newPost(body, "application/json"))
}

func newPost(body, contentType string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("Authorization", "Bearer test-token")
	return r
}

// unknownLength hides the length of a reader, so that a request built from it
// has ContentLength -1, as a chunked request has.
type unknownLength struct{ io.Reader }

// checkError asserts a failure response: status, JSON content type and an
// Error body of exactly the two fields with the wanted code and a non-empty
// message. It returns the message.
func checkError(t *testing.T, status int, header http.Header, body []byte, wantStatus int, wantCode apierror.Code) string {
	t.Helper()
	if status != wantStatus {
		t.Errorf("status = %d, want %d (body %s)", status, wantStatus, body)
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	code, msg := apierrortest.Decode(t, body)
	if code != int32(wantCode) {
		t.Errorf("error = %d, want %d (message %q)", code, wantCode, msg)
	}
	if strings.TrimSpace(msg) == "" {
		t.Error("message is empty")
	}
	return msg
}

func checkRecError(t *testing.T, rec *httptest.ResponseRecorder, wantStatus int, wantCode apierror.Code) string {
	t.Helper()
	return checkError(t, rec.Code, rec.Header(), rec.Body.Bytes(), wantStatus, wantCode)
}

// plantResponse decodes a success body strictly: name and, when present, tag;
// nothing else.
func plantResponse(t *testing.T, rec *httptest.ResponseRecorder) (name string, tag *string) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &fields); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", rec.Body, err)
	}
	for k := range fields {
		if k != "name" && k != "tag" {
			t.Errorf("body %s has the field %q; a Plant has only name and tag", rec.Body, k)
		}
	}
	if err := json.Unmarshal(fields["name"], &name); err != nil || fields["name"] == nil {
		t.Fatalf("name in %s is not a string", rec.Body)
	}
	if raw, ok := fields["tag"]; ok {
		if string(raw) == "null" {
			t.Errorf("body %s carries tag null; it must leave tag out", rec.Body)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("tag in %s is not a string", rec.Body)
		}
		tag = &s
	}
	return name, tag
}
