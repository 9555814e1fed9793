package chart

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gatewayValues turns the HTTPRoute on, attached to one listener.
func gatewayValues(extra map[string]any) map[string]any {
	route := map[string]any{
		"enabled":    true,
		"parentRefs": []any{map[string]any{"name": "shared", "namespace": "gateway", "sectionName": "https"}},
		"hostnames":  []any{"plants.example.com"},
	}
	for k, v := range extra {
		route[k] = v
	}
	return map[string]any{"httpRoute": route}
}

func TestHTTPRouteOffByDefault(t *testing.T) {
	if got := mustRender(t, nil).find("HTTPRoute"); len(got) != 0 {
		t.Fatalf("HTTPRoute rendered by default: %v", got)
	}
}

// The route carries what the values say, to the API Service's port alone.
func TestHTTPRouteRendersTheValues(t *testing.T) {
	r := mustRender(t, nil, gatewayValues(nil))
	route := r.get(t, "HTTPRoute", "plantstore")
	wantEqual(t, "apiVersion", str(route.Obj, "apiVersion"), "gateway.networking.k8s.io/v1")
	parents := list(route.Obj, "spec", "parentRefs")
	if len(parents) != 1 || str(parents[0].(map[string]any), "sectionName") != "https" || str(parents[0].(map[string]any), "namespace") != "gateway" {
		t.Errorf("parentRefs %v", parents)
	}
	wantEqual(t, "hostnames", list(route.Obj, "spec", "hostnames"), []any{"plants.example.com"})
	rules := list(route.Obj, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("%d rules, want 1", len(rules))
	}
	rule := rules[0].(map[string]any)
	apiPort := servicePort(t, r.get(t, "Service", "plantstore"), "http")
	for _, b := range list(rule, "backendRefs") {
		ref := b.(map[string]any)
		if str(ref, "name") != "plantstore" || fmt.Sprint(dig(ref, "port")) != fmt.Sprint(apiPort) {
			t.Errorf("backendRef %v, want the API Service plantstore port %d", ref, apiPort)
		}
	}
	wantEqual(t, "timeouts (the defaults)", fmt.Sprint(dig(rule, "timeouts")), "map[backendRequest:5s request:15s]")
	if dig(rule, "retry") != nil {
		t.Errorf("retry rendered with retry.attempts 0 (an Experimental field before Gateway API v1.7): %v", dig(rule, "retry"))
	}
	if dig(rule, "filters") != nil {
		t.Errorf("filters rendered with none set: %v", dig(rule, "filters"))
	}
}

// Every path of the API's OpenAPI document, and the document itself, reach
// the service through the route; the admin listener's paths are not routed.
// A route added to api/openapi.yaml and not to the HTTPRoute fails here.
func TestHTTPRouteRoutesTheAPIPathsOnly(t *testing.T) {
	rule := routeRule(t, mustRender(t, nil, gatewayValues(nil)))
	doc := readYAML(t, filepath.Join("..", "..", "..", "api", "openapi.yaml"))
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("api/openapi.yaml has no paths")
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	want := []string{"/openapi.yaml"}
	for p := range paths {
		want = append(want, param.ReplaceAllString(p, "42"))
	}
	for _, p := range want {
		if !routeMatches(rule, p) {
			t.Errorf("the API path %s is not routed", p)
		}
	}
	for _, p := range []string{"/metrics", "/livez", "/readyz", "/startupz", "/admin/webhooks/dead-letters", "/debug/pprof/", "/plantsX", "/openapi.yaml/x", "/"} {
		if routeMatches(rule, p) {
			t.Errorf("%s is routed; only the API's paths should be", p)
		}
	}
}

// routeRule is the HTTPRoute's first rule.
func routeRule(t testing.TB, r rendered) map[string]any {
	t.Helper()
	return list(r.get(t, "HTTPRoute", "plantstore").Obj, "spec", "rules")[0].(map[string]any)
}

