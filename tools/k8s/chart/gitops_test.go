package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// GitOps tools (Argo CD, `helm template | kubectl apply`) render the chart
// without a cluster, on every sync: the same values must give the same
// bytes, or every sync rewrites the tokens and the Redis password and rolls
// the pods.
func TestTemplateRendersTheSameBytesTwice(t *testing.T) {
	for _, set := range append([]string{""}, valueSets(t)...) {
		first := mustRender(t, filesOf(set)).Manifest
		second := mustRender(t, filesOf(set)).Manifest
		if first != second {
			t.Errorf("%q: two renders differ:\n%s", set, firstDiff(first, second))
		}
	}
}

// The chart renders no Secret it generates; the hook Job creates each one,
// only when missing. Every Secret a pod reads is rendered by the chart,
// created by that Job, or named by the user's values, and the Job's Role
// reaches exactly the Secrets it keeps.
func TestEverySecretAPodReadsHasAMaker(t *testing.T) {
	cases := []struct {
		name   string
		files  []string
		values map[string]any
		// the Secrets the hook Job keeps, and those the chart renders
		generated, rendered []string
	}{
		{name: "defaults", generated: []string{"plantstore-tokens", "plantstore-test-reader", "plantstore-redis"}},
		{name: "auth.tokens", values: map[string]any{"auth": map[string]any{"tokens": []any{"raw-token-1 name=ci"}}},
			generated: []string{"plantstore-redis"}, rendered: []string{"plantstore-tokens"}},
		{name: "existing tokens Secret", files: []string{"ci/existing-secret-values.yaml"}, generated: []string{"plantstore-redis"}},
		{name: "external Redis", files: []string{"ci/external-sentinel-values.yaml"}, generated: []string{"plantstore-tokens", "plantstore-test-reader"}},
		{name: "no read-only token", values: map[string]any{"tests": map[string]any{"readToken": false}},
			generated: []string{"plantstore-tokens", "plantstore-redis"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustRender(t, c.files, c.values)
			vals := userValues(t, c.files, c.values)
			var rendered, generated []string
			for _, s := range r.find("Secret") {
				rendered = append(rendered, s.Name())
			}
			if job := r.lookup("Job", "plantstore-secrets"); job != nil {
				args := list(list(podSpec(*job), "containers")[0].(map[string]any), "args")
				for _, a := range args {
					for _, flag := range []string{"--tokens-secret=", "--reader-secret=", "--redis-secret="} {
						if name, ok := strings.CutPrefix(a.(string), flag); ok {
							generated = append(generated, name)
						}
					}
				}
				if !job.Hook || !strings.Contains(job.Text, "pre-install,pre-upgrade") {
					t.Errorf("the secrets Job is not a pre-install,pre-upgrade hook")
				}
				role := r.get(t, "Role", "plantstore-secrets")
				var names []string
				for _, rule := range list(role.Obj, "rules") {
					for _, n := range list(rule.(map[string]any), "resourceNames") {
						names = append(names, n.(string))
					}
				}
				if !sameSet(names, generated) {
					t.Errorf("the Role names %v, the Job keeps %v", names, generated)
				}
			}
			if !sameSet(generated, c.generated) {
				t.Errorf("the Job keeps %v, want %v", generated, c.generated)
			}
			if !sameSet(rendered, c.rendered) {
				t.Errorf("the chart renders Secrets %v, want %v", rendered, c.rendered)
			}
			for _, o := range r.Objects {
				for _, name := range secretsRead(o) {
					if !slices.Contains(rendered, name) && !slices.Contains(generated, name) && !namedInValues(vals, name) {
						t.Errorf("%s reads Secret %s, which nothing makes", o, name)
					}
				}
			}
		})
	}
}

