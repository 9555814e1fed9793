package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/plantstore/plantstore/internal/otlptest"
	"github.com/plantstore/plantstore/internal/redistest"
)

// TestResourceRoutesTelemetry: the 1.1.0 routes (GET /plants, GET and DELETE
// /plants/{id}) are measured, traced and logged by route template through the
// binary, and the plant ids in their paths reach no metric label, no span
// name and no route.
func TestResourceRoutesTelemetry(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Env: rec.env(), Extra: []string{"--log-sampling-initial", "0"}})

	// Ids no other number in the telemetry is likely to contain.
	const id, missing = int64(7301987654321), int64(-5512345678901)
	raw := []string{strconv.FormatInt(id, 10), strconv.FormatInt(missing, 10)}
	if r := s.Post(t, fmt.Sprintf(`{"id": %d, "name": "Telemetry"}`, id)); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	type call struct {
		method, path string
		status       int
		route        string
		traceID      string // filled in when sent
		parentID     string
		requestID    string
	}
	calls := []*call{
		{method: http.MethodGet, path: fmt.Sprintf("/plants/%d", id), status: 200, route: "/plants/{id}"},
		{method: http.MethodGet, path: fmt.Sprintf("/plants/%d", missing), status: 404, route: "/plants/{id}"},
		{method: http.MethodGet, path: "/plants?limit=1", status: 200, route: "/plants"},
		{method: http.MethodGet, path: "/plants", status: 200, route: "/plants"},
		{method: http.MethodDelete, path: fmt.Sprintf("/plants/%d", id), status: 204, route: "/plants/{id}"},
		{method: http.MethodDelete, path: fmt.Sprintf("/plants/%d", id), status: 404, route: "/plants/{id}"},
		{method: http.MethodPatch, path: fmt.Sprintf("/plants/%d", missing), status: 405, route: "/plants/{id}"},
	}
	for i, c := range calls {
		var traceparent string
		c.traceID, c.parentID, traceparent = newTraceparent(t)
		c.requestID = fmt.Sprintf("resource-telemetry-%d", i)
		r := s.Do(t, c.method, c.path, "", map[string]string{"traceparent": traceparent, "X-Request-ID": c.requestID})
		if r.Status != c.status {
			t.Fatalf("%s %s = %d, want %d: %s", c.method, c.path, r.Status, c.status, r.Body)
		}
	}

	t.Run("metrics by route template", func(t *testing.T) {
		families, text := s.Metrics(t)
		got := requestCounts(t, families)
		for k, want := range map[series]uint64{
			{"POST", "/plants", "200"}:          1,
			{"GET", "/plants/{id}", "200"}:      1,
			{"GET", "/plants/{id}", "404"}:      1,
			{"GET", "/plants", "200"}:           2,
			{"DELETE", "/plants/{id}", "204"}:   1,
			{"DELETE", "/plants/{id}", "404"}:   1,
			{"PATCH", "/plants/{id}", "405"}:    1,
			{"GET", "unmatched", "404"}:         0,
			{"GET", "/plants/" + raw[0], "200"}: 0,
		} {
			if got[k] != want {
				t.Errorf("%s%v counted %d, want %d; all:\n%s", httpDuration, k, got[k], want, formatCounts(got))
			}
		}
		store := map[string]uint64{}
		for _, m := range family(t, families, storeDuration, dto.MetricType_HISTOGRAM).GetMetric() {
			l := labelsOf(m)
			store[l["operation"]+"/"+l["outcome"]] = m.GetHistogram().GetSampleCount()
		}
		// A missing plant is an answer of the store, not a failure of it.
		for k, want := range map[string]uint64{"get/ok": 2, "list/ok": 2, "delete/ok": 2, "create/ok": 1} {
			if store[k] != want {
				t.Errorf("%s{%s} = %d, want %d; all:\n%s", storeDuration, k, store[k], want, formatCounts(store))
			}
		}
		// No raw id in any label of any family (exemplars' trace ids are hex
		// and cannot hold these decimal ids by chance: they are too long).
		for name, mf := range families {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					for _, r := range raw {
						if strings.Contains(l.GetValue(), r) {
							t.Errorf("%s{%s=%q} carries the plant id %s", name, l.GetName(), l.GetValue(), r)
						}
					}
				}
			}
		}
		for _, r := range raw {
			if strings.Contains(text, r) {
				t.Errorf("the plant id %s appears in /metrics", r)
			}
		}
	})

	t.Run("server spans named by route template", func(t *testing.T) {
		for _, c := range calls {
			spans := rec.WaitSpans(t, spanWait, "the server span of "+c.method+" "+c.path, func(spans []otlptest.Span) bool {
				_, ok := serverSpan(spans, c.traceID, c.parentID)
				return ok
			})
			srv, _ := serverSpan(spans, c.traceID, c.parentID)
			if want := c.method + " " + c.route; srv.GetName() != want {
				t.Errorf("%s %s: server span named %q, want %q", c.method, c.path, srv.GetName(), want)
			}
			wantAttr(t, srv, "http.route", c.route)
			wantAttr(t, srv, "http.request.method", c.method)
			wantAttr(t, srv, "http.response.status_code", strconv.Itoa(c.status))
			// 4xx are the client's: not an error of the server span.
			if code := srv.GetStatus().GetCode(); code == tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("%s %s: a %d has span status %v", c.method, c.path, c.status, code)
			}
			for _, r := range raw {
				if strings.Contains(srv.GetName(), r) {
					t.Errorf("server span name %q carries the plant id", srv.GetName())
				}
			}
		}
	})

	t.Run("access log lines by route template", func(t *testing.T) {
		lines := jsonLines(waitLog(t, s, spanWait, "an access line for every call", func(lines []logLine) bool {
			for _, c := range calls {
				if !containsAccess(withRequestID(lines, c.requestID)) {
					return false
				}
			}
			return true
		}))
		for _, c := range calls {
			for _, l := range withRequestID(lines, c.requestID) {
				if !l.isAccess() {
					continue
				}
				if l.str("route") != c.route || l.str("method") != c.method || l["status"] != float64(c.status) {
					t.Errorf("%s %s: access line route %q, method %q, status %v; want %q, %q, %d", c.method, c.path,
						l.str("route"), l.str("method"), l["status"], c.route, c.method, c.status)
				}
				if want, _, _ := strings.Cut(c.path, "?"); l.str("path") != want {
					t.Errorf("%s %s: access line path %q, want %q", c.method, c.path, l.str("path"), want)
				}
				if l.str("trace_id") != c.traceID {
					t.Errorf("%s %s: access line trace_id %q, want %q", c.method, c.path, l.str("trace_id"), c.traceID)
				}
			}
		}
	})
}

func containsAccess(lines []logLine) bool {
	for _, l := range lines {
		if l.isAccess() {
			return true
		}
	}
	return false
}
