package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/otlptest"
	"github.com/plantstore/plantstore/internal/redistest"
)

var (
	hex32Pattern   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hex16Pattern   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	loopbackClient = regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`)
)

// logLine is one decoded JSON log line.
type logLine map[string]any

func (l logLine) str(key string) string {
	s, _ := l[key].(string)
	return s
}

func (l logLine) isAccess() bool { return l.str("logger") == "access" && l.str("msg") == "request" }

// jsonLines decodes the JSON lines of the log; other lines (go-redis writes
// plain text) are left out.
func jsonLines(lines []string) []logLine {
	var out []logLine
	for _, line := range lines {
		var l logLine
		if json.Unmarshal([]byte(line), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// withRequestID returns the decoded lines carrying the request id.
func withRequestID(lines []logLine, id string) []logLine {
	var out []logLine
	for _, l := range lines {
		if l.str("request_id") == id {
			out = append(out, l)
		}
	}
	return out
}

// waitLog polls the log until match accepts it and returns its lines.
func waitLog(t *testing.T, s *service, within time.Duration, what string, match func([]logLine) bool) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		lines := s.Logs.All()
		if match(jsonLines(lines)) {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v the log did not show %s:\n%s", within, what, strings.Join(lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logCase is one request of TestAccessLog and what its access line must say.
type logCase struct {
	name      string
	method    string
	path      string
	body      string
	header    map[string]string
	status    int
	route     string
	requestID string // sent as X-Request-ID when not empty
	keepID    bool   // the service must keep it; otherwise it makes a 32-hex one

	// Filled in when sent.
	echoed     string
	bytes      int
	userAgent  string
	traceID    string // the incoming traceparent's, if any
	parentSpan string
}

// TestAccessLog checks the access log through the binary, with tracing on
// and no sampling of log lines: one line per request with every field,
// request ids kept or replaced and echoed, the trace id continued from
// traceparent, levels by status, and a 503's cause logged with its ids.
func TestAccessLog(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Env: rec.env(), Extra: []string{"--log-sampling-initial", "0"}})

	noAuth := map[string]string{"Authorization": ""}
	cases := []*logCase{
		{name: "created", body: `{"id": 1, "name": "Monstera"}`, status: 200, route: "/plants", requestID: "req-created", keepID: true},
		{name: "replayed", body: `{"id": 1, "name": "Monstera"}`, status: 200, route: "/plants", requestID: "req-replayed", keepID: true},
		{name: "conflict", body: `{"id": 1, "name": "Cactus"}`, status: 409, route: "/plants", requestID: "req-conflict", keepID: true},
		{name: "bad body", body: `{"id": 2,`, status: 400, route: "/plants", requestID: "req-bad-body", keepID: true},
		{name: "wrong content type", body: `{"id": 2, "name": "x"}`, header: map[string]string{"Content-Type": "text/plain"}, status: 415, route: "/plants", requestID: "req-415", keepID: true},
		{name: "no credentials", body: `{"id": 2, "name": "x"}`, header: noAuth, status: 401, route: "/plants", requestID: "req-401-missing", keepID: true},
		{name: "wrong token", body: `{"id": 2, "name": "x"}`, header: map[string]string{"Authorization": "Bearer not-the-token"}, status: 401, route: "/plants", requestID: "req-401-rejected", keepID: true},
		{name: "unknown path", method: "GET", path: "/nope/deeper", status: 404, route: "unmatched", requestID: "req-404", keepID: true},
		{name: "made-up method", method: "FOO", path: "/nope", status: 404, route: "unmatched", requestID: "req-404-foo", keepID: true},
		{name: "method not allowed", method: "PUT", body: `{"id": 2, "name": "x"}`, status: 405, route: "/plants", requestID: "req-405", keepID: true},
		{name: "openapi", method: "GET", path: "/openapi.yaml", header: noAuth, status: 200, route: "/openapi.yaml", requestID: "req-openapi", keepID: true},
		{name: "every allowed character", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: "Az09-._:" + randomHex(t, 4), keepID: true},
		{name: "128 characters", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: strings.Repeat("b", 128), keepID: true},
		{name: "no request id", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml"},
		{name: "spaces", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: "has spaces in it"},
		{name: "200 characters", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: strings.Repeat("a", 200)},
		{name: "129 characters", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: strings.Repeat("c", 129)},
		{name: "quote and braces", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: `x"}{"level":"error`},
		{name: "non-ASCII", method: "GET", path: "/openapi.yaml", status: 200, route: "/openapi.yaml", requestID: "réq-1"},
	}
	send := func(c *logCase) {
		t.Helper()
		if c.method == "" {
			c.method = http.MethodPost
		}
		if c.path == "" {
			c.path = "/plants"
		}
		h := map[string]string{}
		for k, v := range c.header {
			h[k] = v
		}
		c.userAgent = "plantstore-e2e/" + strings.ReplaceAll(c.name, " ", "-")
		h["User-Agent"] = c.userAgent
		if c.requestID != "" {
			h["X-Request-ID"] = c.requestID
		}
		traceID, parentSpan, traceparent := newTraceparent(t)
		c.traceID, c.parentSpan = traceID, parentSpan
		h["traceparent"] = traceparent
		h["baggage"] = "tenant=t1"
		r := s.Do(t, c.method, c.path, c.body, h)
		if r.Status != c.status {
			t.Fatalf("%s: status %d, want %d: %s", c.name, r.Status, c.status, r.Body)
		}
		c.echoed, c.bytes = r.Header.Get("X-Request-ID"), len(r.Body)
		if c.keepID && c.echoed != c.requestID {
			t.Errorf("%s: X-Request-ID %q echoed as %q, want it kept", c.name, c.requestID, c.echoed)
		}
		if !c.keepID && !hex32Pattern.MatchString(c.echoed) {
			t.Errorf("%s: X-Request-ID %q answered with %q, want a generated id of 32 hex digits", c.name, c.requestID, c.echoed)
		}
	}
	for _, c := range cases {
		send(c)
	}
	generated := make(map[string]string)
	for _, c := range cases {
		if !c.keepID {
			if other, dup := generated[c.echoed]; dup {
				t.Errorf("requests %q and %q were given the same id %s", other, c.name, c.echoed)
			}
			generated[c.echoed] = c.name
		}
	}

	// Every line of these requests is written before its access line, so once
	// the last access line is in, the log of the 2xx and 4xx phase is complete.
	last := cases[len(cases)-1].echoed
	before := jsonLines(waitLog(t, s, 10*time.Second, "the last access line", func(lines []logLine) bool {
		return len(withRequestID(lines, last)) > 0
	}))
	t.Run("no warn or error lines for 2xx and 4xx", func(t *testing.T) {
		for _, l := range before {
			if lvl := l.str("level"); lvl != "info" && lvl != "debug" {
				t.Errorf("a %s line while serving only 2xx and 4xx: %v", lvl, l)
			}
		}
		for _, c := range cases {
			for _, l := range withRequestID(before, c.echoed) {
				if !l.isAccess() {
					t.Errorf("%s (%d): a line besides the access line: %v", c.name, c.status, l)
				}
			}
		}
	})

	// A 503: an error access line, and the cause at warn with the same ids.
	redis.Stop()
	unavailable := &logCase{name: "store unavailable", body: `{"id": 3, "name": "Fern"}`, status: 503, route: "/plants", requestID: "req-503", keepID: true}
	send(unavailable)
	cases = append(cases, unavailable)
	if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.Logs)
	}
	all := jsonLines(s.Logs.All())

	var access int
	for _, l := range all {
		if l.isAccess() {
			access++
		}
	}
	if access != len(cases) {
		t.Errorf("%d access lines for %d requests", access, len(cases))
	}

	serverSpans := rec.Spans()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var line logLine
			for _, l := range withRequestID(all, c.echoed) {
				if l.isAccess() {
					if line != nil {
						t.Fatalf("two access lines with request_id %q:\n%v\n%v", c.echoed, line, l)
					}
					line = l
				}
			}
			if line == nil {
				t.Fatalf("no access line with request_id %q", c.echoed)
			}
			wantLevel := "info"
			if c.status >= 500 {
				wantLevel = "error"
			}
			for k, want := range map[string]any{
				"level": wantLevel, "method": c.method, "route": c.route, "path": c.path,
				"status": float64(c.status), "bytes": float64(c.bytes), "user_agent": c.userAgent,
				"request_id": c.echoed, "trace_id": c.traceID,
			} {
				if got, ok := line[k]; !ok || got != want {
					t.Errorf("access line %s = %#v (present %v), want %#v\n%v", k, got, ok, want, line)
				}
			}
			if d, ok := line["duration"].(float64); !ok || d <= 0 || d > 10 {
				t.Errorf("access line duration = %#v, want seconds as a positive number", line["duration"])
			}
			if !loopbackClient.MatchString(line.str("remote_addr")) {
				t.Errorf("access line remote_addr = %q, want the client's 127.0.0.1:port", line.str("remote_addr"))
			}
			spanID := line.str("span_id")
			if !hex16Pattern.MatchString(spanID) || spanID == c.parentSpan {
				t.Errorf("access line span_id = %q, want the server span's own id (not the caller's %s)", spanID, c.parentSpan)
			}
			if srv, ok := serverSpan(serverSpans, c.traceID, c.parentSpan); !ok {
				t.Errorf("no server span exported for trace %s", c.traceID)
			} else if srv.SpanID() != spanID {
				t.Errorf("access line span_id %s, but the exported server span is %s", spanID, srv.SpanID())
			}
			if c.status < 500 {
				return
			}
			var cause logLine
			for _, l := range withRequestID(all, c.echoed) {
				if !l.isAccess() {
					if cause != nil {
						t.Errorf("a second line besides the access line: %v", l)
					}
					cause = l
				}
			}
			if cause == nil {
				t.Fatalf("the 503 has no line from the api logger with its request_id:\n%s", s.Logs)
			}
			for k, want := range map[string]string{"logger": "api", "level": "warn", "trace_id": c.traceID, "span_id": spanID} {
				if got := cause.str(k); got != want {
					t.Errorf("the 503's cause line %s = %q, want %q: %v", k, got, want, cause)
				}
			}
		})
	}
	rec.CheckNoRefusals(t)
}

// TestTokensNeverInTelemetry sends the accepted token and refused
// credentials through every path, with debug logs and every trace sampled:
// no log line, span or metric may hold any of them.
func TestTokensNeverInTelemetry(t *testing.T) {
	rec := newOTLPReceiver(t)
	redis := redistest.Start(t)
	s := startService(t, options{RedisAddr: redis.Addr, Env: rec.env(),
		Extra: []string{"--log-level", "debug", "--log-sampling-initial", "0"}})

	wrong := "wrong-token-" + randomHex(t, 12)
	malformed := "malformed" + randomHex(t, 12)
	basic := base64.StdEncoding.EncodeToString([]byte("user:basic-secret-" + randomHex(t, 12)))
	secrets := []string{s.Token, wrong, malformed, basic}

	type req struct {
		method, path, body string
		auth               string
		status             int
	}
	bearer := "Bearer " + s.Token
	reqs := []req{
		{"POST", "/plants", `{"id": 1, "name": "x"}`, bearer, 200},
		{"POST", "/plants", `{"id": 1, "name": "x"}`, bearer, 200},
		{"POST", "/plants", `{"id": 1, "name": "y"}`, bearer, 409},
		{"POST", "/plants", `{"id": 2,`, bearer, 400},
		{"GET", "/plants", ``, bearer, 200},
		{"GET", "/plants/1", ``, bearer, 200},
		{"PUT", "/plants", ``, bearer, 405},
		{"GET", "/nope", ``, bearer, 404},
		{"GET", "/openapi.yaml", ``, bearer, 200},
		{"POST", "/plants", `{"id": 3, "name": "x"}`, "Bearer " + wrong, 401},
		{"POST", "/plants", `{"id": 3, "name": "x"}`, "Bearer " + malformed + "@@", 401},
		{"POST", "/plants", `{"id": 3, "name": "x"}`, "Bearer " + s.Token + " " + wrong, 401},
		{"POST", "/plants", `{"id": 3, "name": "x"}`, "Basic " + basic, 401},
		{"POST", "/plants", `{"id": 3, "name": "x"}`, "bEaReR " + s.Token, 200},
	}
	for i, r := range reqs {
		_, _, traceparent := newTraceparent(t)
		got := s.Do(t, r.method, r.path, r.body, map[string]string{"Authorization": r.auth, "traceparent": traceparent})
		if got.Status != r.status {
			t.Fatalf("request %d (%s %s): status %d, want %d: %s", i, r.method, r.path, got.Status, r.status, got.Body)
		}
	}
	redis.Stop()
	if got := s.Post(t, `{"id": 4, "name": "x"}`); got.Status != 503 {
		t.Fatalf("create with Redis down: %d %s", got.Status, got.Body)
	}
	metrics := s.Scrape(t, openMetrics)
	if code := s.Signal(t, syscall.SIGTERM, defaultExitWait); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.Logs)
	}

	lines := s.Logs.All()
	var debug bool
	for _, l := range jsonLines(lines) {
		debug = debug || l.str("level") == "debug"
	}
	if !debug {
		t.Errorf("no debug line was logged: the test did not run at debug level")
	}
	for _, line := range lines {
		for i, secret := range secrets {
			if strings.Contains(line, secret) {
				t.Errorf("credential %d reached the log: %s", i, line)
			}
		}
	}
	for i, secret := range secrets {
		if strings.Contains(metrics, secret) {
			t.Errorf("credential %d reached /metrics", i)
		}
	}
	if n := len(rec.Spans()); n < len(reqs) {
		t.Fatalf("only %d spans exported for %d requests", n, len(reqs))
	}
	checkNoSecrets(t, rec, secrets...)
	rec.CheckNoRefusals(t)
	if t.Failed() {
		t.Logf("spans:\n%s", otlptest.Describe(rec.Spans()))
	}
}
