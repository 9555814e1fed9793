package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/plantstore/plantstore/internal/otlptest"
	"github.com/plantstore/plantstore/internal/redistest"
)

const (
	storeScope = "github.com/plantstore/plantstore/internal/store"
	spanWait   = 15 * time.Second
)

// serverSpan returns the SERVER span of the trace whose parent is parentID.
func serverSpan(spans []otlptest.Span, traceID, parentID string) (otlptest.Span, bool) {
	for _, s := range otlptest.InTrace(spans, traceID) {
		if s.GetKind() == tracepb.Span_SPAN_KIND_SERVER && s.ParentSpanID() == parentID {
			return s, true
		}
	}
	return otlptest.Span{}, false
}

// childrenOf returns the spans whose parent is span.
func childrenOf(spans []otlptest.Span, span otlptest.Span) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range otlptest.InTrace(spans, span.TraceID()) {
		if s.ParentSpanID() == span.SpanID() {
			out = append(out, s)
		}
	}
	return out
}

// hasServerAndRedisSpans matches once the trace's server span and a Redis
// child of it have arrived.
func hasServerAndRedisSpans(traceID, parentID string) func([]otlptest.Span) bool {
	return func(spans []otlptest.Span) bool {
		srv, ok := serverSpan(spans, traceID, parentID)
		if !ok {
			return false
		}
		return slices.ContainsFunc(childrenOf(spans, srv), isCreateScript)
	}
}

// isCreateScript matches the span of the store's create script: EVALSHA, or
// EVAL when Redis did not have the script cached yet.
func isCreateScript(c otlptest.Span) bool {
	return (c.GetName() == "evalsha" || c.GetName() == "eval") && c.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR
}

func wantAttr(t *testing.T, s otlptest.Span, key, want string) {
	t.Helper()
	if got, ok := s.Attr(key); !ok || got != want {
		t.Errorf("span %q: attribute %s = %q (present %v), want %q", s.GetName(), key, got, ok, want)
	}
}

// checkNoSecrets fails when a span carries one of the secrets, an
// Authorization header or a bearer credential anywhere: name, attributes,
// events, links, resource.
func checkNoSecrets(t *testing.T, rec *otlpReceiver, secrets ...string) {
	t.Helper()
	for _, s := range rec.Spans() {
		for _, text := range s.Texts() {
			for _, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("span %q carries a token: %s", s.GetName(), text)
				}
			}
			if containsFold(text, "authorization") || containsFold(text, "bearer ") {
				t.Errorf("span %q carries credentials: %s", s.GetName(), text)
			}
		}
	}
	// And the raw export requests, in case a field was missed above.
	for _, b := range rec.Bodies() {
		for _, secret := range secrets {
			if strings.Contains(string(b), secret) {
				t.Errorf("an OTLP export request contains a token")
			}
		}
	}
}