// routeMatches applies an HTTPRoute rule's path matches as the Gateway API
// defines them: Exact, or PathPrefix on whole path elements.
func routeMatches(rule map[string]any, path string) bool {
	for _, m := range list(rule, "matches") {
		typ, value := str(m.(map[string]any), "path", "type"), str(m.(map[string]any), "path", "value")
		switch typ {
		case "Exact":
			if path == value {
				return true
			}
		case "PathPrefix":
			if path == value || strings.HasPrefix(path, strings.TrimSuffix(value, "/")+"/") {
				return true
			}
		}
	}
	return false
}

// The default timeouts leave an attempt the whole time a request may take
// in the pod (its store deadline, then its rate-limit decision), and the
// request the time of three attempts (retry.attempts 2).
func TestHTTPRouteTimeoutsAgreeWithTheService(t *testing.T) {
	defaults := readYAML(t, filepath.Join(chartDir, "values.yaml"))
	duration := func(keys ...string) time.Duration {
		d, err := time.ParseDuration(str(defaults, keys...))
		if err != nil {
			t.Fatalf("%v: %v", keys, err)
		}
		return d
	}
	inPod := duration("config", "storeTimeout") + duration("config", "rateLimitTimeout")
	backend := duration("httpRoute", "timeouts", "backendRequest")
	request := duration("httpRoute", "timeouts", "request")
	if backend <= inPod {
		t.Errorf("backendRequest %v does not exceed the store and rate-limit deadlines (%v): a slow store would be the Gateway's timeout, not the service's 503", backend, inPod)
	}
	if request < 3*backend {
		t.Errorf("request %v is shorter than three attempts of %v (retry.attempts 2)", request, backend)
	}
	rule := routeRule(t, mustRender(t, nil, gatewayValues(map[string]any{"retry": map[string]any{"attempts": 2}})))
	wantEqual(t, "retry", fmt.Sprint(dig(rule, "retry")), "map[attempts:2 backoff:500ms codes:[503]]")
}

func TestHTTPRouteRefusedValues(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"no parent": {map[string]any{"httpRoute": map[string]any{"enabled": true}}, "parentRefs"},
		"a request shorter than its attempts": {
			gatewayValues(map[string]any{"retry": map[string]any{"attempts": 3}, "timeouts": map[string]any{"request": "10s", "backendRequest": "5s"}}),
			"httpRoute.timeouts.request (10s) must be at least httpRoute.timeouts.backendRequest (5s) times the attempts (4",
		},
		"a Go duration where the Gateway API wants its own": {
			gatewayValues(map[string]any{"timeouts": map[string]any{"request": "1.5s"}}), "request",
		},
		"a code that is no error": {
			gatewayValues(map[string]any{"retry": map[string]any{"attempts": 1, "codes": []any{200}}}), "codes",
		},
	} {
		t.Run(name, func(t *testing.T) {
			mustFail(t, []string{tc.want}, nil, tc.values)
		})
	}
	// The limit itself is accepted, and so are minutes and compound durations.
	for _, timeouts := range []map[string]any{
		{"request": "20s", "backendRequest": "5s"},
		{"request": "1m", "backendRequest": "15s"},
		{"request": "1m30s", "backendRequest": "22s500ms"},
	} {
		if _, err := renderTemplate(t, nil, gatewayValues(map[string]any{"retry": map[string]any{"attempts": 3}, "timeouts": timeouts})); err != nil {
			t.Errorf("timeouts %v with 4 attempts refused: %v", timeouts, err)
		}
	}
}

// servicePort is the number of a Service's named port.
func servicePort(t testing.TB, svc object, name string) int64 {
	t.Helper()
	if p := byName(list(svc.Obj, "spec", "ports"), name); p != nil {
		n, _ := p["port"].(float64)
		return int64(n)
	}
	t.Fatalf("%s has no port %q", svc, name)
	return 0
}

// The install notes point at the Gateway the route attaches to, and say how
// to see that it was accepted.
func TestHTTPRouteNotes(t *testing.T) {
	wantContains(t, "the notes", mustRender(t, nil, gatewayValues(nil)).Notes,
		"gateway/shared (listener https) for plants.example.com", "kubectl get httproute --namespace plantstore plantstore")
	if notes := mustRender(t, nil).Notes; strings.Contains(notes, "httproute") {
		t.Errorf("the notes mention an HTTPRoute the chart did not render:\n%s", notes)
	}
}
