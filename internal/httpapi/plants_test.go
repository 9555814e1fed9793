package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

func TestCreatePlantSuccess(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		stored   plant.Plant // what the store is asked to create
		wantBody string      // exact, without the trailing newline
	}{
		{
			name:     "with tag",
			body:     `{"id":7,"name":"Monstera","tag":"tropical"}`,
			stored:   plant.Plant{ID: 7, Name: "Monstera", Tag: ptr("tropical")},
			wantBody: `{"name":"Monstera","tag":"tropical"}`,
		},
		{
			name:     "without tag: tag left out",
			body:     `{"id":8,"name":"Ficus"}`,
			stored:   plant.Plant{ID: 8, Name: "Ficus"},
			wantBody: `{"name":"Ficus"}`,
		},
		{
			name:     "tag null: tag left out",
			body:     `{"id":9,"name":"Ficus","tag":null}`,
			stored:   plant.Plant{ID: 9, Name: "Ficus"},
			wantBody: `{"name":"Ficus"}`,
		},
		{
			name:     "empty tag is kept",
			body:     `{"id":10,"name":"Fern","tag":""}`,
			stored:   plant.Plant{ID: 10, Name: "Fern", Tag: ptr("")},
			wantBody: `{"name":"Fern","tag":""}`,
		},
		{
			name:     "HTML characters come back as sent",
			body:     `{"id":11,"name":"Rose & Ivy <3","tag":"a>b"}`,
			stored:   plant.Plant{ID: 11, Name: "Rose & Ivy <3", Tag: ptr("a>b")},
			wantBody: `{"name":"Rose & Ivy <3","tag":"a>b"}`,
		},
		{
			name:     "non-ASCII and negative id",
			body:     `{"id":-1,"name":"\ud83c\udf31 Fern","extra":{"id":2}}`,
			stored:   plant.Plant{ID: -1, Name: "🌱 Fern"},
			wantBody: `{"name":"🌱 Fern"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{}
			h := newHarness(t, store)
			rec := h.post(tt.body)

			name, tag := plantResponse(t, rec)
			if got := strings.TrimSuffix(rec.Body.String(), "\n"); got != tt.wantBody {
				t.Errorf("body = %s, want %s", got, tt.wantBody)
			}
			if name != tt.stored.Name || !tagEqual(tag, tt.stored.Tag) {
				t.Errorf("response = %q %v, want the stored plant", name, tag)
			}
			calls := store.Calls()
			if len(calls) != 1 {
				t.Fatalf("store called %d times, want 1", len(calls))
			}
			if c := calls[0]; c.ID != tt.stored.ID || c.Name != tt.stored.Name || !tagEqual(c.Tag, tt.stored.Tag) {
				t.Errorf("store asked to create %+v, want %+v", c, tt.stored)
			}
			if got := h.Outcomes(); len(got) != 1 || got[0] != "created" {
				t.Errorf("observed %q, want [created]", got)
			}
			if n := h.authCalls.Load(); n != 1 {
				t.Errorf("authentication ran %d times, want 1", n)
			}
		})
	}
}

func tagEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func TestCreatePlantContentType(t *testing.T) {
	tests := []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"application/json;charset=utf-8", true},
		{"application/json; charset=UTF-8", true},
		{"APPLICATION/JSON; Charset=UTF-8", true},
		{"Application/Json", true},
		{`application/json; charset="utf-8"`, true},
		{"", false},
		{"text/plain", false},
		{"text/plain; charset=utf-8", false},
		{"text/json", false},
		{"application/jsonx", false},
		{"application/problem+json", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"json", false},
		{"application/json; charset=latin1", false},
		{"application/json; charset=iso-8859-1", false},
		{"application/json; charset=utf-16", false},
		{"application/json; charset=utf8", false},
		{"application/json; version=1", false},
		{"application/json; charset=utf-8; q=1", false},
		{"application/json; charset", false},
		{"application/json; charset=utf-8; charset=latin1", false},
		{"application/json, text/plain", false},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			store := &fakeStore{}
			h := newHarness(t, store)
			rec := h.serve(newPost(`{"id":1,"name":"a"}`, tt.contentType))
			if tt.ok {
				plantResponse(t, rec)
				if len(store.Calls()) != 1 {
					t.Errorf("store called %d times, want 1", len(store.Calls()))
				}
				return
			}
			msg := checkRecError(t, rec, http.StatusUnsupportedMediaType, apierror.UnsupportedMedia)
			if !strings.Contains(msg, "Content-Type") || !strings.Contains(msg, "application/json") {
				t.Errorf("message %q does not say Content-Type must be application/json", msg)
			}
			if n := len(store.Calls()); n != 0 {
				t.Errorf("store called %d times, want 0", n)
			}
		})
	}
}

// TestCreatePlantContentTypeBeforeBody: a bad content type is reported even
// when the body is also bad, and the body is not read.
func TestCreatePlantContentTypeBeforeBody(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	r := httptest.NewRequest(http.MethodPost, "/plants", unknownLength{iotest.ErrReader(errors.New("must not be read"))})
	r.Header.Set("Content-Type", "text/plain")
	checkRecError(t, h.serve(r), http.StatusUnsupportedMediaType, apierror.UnsupportedMedia)
}

// paddedBody is a valid NewPlant padded with whitespace to exactly n bytes.
func paddedBody(n int) string {
	const obj = `{"id":1,"name":"a"}`
	return obj + strings.Repeat(" ", n-len(obj))
}

func TestCreatePlantBodySize(t *testing.T) {
	tests := []struct {
		name          string
		size          int
		unknownLength bool
		tooLarge      bool
	}{
		{"exactly 64 KiB, length known", httpapi.MaxBodyBytes, false, false},
		{"exactly 64 KiB, length unknown", httpapi.MaxBodyBytes, true, false},
		{"64 KiB + 1, length known", httpapi.MaxBodyBytes + 1, false, true},
		{"64 KiB + 1, length unknown", httpapi.MaxBodyBytes + 1, true, true},
		{"1 MiB, length known", 1 << 20, false, true},
		{"1 MiB, length unknown", 1 << 20, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if httpapi.MaxBodyBytes != 65536 {
				t.Fatalf("MaxBodyBytes = %d, want 65536 (contract: 64 KiB)", httpapi.MaxBodyBytes)
			}
			store := &fakeStore{}
			h := newHarness(t, store)
			var body io.Reader = strings.NewReader(paddedBody(tt.size))
			if tt.unknownLength {
				body = unknownLength{body}
			}
			r := httptest.NewRequest(http.MethodPost, "/plants", body)
			r.Header.Set("Content-Type", "application/json")
			if tt.unknownLength != (r.ContentLength == -1) {
				t.Fatalf("ContentLength = %d", r.ContentLength)
			}
			rec := h.serve(r)
			if !tt.tooLarge {
				plantResponse(t, rec)
				return
			}
			msg := checkRecError(t, rec, http.StatusRequestEntityTooLarge, apierror.BodyTooLarge)
			if !strings.Contains(msg, "65536") {
				t.Errorf("message %q does not state the limit", msg)
			}
			if n := len(store.Calls()); n != 0 {
				t.Errorf("store called %d times, want 0", n)
			}
		})
	}
}

// TestCreatePlantDeclaredLengthTooLarge: a body whose declared length is over
// the limit is refused without reading it.
func TestCreatePlantDeclaredLengthTooLarge(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	r := httptest.NewRequest(http.MethodPost, "/plants", unknownLength{iotest.ErrReader(errors.New("must not be read"))})
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = httpapi.MaxBodyBytes + 1
	checkRecError(t, h.serve(r), http.StatusRequestEntityTooLarge, apierror.BodyTooLarge)
}

// TestCreatePlantBodySizeOverHTTP sends the bodies over a real connection,
// with Content-Length and chunked.
func TestCreatePlantBodySizeOverHTTP(t *testing.T) {
	h := newHarness(t, &fakeStore{})
	var mu sync.Mutex
	var lastTE []string
	var lastCL int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastTE, lastCL = r.TransferEncoding, r.ContentLength
		mu.Unlock()
		h.handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	tests := []struct {
		name          string
		size          int
		chunked       bool
		wantStatus    int
		wantErrorCode apierror.Code
	}{
		{"exactly 64 KiB with Content-Length", httpapi.MaxBodyBytes, false, 200, 0},
		{"exactly 64 KiB chunked", httpapi.MaxBodyBytes, true, 200, 0},
		{"64 KiB + 1 with Content-Length", httpapi.MaxBodyBytes + 1, false, 413, apierror.BodyTooLarge},
		{"64 KiB + 1 chunked", httpapi.MaxBodyBytes + 1, true, 413, apierror.BodyTooLarge},
		{"200 KiB chunked", 200 << 10, true, 413, apierror.BodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(paddedBody(tt.size))
			if tt.chunked {
				body = unknownLength{body}
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/plants", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tt.chunked && req.ContentLength != 0 {
				t.Fatalf("ContentLength = %d, want 0 (unknown, sent chunked)", req.ContentLength)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			mu.Lock()
			te, cl := lastTE, lastCL
			mu.Unlock()
			if tt.chunked && (len(te) != 1 || te[0] != "chunked" || cl != -1) {
				t.Errorf("server saw TransferEncoding %v, ContentLength %d; want chunked, -1", te, cl)
			}
			if !tt.chunked && cl != int64(tt.size) {
				t.Errorf("server saw ContentLength %d, want %d", cl, tt.size)
			}
			got, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantStatus == 200 {
				if res.StatusCode != 200 || strings.TrimSpace(string(got)) != `{"name":"a"}` {
					t.Errorf("got %d %s, want 200 {\"name\":\"a\"}", res.StatusCode, got)
				}
				return
			}
			checkError(t, res.StatusCode, res.Header, got, tt.wantStatus, tt.wantErrorCode)
		})
	}
}

func TestCreatePlantBodyReadError(t *testing.T) {
	store := &fakeStore{}
	h := newHarness(t, store)
	body := unknownLength{io.MultiReader(strings.NewReader(`{"id":1,`), iotest.ErrReader(errors.New("connection reset")))}
	r := httptest.NewRequest(http.MethodPost, "/plants", body)
	r.Header.Set("Content-Type", "application/json")
	msg := checkRecError(t, h.serve(r), http.StatusBadRequest, apierror.MalformedJSON)
	if strings.Contains(msg, "connection reset") {
		t.Errorf("message %q carries the internal read error", msg)
	}
	if n := len(store.Calls()); n != 0 {
		t.Errorf("store called %d times, want 0", n)
	}
}

func TestCreatePlantInvalidBody(t *testing.T) {
	tests := []struct {
		body  string
		code  apierror.Code
		field string
	}{
		{``, apierror.MalformedJSON, ""},
		{`[1]`, apierror.MalformedJSON, ""},
		{`{"id":1,"name":"a"} {}`, apierror.MalformedJSON, ""},
		{`{"name":"a"}`, apierror.MissingField, "id"},
		{`{"id":1}`, apierror.MissingField, "name"},
		{`{"id":"1","name":"a"}`, apierror.WrongType, "id"},
		{`{"id":1,"name":null}`, apierror.WrongType, "name"},
		{`{"id":9223372036854775808,"name":"a"}`, apierror.OutOfRange, "id"},
		{`{"id":1,"name":""}`, apierror.OutOfRange, "name"},
		{`{"id":1,"name":"a","tag":"` + strings.Repeat("x", 101) + `"}`, apierror.OutOfRange, "tag"},
		{`{"id":1,"name":"a","name":"a"}`, apierror.DuplicateKey, "name"},
		{`{"id":1,"name":"a\u0000"}`, apierror.BadCharacters, "name"},
		{`{"id":1,"name":"\ud800"}`, apierror.BadCharacters, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			store := &fakeStore{}
			h := newHarness(t, store)
			msg := checkRecError(t, h.post(tt.body), http.StatusBadRequest, tt.code)
			if tt.field != "" && !names(msg, tt.field) {
				t.Errorf("message %q does not name %q", msg, tt.field)
			}
			if n := len(store.Calls()); n != 0 {
				t.Errorf("store called %d times, want 0", n)
			}
			if got := h.Outcomes(); len(got) != 0 {
				t.Errorf("observed %q, want nothing", got)
			}
		})
	}
}

func TestCreatePlantStoreErrors(t *testing.T) {
	const secret = "10.1.2.3:6379 WRONGTYPE secret-detail"
	tests := []struct {
		name         string
		err          error
		wantStatus   int
		wantCode     apierror.Code
		wantOutcomes []string
		retryAfter   bool
		wantLog      bool // the log carries the error detail at logLevel
		logLevel     zapcore.Level
	}{
		{
			name:         "conflict",
			err:          fmt.Errorf("create plant 7: %w", plant.ErrConflict),
			wantStatus:   http.StatusConflict,
			wantCode:     apierror.IDTaken,
			wantOutcomes: []string{"conflict"},
		},
		{
			name:       "unavailable",
			err:        fmt.Errorf("%w: dial tcp %s: connection refused", plant.ErrUnavailable, secret),
			wantStatus: http.StatusServiceUnavailable,
			wantCode:   apierror.StoreUnavailable,
			retryAfter: true,
			wantLog:    true,
			logLevel:   zapcore.WarnLevel,
		},
		{
			name:       "unavailable wrapped twice",
			err:        fmt.Errorf("redis: %w", fmt.Errorf("%w: %s", plant.ErrUnavailable, secret)),
			wantStatus: http.StatusServiceUnavailable,
			wantCode:   apierror.StoreUnavailable,
			retryAfter: true,
			wantLog:    true,
			logLevel:   zapcore.WarnLevel,
		},
		{
			// 507 without Retry-After: waiting does not help, and the
			// client's retries must not hammer a full store.
			name:       "full",
			err:        fmt.Errorf("storing plant 7: %w: OOM command not allowed when used memory > 'maxmemory' %s", plant.ErrFull, secret),
			wantStatus: http.StatusInsufficientStorage,
			wantCode:   apierror.StoreFull,
			wantLog:    true,
			logLevel:   zapcore.WarnLevel,
		},
		{
			name:       "other error",
			err:        errors.New(secret),
			wantStatus: http.StatusInternalServerError,
			wantCode:   apierror.Internal,
			wantLog:    true,
			logLevel:   zapcore.ErrorLevel,
		},
		{
			name:       "other error wrapping a context error",
			err:        fmt.Errorf("%s: %w", secret, context.Canceled),
			wantStatus: http.StatusInternalServerError,
			wantCode:   apierror.Internal,
			wantLog:    true,
			logLevel:   zapcore.ErrorLevel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{create: func(context.Context, plant.Plant) (plant.Plant, plant.Outcome, error) {
				return plant.Plant{ID: 7, Name: "Other"}, 0, tt.err
			}}
			h := newHarness(t, store)
			rec := h.post(`{"id":7,"name":"Monstera"}`)
			msg := checkRecError(t, rec, tt.wantStatus, tt.wantCode)

			for _, leak := range []string{"10.1.2.3", "WRONGTYPE", "secret-detail", "Other"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message %q reveals %q", msg, leak)
				}
			}
			if tt.wantCode == apierror.IDTaken && (!names(msg, "id") || !strings.Contains(msg, "7")) {
				t.Errorf("message %q does not name the id 7", msg)
			}
			ra := rec.Header().Get("Retry-After")
			if tt.retryAfter {
				if n, err := strconv.Atoi(ra); err != nil || n < 1 {
					t.Errorf("Retry-After = %q, want a positive number of seconds", ra)
				}
			} else if ra != "" {
				t.Errorf("Retry-After = %q, want none", ra)
			}
			if got := h.Outcomes(); strings.Join(got, ",") != strings.Join(tt.wantOutcomes, ",") {
				t.Errorf("observed %q, want %q", got, tt.wantOutcomes)
			}
			if tt.wantLog {
				// The log, not the client, carries the detail.
				entries := h.logs.FilterLevelExact(tt.logLevel).All()
				found := false
				for _, e := range entries {
					if err, ok := e.ContextMap()["error"].(string); ok && strings.Contains(err, "secret-detail") {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s log entry carries the error detail; logs: %v", tt.logLevel, h.logs.All())
				}
			}
		})
	}
}

// TestCreatePlantStoreTimeout: a store that does not answer until its context
// ends makes the request fail with 503 once the store timeout has passed.
func TestCreatePlantStoreTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	type seen struct {
		hasDeadline bool
		deadline    time.Time
		err         error
	}
	seenCh := make(chan seen, 1)
	store := &fakeStore{create: func(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
		dl, ok := ctx.Deadline()
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second): // only if the handler set no deadline
		}
		seenCh <- seen{hasDeadline: ok, deadline: dl, err: ctx.Err()}
		// A Repository reports a store that did not answer in time as unavailable.
		return plant.Plant{}, 0, fmt.Errorf("%w: %w", plant.ErrUnavailable, ctx.Err())
	}}
	h := newHarnessTimeout(t, store, timeout)

	start := time.Now()
	rec := h.post(`{"id":1,"name":"a"}`)
	elapsed := time.Since(start)

	checkRecError(t, rec, http.StatusServiceUnavailable, apierror.StoreUnavailable)
	if ra := rec.Header().Get("Retry-After"); ra == "" {
		t.Error("Retry-After is missing")
	}
	s := <-seenCh
	if !s.hasDeadline {
		t.Fatal("the store's context has no deadline")
	}
	if !errors.Is(s.err, context.DeadlineExceeded) {
		t.Errorf("the store's context ended with %v, want context.DeadlineExceeded", s.err)
	}
	if s.deadline.Before(start) || s.deadline.After(start.Add(timeout+5*time.Second)) {
		t.Errorf("the store's deadline %v is not about %v after the request started at %v", s.deadline, timeout, start)
	}
	if elapsed > 10*time.Second { // sanity only
		t.Errorf("request took %v", elapsed)
	}
}

// TestCreatePlantStoreContext: the store's context carries the request's
// values (the trace) and the store timeout, but not the client's departure.
func TestCreatePlantStoreContext(t *testing.T) {
	type key struct{}
	gotValue := make(chan any, 1)
	store := &fakeStore{create: func(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
		gotValue <- ctx.Value(key{})
		return p, plant.Created, nil
	}}
	h := newHarness(t, store)
	r := newPost(`{"id":1,"name":"a"}`, "application/json")
	r = r.WithContext(context.WithValue(r.Context(), key{}, "trace-123"))
	plantResponse(t, h.serve(r))
	if v := <-gotValue; v != "trace-123" {
		t.Errorf("store saw context value %v, want trace-123", v)
	}

	// A client that goes away does not cancel a create that has started:
	// it runs to its end, bounded by the store timeout alone.
	h = newHarnessTimeout(t, store, 50*time.Millisecond)
	finished := make(chan error, 1)
	store.create = func(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
		<-ctx.Done()
		finished <- ctx.Err()
		return plant.Plant{}, 0, fmt.Errorf("%w: %w", plant.ErrUnavailable, ctx.Err())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := h.serve(newPost(`{"id":1,"name":"a"}`, "application/json").WithContext(ctx))
	checkRecError(t, rec, http.StatusServiceUnavailable, apierror.StoreUnavailable)
	if err := <-finished; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("store context of a request whose client left ended with %v, want the store timeout", err)
	}
}

// TestCreatePlantReplay: a replay answers with the plant the store holds, not
// with the request's.
func TestCreatePlantReplay(t *testing.T) {
	tests := []struct {
		name     string
		stored   plant.Plant
		wantBody string
	}{
		{"stored with tag", plant.Plant{ID: 7, Name: "Stored name", Tag: ptr("stored tag")}, `{"name":"Stored name","tag":"stored tag"}`},
		{"stored without tag", plant.Plant{ID: 7, Name: "Stored name"}, `{"name":"Stored name"}`},
		{"stored with empty tag", plant.Plant{ID: 7, Name: "Stored name", Tag: ptr("")}, `{"name":"Stored name","tag":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{create: func(context.Context, plant.Plant) (plant.Plant, plant.Outcome, error) {
				return tt.stored, plant.Replayed, nil
			}}
			h := newHarness(t, store)
			rec := h.post(`{"id":7,"name":"Request name","tag":"request tag"}`)
			plantResponse(t, rec)
			if got := strings.TrimSuffix(rec.Body.String(), "\n"); got != tt.wantBody {
				t.Errorf("body = %s, want %s", got, tt.wantBody)
			}
			if got := h.Outcomes(); len(got) != 1 || got[0] != "replayed" {
				t.Errorf("observed %q, want [replayed]", got)
			}
		})
	}
}