// TestTracesExported checks the spans the service exports over OTLP/HTTP:
// the server span continues the caller's trace under the route's name, the
// Redis command is its child, the resource names the service and the pod,
// a 503 is an error, and the last spans are flushed at shutdown.
func TestTracesExported(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Env: rec.env()})

	plantName := "Monstera-" + randomHex(t, 6)
	traceID, parentID, traceparent := newTraceparent(t)
	r := s.Do(t, http.MethodPost, "/plants", fmt.Sprintf(`{"id": 1, "name": %q}`, plantName),
		map[string]string{"traceparent": traceparent, "baggage": "tenant=t1"})
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	spans := rec.WaitSpans(t, spanWait, "the server span of "+traceID+" and its Redis child", hasServerAndRedisSpans(traceID, parentID))
	srv, _ := serverSpan(spans, traceID, parentID)

	t.Run("server span", func(t *testing.T) {
		if srv.GetName() != "POST /plants" {
			t.Errorf("server span named %q, want %q", srv.GetName(), "POST /plants")
		}
		if srv.Scope.GetName() == "" {
			t.Error("server span has no instrumentation scope name")
		}
		wantAttr(t, srv, "http.route", "/plants")
		wantAttr(t, srv, "http.response.status_code", "200")
		wantAttr(t, srv, "http.request.method", "POST")
		wantAttr(t, srv, "url.path", "/plants")
		if c := srv.GetStatus().GetCode(); c == tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("a 200 has span status %v", c)
		}
		if n := len(otlptest.InTrace(spans, traceID)); n < 2 {
			t.Errorf("%d spans in the trace", n)
		}
		// Exactly one server span in the trace: the incoming one is its parent.
		var servers int
		for _, sp := range otlptest.InTrace(spans, traceID) {
			if sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
				servers++
			}
		}
		if servers != 1 {
			t.Errorf("%d server spans in the trace, want 1:\n%s", servers, otlptest.Describe(otlptest.InTrace(spans, traceID)))
		}
	})

	t.Run("redis child span", func(t *testing.T) {
		var set otlptest.Span
		for _, c := range childrenOf(spans, srv) {
			if isCreateScript(c) {
				set = c
			}
		}
		if set.Span == nil {
			t.Fatalf("no Redis create-script span under the server span:\n%s", otlptest.Describe(otlptest.InTrace(spans, traceID)))
		}
		if set.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("Redis span kind %v, want CLIENT", set.GetKind())
		}
		if set.Scope.GetName() != storeScope {
			t.Errorf("Redis span from scope %q, want %q", set.Scope.GetName(), storeScope)
		}
		wantAttr(t, set, "db.system", "redis")
		host, port, _ := strings.Cut(redis.Addr, ":")
		wantAttr(t, set, "server.address", host)
		wantAttr(t, set, "server.port", port)
		// The command's arguments hold the plant: they stay out of the span.
		if v, ok := set.Attr("db.statement"); ok {
			t.Errorf("Redis span records the statement: %q", v)
		}
		for _, sp := range otlptest.InTrace(spans, traceID) {
			for _, text := range sp.Texts() {
				if strings.Contains(text, plantName) {
					t.Errorf("span %q carries the plant's data: %s", sp.GetName(), text)
				}
			}
		}
		if c := set.GetStatus().GetCode(); c == tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("a successful SET has span status %v", c)
		}
	})

	t.Run("resource", func(t *testing.T) {
		for _, sp := range spans {
			want := map[string]string{"service.name": "plantstore", "k8s.pod.name": "pod-1", "k8s.namespace.name": "ns-1", "k8s.node.name": "node-1"}
			for k, v := range want {
				if got, ok := sp.ResourceAttr(k); !ok || got != v {
					t.Errorf("span %q: resource %s = %q (present %v), want %q", sp.GetName(), k, got, ok, v)
				}
			}
			for _, k := range []string{"service.version", "service.instance.id"} {
				if got, _ := sp.ResourceAttr(k); got == "" {
					t.Errorf("span %q: resource has no %s", sp.GetName(), k)
				}
			}
			if t.Failed() {
				return
			}
		}
	})

	t.Run("503 is an error", func(t *testing.T) {
		redis.Stop()
		traceID, parentID, traceparent := newTraceparent(t)
		r := s.Do(t, http.MethodPost, "/plants", `{"id": 2, "name": "Fern"}`, map[string]string{"traceparent": traceparent})
		if r.Status != 503 {
			t.Fatalf("create with Redis down: %d %s", r.Status, r.Body)
		}
		// Stop at once: the batch's 100ms may not have passed, and the
		// shutdown must flush the request's spans before the process exits.
		if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
			t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.Logs)
		}
		spans := rec.Spans()
		srv, ok := serverSpan(spans, traceID, parentID)
		if !ok {
			t.Fatalf("the 503's server span was not exported by the time the process exited:\n%s", otlptest.Describe(spans))
		}
		if srv.GetName() != "POST /plants" {
			t.Errorf("server span named %q", srv.GetName())
		}
		wantAttr(t, srv, "http.response.status_code", "503")
		if c := srv.GetStatus().GetCode(); c != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("a 503's server span has status %v, want ERROR", c)
		}
	})

	t.Run("no credentials in spans", func(t *testing.T) {
		checkNoSecrets(t, rec, s.Token)
	})
	rec.CheckNoRefusals(t)
}