// helm test leaves nothing behind, and sends no event nobody asked for:
// with webhook subscribers it writes nothing unless told to.
func TestHelmTestWritesOnlyWhenItMay(t *testing.T) {
	subscribers := map[string]any{"webhooks": map[string]any{"subscribers": []any{"https://hooks.example/plants whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}}
	cases := []struct {
		name   string
		values []map[string]any
		write  bool
	}{
		{"no subscribers", nil, true},
		{"subscribers", []map[string]any{subscribers}, false},
		{"subscribers, write always", []map[string]any{subscribers, {"tests": map[string]any{"write": "always"}}}, true},
		{"no subscribers, write never", []map[string]any{{"tests": map[string]any{"write": "never"}}}, false},
		{"existing subscribers Secret", []map[string]any{{"webhooks": map[string]any{"existingSecret": "hooks"}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := mustRender(t, nil, c.values...).get(t, "Pod", "plantstore-test-create-plant")
			script := fmt.Sprint(list(list(podSpec(pod), "containers")[0].(map[string]any), "command")...)
			creates := strings.Contains(script, `-d "$body"`) && strings.Contains(script, `call "POST ${API_URL}/plants id=${id}" 200`)
			deletes := strings.Contains(script, `-X DELETE "${API_URL}/plants/${id}"`) && strings.Contains(script, `trap 'cleanup`)
			if creates != c.write || deletes != c.write {
				t.Errorf("creates %v, deletes %v; want both %v", creates, deletes, c.write)
			}
			if !c.write && !strings.Contains(script, `call "POST ${API_URL}/plants (an invalid body)" 400`) {
				t.Errorf("without writes the test does not check a refused create")
			}
		})
	}
}

// secretsRead lists the Secrets a pod template mounts or reads env from.
func secretsRead(o object) []string {
	var names []string
	for _, ref := range [][]string{
		{"volumes", "secret", "secretName"},
		{"volumes", "projected", "sources", "secret", "name"},
		{"initContainers", "env", "valueFrom", "secretKeyRef", "name"},
		{"containers", "env", "valueFrom", "secretKeyRef", "name"},
		{"initContainers", "envFrom", "secretRef", "name"},
		{"containers", "envFrom", "secretRef", "name"},
	} {
		for _, m := range each(podSpec(o), ref[:len(ref)-1]...) {
			if n := str(m, ref[len(ref)-1]); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// namedInValues reports whether a string value anywhere in the values is
// this name (an existingSecret, a caSecret...).
func namedInValues(v any, name string) (found bool) {
	walk(v, "", func(_, _ string, x any) bool {
		found = found || x == name
		return true
	})
	return found
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// firstDiff shows the first line where two texts differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// The migration Job waits for draining 1.0.0 pods wherever 1.0.0 keys are:
// rendered as a GitOps tool renders it (an install, nothing to look up), it
// settles 2s on an empty store but, through --settle-found, the grace period
// plus 5s once it finds a 1.0.0 key, as `helm upgrade` from 1.0.0 does from
// the start. migration.settle set is the settle time in every case.
func TestMigrationSettlesWhereverItFindsOldKeys(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"defaults", nil, []string{"migrate-store", "--settle", "2s", "--settle-found", "35s"}},
		{"a longer grace period", map[string]any{"terminationGracePeriodSeconds": 60}, []string{"migrate-store", "--settle", "2s", "--settle-found", "65s"}},
		{"migration.settle", map[string]any{"migration": map[string]any{"settle": "10s"}}, []string{"migrate-store", "--settle", "10s", "--settle-found", "0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := mustRender(t, nil, c.values).get(t, "Job", "plantstore-migrate")
			wantEqual(t, "args", list(podSpec(job)["containers"].([]any)[0].(map[string]any), "args"), toAny(c.want))
		})
	}
	// A --settle-found past the Job's deadline.
	mustFail(t, []string{"migration.activeDeadlineSeconds (600s) must exceed the migration's settle time (705s"}, nil, map[string]any{"terminationGracePeriodSeconds": 700})
}
