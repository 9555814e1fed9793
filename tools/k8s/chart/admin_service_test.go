package chart

import (
	"fmt"
	"testing"
)

// The admin port (/metrics, the webhook dead letters and their replay,
// pprof: no authentication) is on one Service only, always ClusterIP, for
// every value set validate.sh installs and whatever type the API Service has.
func TestAdminPortOnlyOnTheAdminService(t *testing.T) {
	for _, set := range valueSets(t) {
		for _, typ := range []string{"ClusterIP", "NodePort", "LoadBalancer"} {
			t.Run(fmt.Sprintf("%s/%s", set, typ), func(t *testing.T) {
				r := mustRender(t, []string{set}, map[string]any{"service": map[string]any{"type": typ}})
				api := r.get(t, "Deployment", "plantstore")
				podLabels, _ := dig(api.Obj, "spec", "template", "metadata", "labels").(map[string]any)
				adminPort := containerPort(t, api, "metrics")
				var carriers []string
				for _, svc := range r.find("Service") {
					for _, p := range each(svc.Obj, "spec", "ports") {
						if target := fmt.Sprint(p["targetPort"]); selects(svc, podLabels) && (target == "metrics" || target == fmt.Sprint(adminPort)) {
							carriers = append(carriers, svc.Name())
						}
					}
				}
				if !wantEqual(t, "Services carrying the API pods' admin port", carriers, []string{"plantstore-admin"}) {
					t.FailNow()
				}
				wantEqual(t, "plantstore-admin type", str(r.get(t, "Service", "plantstore-admin").Obj, "spec", "type"), "ClusterIP")
				wantEqual(t, "API Service type", str(r.get(t, "Service", "plantstore").Obj, "spec", "type"), typ)
				for _, ing := range r.find("Ingress") {
					for _, path := range each(ing.Obj, "spec", "rules", "http", "paths") {
						wantEqual(t, "Ingress "+ing.Name()+" routes to", str(path, "backend", "service", "name")+":"+str(path, "backend", "service", "port", "name"), "plantstore:http")
					}
				}
				apiPort := servicePort(t, r.get(t, "Service", "plantstore"), "http")
				for _, route := range r.find("HTTPRoute") {
					for _, b := range each(route.Obj, "spec", "rules", "backendRefs") {
						wantEqual(t, "HTTPRoute "+route.Name()+" routes to", fmt.Sprint(b["name"], ":", b["port"]), fmt.Sprint("plantstore:", apiPort))
					}
				}
			})
		}
	}
}

// The ServiceMonitor scrapes the admin Service, and only it, of the
// Services the chart renders.
func TestServiceMonitorSelectsTheAdminService(t *testing.T) {
	r := mustRender(t, nil, map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
	sm := r.get(t, "ServiceMonitor", "plantstore")
	if !wantEqual(t, "the Services the ServiceMonitor selects", monitored(r, sm.Obj), []string{"plantstore-admin"}) {
		t.FailNow()
	}
	for _, ep := range list(sm.Obj, "spec", "endpoints") {
		wantEqual(t, "endpoint port", str(ep.(map[string]any), "port"), "metrics")
	}
}

// monitored are the names of the Services a ServiceMonitor's selector matches.
func monitored(r rendered, sm map[string]any) []string {
	sel, _ := dig(sm, "spec", "selector", "matchLabels").(map[string]any)
	var out []string
	for _, svc := range r.find("Service") {
		if labels, _ := dig(svc.Obj, "metadata", "labels").(map[string]any); matches(sel, labels) {
			out = append(out, svc.Name())
		}
	}
	return out
}

// containerPort is the number of a workload's first container's named port.
func containerPort(t testing.TB, o object, name string) int64 {
	t.Helper()
	if p := byName(each(podSpec(o), "containers", "ports"), name); p != nil {
		n, _ := p["containerPort"].(float64)
		return int64(n)
	}
	t.Fatalf("%s has no container port %q", o, name)
	return 0
}

// selects reports whether a Service's selector picks pods with these labels.
func selects(svc object, podLabels map[string]any) bool {
	sel, _ := dig(svc.Obj, "spec", "selector").(map[string]any)
	return len(sel) > 0 && matches(sel, podLabels)
}

// matches reports whether every key of want has its value in labels.
func matches(want, labels map[string]any) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}