// TestTracesFlushedOnShutdown: with a batch delay of an hour, only the
// shutdown can deliver a request's spans; SIGTERM must.
func TestTracesFlushedOnShutdown(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	env := append(rec.env(), "OTEL_BSP_SCHEDULE_DELAY=3600000") // the last value wins
	s := startService(t, options{RedisAddr: redis.Addr, Env: env})

	traceID, parentID, traceparent := newTraceparent(t)
	if r := s.Do(t, http.MethodPost, "/plants", `{"id": 1, "name": "Ivy"}`, map[string]string{"traceparent": traceparent}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if got := otlptest.InTrace(rec.Spans(), traceID); len(got) != 0 {
		t.Fatalf("spans exported before the hour's batch delay (is OTEL_BSP_SCHEDULE_DELAY ignored?):\n%s", otlptest.Describe(got))
	}
	if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.Logs)
	}
	spans := rec.Spans()
	if !hasServerAndRedisSpans(traceID, parentID)(spans) {
		t.Fatalf("after exit the receiver lacks the request's server and Redis spans: the shutdown did not flush them:\n%s", otlptest.Describe(spans))
	}
	rec.CheckNoRefusals(t)
}

// exemplarLine matches a bucket line of the OpenMetrics exposition with an
// exemplar, capturing the labels and the exemplar's trace id.
var exemplarLine = regexp.MustCompile(`^` + httpDuration + `_bucket\{([^}]*)\} \S+ # \{trace_id="([^"]*)"\} \S+`)

// TestExemplarsCarryTraceIDs: with tracing on, the request histogram's
// buckets carry the trace id of a sampled request as an exemplar, in the
// OpenMetrics exposition.
func TestExemplarsCarryTraceIDs(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Env: rec.env()})

	sent := make(map[string]bool)
	var last, lastParent string
	for i := range 3 {
		traceID, parentID, traceparent := newTraceparent(t)
		sent[traceID] = true
		last, lastParent = traceID, parentID
		if r := s.Do(t, http.MethodPost, "/plants", fmt.Sprintf(`{"id": %d, "name": "x"}`, i), map[string]string{"traceparent": traceparent}); r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	rec.WaitSpans(t, spanWait, "the last request's spans", hasServerAndRedisSpans(last, lastParent))

	text := s.Scrape(t, openMetrics)

	received := make(map[string]bool)
	for _, sp := range rec.Spans() {
		received[sp.TraceID()] = true
	}
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	var found int
	for _, line := range strings.Split(text, "\n") {
		m := exemplarLine.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, httpDuration+"_bucket") && strings.Contains(line, "#") {
				t.Errorf("bucket line with a malformed exemplar: %s", line)
			}
			continue
		}
		labels, id := m[1], m[2]
		if !hex32.MatchString(id) || id == strings.Repeat("0", 32) {
			t.Errorf("exemplar trace_id %q is not 32 lower-case hex digits: %s", id, line)
		}
		if !received[id] {
			t.Errorf("exemplar trace_id %s is a trace the collector never received: %s", id, line)
		}
		if strings.Contains(labels, `method="POST"`) && strings.Contains(labels, `route="/plants"`) && strings.Contains(labels, `code="200"`) {
			if !sent[id] {
				t.Errorf("POST /plants exemplar %s is none of the traces sent", id)
			}
			found++
		}
	}
	if found == 0 {
		t.Fatalf("no POST /plants 200 bucket carries a trace_id exemplar:\n%s", grepLines(text, httpDuration))
	}
	rec.CheckNoRefusals(t)
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