func TestCreatePlantObserver(t *testing.T) {
	store := &fakeStore{create: func(_ context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error) {
		switch p.ID {
		case 1:
			return p, plant.Created, nil
		case 2:
			return p, plant.Replayed, nil
		case 3:
			return plant.Plant{ID: 3, Name: "x"}, 0, fmt.Errorf("wrapped: %w", plant.ErrConflict)
		default:
			return plant.Plant{}, 0, fmt.Errorf("%w: down", plant.ErrUnavailable)
		}
	}}
	h := newHarness(t, store)
	wantStatus := []int{200, 200, 409, 503}
	for i, id := range []int{1, 2, 3, 4} {
		rec := h.post(fmt.Sprintf(`{"id":%d,"name":"a"}`, id))
		if rec.Code != wantStatus[i] {
			t.Errorf("id %d: status %d, want %d", id, rec.Code, wantStatus[i])
		}
	}
	h.post(`{"id":5}`) // invalid: never reaches the store
	want := []string{"created", "replayed", "conflict"}
	if got := h.Outcomes(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("observed %q, want %q", got, want)
	}
}

func TestCreatePlantNilObserver(t *testing.T) {
	handler := httpapi.NewCreatePlantHandler(&fakeStore{}, time.Second, zap.NewNop(), nil)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, newPost(`{"id":1,"name":"a"}`, "application/json"))
	name, tag := plantResponse(t, rec)
	if name != "a" || tag != nil {
		t.Errorf("got %q %v", name, tag)
	}
}
