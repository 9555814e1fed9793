package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// apiServer is an API server's Secrets of one namespace, over TLS with a
// bearer token, answering as kube-apiserver does for the calls Client makes
// (404 and 409 with a Status body, resourceVersion checked on update).
type apiServer struct {
	*httptest.Server
	mu       sync.Mutex
	secrets  map[string]*Secret
	version  int
	calls    []string
	deny     bool // 403 every call, as without the hook's RBAC
	raceOnce bool // the next create meets a Secret made meanwhile (409)
	// extra answers the calls of other resources; false: not its call.
	extra func(w http.ResponseWriter, r *http.Request) bool
}

const testToken = "hook-sa-token"

func newAPIServer(t *testing.T) (*apiServer, ClientConfig) {
	t.Helper()
	a := &apiServer{secrets: map[string]*Secret{}}
	a.Server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw})
	must(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "token"), []byte(testToken+"\n"), 0o600))
	return a, ClientConfig{Server: a.URL, TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt"), Namespace: "shop"}
}

func (a *apiServer) fail(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		a.fail(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	if a.deny {
		a.fail(w, 403, "Forbidden", `secrets is forbidden: User "system:serviceaccount:shop:x" cannot get resource "secrets"`)
		return
	}
	if a.extra != nil && a.extra(w, r) {
		return
	}
	const prefix = "/api/v1/namespaces/shop/secrets"
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/")
	if !strings.HasPrefix(r.URL.Path, prefix) {
		a.fail(w, 404, "NotFound", "the server could not find the requested resource")
		return
	}
	reply := func(s *Secret) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	}
	switch r.Method {
	case http.MethodGet:
		s, ok := a.secrets[name]
		if !ok {
			a.fail(w, 404, "NotFound", fmt.Sprintf(`secrets %q not found`, name))
			return
		}
		reply(s)
	case http.MethodPost:
		var s Secret
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil || r.Header.Get("Content-Type") != "application/json" {
			a.fail(w, 400, "BadRequest", "bad body")
			return
		}
		if a.raceOnce {
			a.raceOnce = false
			a.put(&Secret{Metadata: Metadata{Name: s.Metadata.Name}, Data: map[string][]byte{"tokens": []byte("theirs\n"), "token": []byte("theirs\n"), "redis-password": []byte("theirs")}})
		}
		if _, ok := a.secrets[s.Metadata.Name]; ok {
			a.fail(w, 409, "AlreadyExists", fmt.Sprintf(`secrets %q already exists`, s.Metadata.Name))
			return
		}
		reply(a.put(&s))
	case http.MethodPut:
		var s Secret
		_ = json.NewDecoder(r.Body).Decode(&s)
		if old, ok := a.secrets[name]; !ok || old.Metadata.ResourceVersion != s.Metadata.ResourceVersion {
			a.fail(w, 409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again")
			return
		}
		reply(a.put(&s))
	case http.MethodPatch:
		s, ok := a.secrets[name]
		if !ok || r.Header.Get("Content-Type") != "application/merge-patch+json" {
			a.fail(w, 404, "NotFound", "not found")
			return
		}
		var patch struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		_ = json.NewDecoder(r.Body).Decode(&patch)
		if s.Metadata.Annotations == nil {
			s.Metadata.Annotations = map[string]string{}
		}
		for k, v := range patch.Metadata.Annotations {
			s.Metadata.Annotations[k] = v
		}
		reply(a.put(s))
	default:
		a.fail(w, 405, "MethodNotAllowed", "no")
	}
}

func (a *apiServer) put(s *Secret) *Secret {
	a.version++
	s.Metadata.ResourceVersion = strconv.Itoa(a.version)
	a.secrets[s.Metadata.Name] = s
	return s
}

func (a *apiServer) data(name, key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.secrets[name]; ok {
		return string(s.Data[key])
	}
	return ""
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// counter generates token-1, token-2, ...
func counter() func() (string, error) {
	n := 0
	return func() (string, error) { n++; return fmt.Sprintf("token-%d", n), nil }
}

var chartArgs = []string{"--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader", "--redis-secret", "ps-redis",
	"--label", "app.kubernetes.io/part-of=plantstore", "--annotation", "meta.helm.sh/release-name=ps"}

func run(t *testing.T, cfg ClientConfig, gen func() (string, error), args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--server", cfg.Server, "--token-file", cfg.TokenFile, "--ca-file", cfg.CAFile, "--namespace", cfg.Namespace)
	err := Run(context.Background(), args, &out, &errOut, gen)
	return out.String() + errOut.String(), err
}

func TestEnsureCreatesOnceAndKeeps(t *testing.T) {
	a, cfg := newAPIServer(t)
	out, err := run(t, cfg, counter(), chartArgs...)
	must(t, err)
	for _, want := range []string{"shop/ps-test-reader created", "shop/ps-tokens created", "shop/ps-redis created"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run: %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "token-") {
		t.Errorf("a generated value reached the output: %q", out)
	}
	reader := a.data("ps-test-reader", "token")
	tokens := a.data("ps-tokens", "tokens")
	password := a.data("ps-redis", "redis-password")
	if reader != "token-1\n" || password != "token-3" {
		t.Fatalf("reader %q, password %q", reader, password)
	}
	if !strings.Contains(tokens, "\ntoken-2\n") {
		t.Errorf("the tokens file lacks the generated token:\n%s", tokens)
	}
	if !readerLine.MatchString(tokens) || !strings.Contains(tokens, digest("token-1")) {
		t.Errorf("the tokens file lacks the reader's digest line:\n%s", tokens)
	}
	s := a.secrets["ps-tokens"]
	if s.Metadata.Labels["app.kubernetes.io/part-of"] != "plantstore" || s.Metadata.Annotations["meta.helm.sh/release-name"] != "ps" ||
		s.Metadata.Annotations["helm.sh/resource-policy"] != "keep" || s.Type != "Opaque" {
		t.Errorf("metadata %+v type %q", s.Metadata, s.Type)
	}

	// Again (an upgrade, a sync, a reinstall): nothing changes.
	out, err = run(t, cfg, counter(), chartArgs...)
	must(t, err)
	if strings.Count(out, " kept") != 3 {
		t.Errorf("second run: %q, want three kept", out)
	}
	if a.data("ps-tokens", "tokens") != tokens || a.data("ps-test-reader", "token") != reader || a.data("ps-redis", "redis-password") != password {
		t.Errorf("a second run changed a value")
	}
}

// digest is the tokens file's line of a read-only token.
func digest(token string) string {
	return "sha256:" + sha256Hex(token) + " name=helm-test-reader scopes=plants:read\n"
}

// A release installed by a chart before 1.2 rendered its Secrets: they are
// kept with their values and annotated, so that Helm does not delete them
// when the new chart no longer renders them.
func TestEnsureAdoptsHelmRenderedSecrets(t *testing.T) {
	a, cfg := newAPIServer(t)
	old := "# API token generated by the plantstore chart at install; kept across upgrades.\nold-token\n" +
		"# helm test's read-only token (tests.readToken); its raw value is in Secret ps-test-reader.\nsha256:" + sha256Hex("old-reader") + " name=helm-test-reader scopes=plants:read\n"
	a.put(&Secret{Metadata: Metadata{Name: "ps-tokens", Annotations: map[string]string{"meta.helm.sh/release-name": "ps"}}, Data: map[string][]byte{"tokens": []byte(old)}})
	a.put(&Secret{Metadata: Metadata{Name: "ps-test-reader"}, Data: map[string][]byte{"token": []byte("old-reader")}})
	a.put(&Secret{Metadata: Metadata{Name: "ps-redis"}, Data: map[string][]byte{"redis-password": []byte("old-password")}})
	out, err := run(t, cfg, counter(), chartArgs...)
	must(t, err)
	if strings.Count(out, " annotated") != 3 {
		t.Errorf("%q: want three annotated", out)
	}
	if a.data("ps-tokens", "tokens") != old || a.data("ps-redis", "redis-password") != "old-password" {
		t.Errorf("values changed: %q", a.data("ps-tokens", "tokens"))
	}
	for _, n := range []string{"ps-tokens", "ps-test-reader", "ps-redis"} {
		if got := a.secrets[n].Metadata.Annotations["helm.sh/resource-policy"]; got != "keep" {
			t.Errorf("%s: resource-policy %q", n, got)
		}
	}
	if a.secrets["ps-tokens"].Metadata.Annotations["meta.helm.sh/release-name"] != "ps" {
		t.Errorf("the patch dropped Helm's annotation")
	}
}

// auth.tokens removed: the Secret the previous release rendered from it (any
// chart version heads that file alike) is replaced by a generated token, so
// that none of those tokens opens the API after the upgrade; run again, the
// generated one is kept.
func TestEnsureRevokesTokensFromValues(t *testing.T) {
	for _, old := range []string{
		"# API tokens from the chart's auth.tokens value: a raw token or sha256:<hex> a line.\ntokA\n",                             // 1.0.0
		"# API tokens from the chart's auth.tokens value: a token or sha256:<hex>, then attributes, a line.\ntokA name=ci\ntokB\n", // 1.1.0 on
	} {
		a, cfg := newAPIServer(t)
		a.put(&Secret{Metadata: Metadata{Name: "ps-tokens", Annotations: map[string]string{"meta.helm.sh/release-name": "ps"}}, Data: map[string][]byte{"tokens": []byte(old)}})
		out, err := run(t, cfg, counter(), chartArgs...)
		must(t, err)
		if !strings.Contains(out, "shop/ps-tokens replaced (") {
			t.Errorf("%q: the tokens Secret not replaced", out)
		}
		tokens := a.data("ps-tokens", "tokens")
		if strings.Contains(tokens, "tokA") || strings.Contains(tokens, "tokB") || !strings.Contains(tokens, "\ntoken-2\n") || !strings.Contains(tokens, digest("token-1")) {
			t.Errorf("after auth.tokens was removed the file is:\n%s", tokens)
		}
		if s := a.secrets["ps-tokens"]; s.Metadata.Annotations["helm.sh/resource-policy"] != "keep" || s.Metadata.Annotations["meta.helm.sh/release-name"] != "ps" {
			t.Errorf("annotations %v", s.Metadata.Annotations)
		}
		out, err = run(t, cfg, counter(), chartArgs...)
		must(t, err)
		if !strings.Contains(out, "shop/ps-tokens kept") || a.data("ps-tokens", "tokens") != tokens {
			t.Errorf("a second run: %q, want the generated token kept", out)
		}
	}
}

// The read-only token made anew (its Secret deleted) or turned on later:
// the tokens file's reader line follows it; the API token stays.
func TestEnsureReaderLineFollowsTheReader(t *testing.T) {
	a, cfg := newAPIServer(t)
	_, err := run(t, cfg, counter(), "--tokens-secret", "ps-tokens")
	must(t, err)
	first := a.data("ps-tokens", "tokens")
	if readerLine.MatchString(first) {
		t.Fatalf("reader line without a reader:\n%s", first)
	}
	_, err = run(t, cfg, func() (string, error) { return "new-reader", nil }, "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader")
	must(t, err)
	got := a.data("ps-tokens", "tokens")
	if !strings.HasPrefix(got, first) || !strings.HasSuffix(got, digest("new-reader")) || strings.Count(got, "helm-test-reader") != 1 {
		t.Fatalf("tokens file:\n%s", got)
	}
	delete(a.secrets, "ps-test-reader")
	_, err = run(t, cfg, func() (string, error) { return "newer-reader", nil }, "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader")
	must(t, err)
	got = a.data("ps-tokens", "tokens")
	if !strings.HasPrefix(got, first) || !strings.HasSuffix(got, digest("newer-reader")) || strings.Count(got, "name=helm-test-reader") != 1 {
		t.Fatalf("tokens file after the reader was made anew:\n%s", got)
	}
}

// Another run created the Secret between our read and our create: its
// value wins.
func TestEnsureLosesACreateRace(t *testing.T) {
	a, cfg := newAPIServer(t)
	a.raceOnce = true
	out, err := run(t, cfg, counter(), "--redis-secret", "ps-redis")
	must(t, err)
	if a.data("ps-redis", "redis-password") != "theirs" || !strings.Contains(out, "ps-redis annotated") {
		t.Errorf("out %q, password %q", out, a.data("ps-redis", "redis-password"))
	}
}

func TestEnsureFailures(t *testing.T) {
	a, cfg := newAPIServer(t)
	a.deny = true
	_, err := run(t, cfg, counter(), chartArgs...)
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "cannot get resource") {
		t.Errorf("forbidden: %v", err)
	}
	a.deny = false

	bad := cfg
	bad.TokenFile = filepath.Join(t.TempDir(), "wrong")
	must(t, os.WriteFile(bad.TokenFile, []byte("wrong"), 0o600))
	if _, err := run(t, bad, counter(), chartArgs...); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := run(t, cfg, func() (string, error) { return "", errors.New("no entropy") }, "--redis-secret", "x"); err == nil || !strings.Contains(err.Error(), "no entropy") {
		t.Errorf("generator failure: %v", err)
	}
	if len(a.secrets) != 0 {
		t.Errorf("a failed run left Secrets: %v", a.secrets)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "nothing to do"},
		{[]string{"--reader-secret", "r"}, "needs --tokens-secret"},
		{[]string{"--redis-secret", "r", "--label", "novalue"}, "want key=value"},
		{[]string{"--redis-secret", "r", "extra"}, "unexpected arguments"},
	} {
		if _, err := run(t, cfg, counter(), c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	// Outside a pod, without --server: a clear error.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	err = Run(context.Background(), []string{"--redis-secret", "r"}, &bytes.Buffer{}, &bytes.Buffer{}, counter())
	if err == nil || !strings.Contains(err.Error(), "not in a Kubernetes pod") {
		t.Errorf("outside a pod: %v", err)
	}
}

// The chart's identity lines live in a block of the generated tokens file:
// written at creation, rewritten when they change, removed when none are
// given; the generated token, the reader line and lines added by hand stay.
func TestEnsureIdentityBlock(t *testing.T) {
	a, cfg := newAPIServer(t)
	const (
		orders = "issuer=https://kubernetes.default.svc.cluster.local subject=system:serviceaccount:shop:orders name=orders scopes=plants:write"
		admins = "issuer=https://dex.example.com/dex claim=groups:shop-admins name=admins rate=10/s burst=20"
	)
	block := func(lines ...string) string {
		return "# auth.identities: JWT callers mapped to clients, from the chart's value; rewritten at each install and upgrade.\n" +
			strings.Join(lines, "\n") + "\n# end of auth.identities\n"
	}
	_, err := run(t, cfg, counter(), "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader", "--identity", orders)
	must(t, err)
	first := a.data("ps-tokens", "tokens")
	if !strings.Contains(first, "\ntoken-2\n"+block(orders)+"# helm test's read-only token") {
		t.Fatalf("created tokens file:\n%s", first)
	}

	// A line added by hand, then the identities change.
	s := a.secrets["ps-tokens"]
	s.Data["tokens"] = []byte(strings.Replace(first, "token-2\n", "token-2\nsha256:"+strings.Repeat("a", 64)+" name=by-hand\n", 1))
	out, err := run(t, cfg, counter(), "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader", "--identity", orders, "--identity", admins)
	must(t, err)
	got := a.data("ps-tokens", "tokens")
	if !strings.Contains(out, "ps-tokens updated") || strings.Count(got, "# auth.identities:") != 1 || !strings.Contains(got, block(orders, admins)) ||
		!strings.Contains(got, "\ntoken-2\n") || !strings.Contains(got, "name=by-hand\n") || strings.Count(got, "name=helm-test-reader") != 1 {
		t.Fatalf("out %q, tokens file after a change:\n%s", out, got)
	}

	// The same again: nothing to write.
	out, err = run(t, cfg, counter(), "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader", "--identity", orders, "--identity", admins)
	must(t, err)
	if !strings.Contains(out, "ps-tokens kept") || a.data("ps-tokens", "tokens") != got {
		t.Fatalf("a second run changed the file (%q):\n%s", out, a.data("ps-tokens", "tokens"))
	}

	// None: the block goes, the rest stays.
	_, err = run(t, cfg, counter(), "--tokens-secret", "ps-tokens", "--reader-secret", "ps-test-reader")
	must(t, err)
	got = a.data("ps-tokens", "tokens")
	if strings.Contains(got, "auth.identities") || strings.Contains(got, "issuer=") || !strings.Contains(got, "\ntoken-2\n") ||
		!strings.Contains(got, "name=by-hand\n") || strings.Count(got, "name=helm-test-reader") != 1 {
		t.Fatalf("tokens file without identities:\n%s", got)
	}

	// A line the service would refuse fails the run and writes nothing.
	for _, c := range []struct{ line, want string }{
		{"issuer=https://dex.example.com subject=x", "needs name="},
		{"issuer=https://dex.example.com subject=x name=a expires=2030-01-01T00:00:00Z", "expires="},
		{"issuer=https://dex.example.com subject=x name=a\nsha256:" + strings.Repeat("b", 64), "one line"},
	} {
		if _, err := run(t, cfg, counter(), "--tokens-secret", "ps-tokens", "--identity", c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
	}
	if a.data("ps-tokens", "tokens") != got {
		t.Errorf("a refused identity changed the file")
	}
	if _, err := run(t, cfg, counter(), "--redis-secret", "r", "--identity", orders); err == nil || !strings.Contains(err.Error(), "needs --tokens-secret") {
		t.Errorf("--identity without --tokens-secret: %v", err)
	}
}

// The chart writes the header this package recognises at the top of a
// tokens file from auth.tokens.
func TestChartWritesTheValuesHeader(t *testing.T) {
	helpers, err := os.ReadFile("../../charts/plantstore/templates/_helpers.tpl")
	must(t, err)
	if !strings.Contains(string(helpers), `printf "`+fromValuesHeader) {
		t.Errorf("charts/plantstore/templates/_helpers.tpl no longer starts the auth.tokens file with %q: ensure-secrets would keep removed tokens", fromValuesHeader)
	}
}
