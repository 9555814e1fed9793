package chart

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"sigs.k8s.io/yaml"
)

// chartDir is charts/plantstore of this repository.
var chartDir = filepath.Join("..", "..", "..", "charts", "plantstore")

// The release every render uses, as tools/k8s/validate.sh's.
const (
	releaseName = "plantstore"
	namespace   = "plantstore"
	kubeVersion = "v1.31.0"
)

// apiVersions are the CRD-backed kinds a monitoring cluster offers, as
// validate.sh passes them to helm template.
var apiVersions = chartutil.VersionSet{
	"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule",
}

// object is one rendered manifest: its source template, its text and its
// decoded form.
type object struct {
	Source string
	Text   string
	Hook   bool
	Obj    map[string]any
}

func (o object) Kind() string   { s, _ := o.Obj["kind"].(string); return s }
func (o object) Name() string   { return str(o.Obj, "metadata", "name") }
func (o object) String() string { return o.Kind() + "/" + o.Name() + " (" + o.Source + ")" }

// rendered is a whole render: the release's objects, hooks included, in
// helm template's order.
type rendered struct {
	Manifest string // the text helm template prints (manifest and hooks)
	Objects  []object
	Notes    string
}

// find returns the objects of a kind.
func (r rendered) find(kind string) []object {
	var out []object
	for _, o := range r.Objects {
		if o.Kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// lookup returns the object of a kind and name, nil without it.
func (r rendered) lookup(kind, name string) *object {
	for _, o := range r.Objects {
		if o.Kind() == kind && o.Name() == name {
			return &o
		}
	}
	return nil
}

// get returns the object of a kind and name, failing the test without it.
func (r rendered) get(t testing.TB, kind, name string) object {
	t.Helper()
	o := r.lookup(kind, name)
	if o == nil {
		t.Fatalf("no %s/%s rendered; have %v", kind, name, r.Objects)
	}
	return *o
}

// loadChart loads charts/plantstore.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	return c
}

// userValues merges value files (paths relative to the chart) and maps, later
// ones winning, as helm's -f and --set-json do.
func userValues(t testing.TB, files []string, maps ...map[string]any) map[string]any {
	t.Helper()
	opts := values.Options{}
	for _, f := range files {
		opts.ValueFiles = append(opts.ValueFiles, filepath.Join(chartDir, f))
	}
	vals, err := opts.MergeValues(getter.All(cli.New()))
	if err != nil {
		t.Fatalf("values %v: %v", files, err)
	}
	for _, m := range maps {
		vals = chartutil.MergeTables(deepCopy(t, m), vals)
	}
	return vals
}

// renderTemplate renders the chart as `helm template plantstore charts/plantstore
// -n plantstore -f FILES...` does, the maps applied after the files.
func renderTemplate(t testing.TB, files []string, maps ...map[string]any) (rendered, error) {
	t.Helper()
	return renderRelease(t, releaseName, kubeVersion, files, maps...)
}

// renderRelease is renderTemplate with another release name and --kube-version.
func renderRelease(t testing.TB, release, kubeVersion string, files []string, maps ...map[string]any) (rendered, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = release
	install.Namespace = namespace
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kv
	install.APIVersions = apiVersions
	rel, err := install.Run(loadChart(t), userValues(t, files, maps...))
	if err != nil {
		return rendered{}, err
	}
	return parseRelease(t, rel), nil
}

// capabilities are the cluster's an upgrade renders against: kubeVersion's.
func capabilities(t testing.TB) *chartutil.Capabilities {
	t.Helper()
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps.KubeVersion = *kv
	return caps
}

// mustRender is renderTemplate failing the test on an error.
func mustRender(t testing.TB, files []string, maps ...map[string]any) rendered {
	t.Helper()
	r, err := renderTemplate(t, files, maps...)
	if err != nil {
		t.Fatalf("helm template %v: %v", files, err)
	}
	return r
}

// installed is a release as Helm stores it, to upgrade from: the chart it
// was installed with (only its values matter to an upgrade's render) and
// the values the user gave.
type installed struct {
	ChartVersion string
	ChartValues  map[string]any
	Config       map[string]any
}

// upgradeFlags are helm upgrade's value flags.
type upgradeFlags struct {
	ReuseValues          bool
	ResetThenReuseValues bool
}

// renderUpgrade renders `helm upgrade --dry-run` of this chart over a
// release installed as `from`, with the flags and the values given now.
func renderUpgrade(t testing.TB, from installed, flags upgradeFlags, now map[string]any) (rendered, error) {
	t.Helper()
	mem := driver.NewMemory()
	mem.SetNamespace(namespace)
	cfg := &action.Configuration{
		Releases:     storage.Init(mem),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: capabilities(t),
		Log:          func(string, ...any) {},
	}
	cfg.Capabilities.APIVersions = append(cfg.Capabilities.APIVersions, apiVersions...)
	old := &release.Release{
		Name:      releaseName,
		Namespace: namespace,
		Version:   1,
		Info:      &release.Info{Status: release.StatusDeployed},
		Chart: &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "plantstore", Version: from.ChartVersion},
			Values:   deepCopy(t, from.ChartValues),
		},
		Config: deepCopy(t, from.Config),
	}
	if err := cfg.Releases.Create(old); err != nil {
		t.Fatal(err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = namespace
	up.DryRun = true
	up.ReuseValues = flags.ReuseValues
	up.ResetThenReuseValues = flags.ResetThenReuseValues
	rel, err := up.Run(releaseName, loadChart(t), deepCopy(t, now))
	if err != nil {
		return rendered{}, err
	}
	return parseRelease(t, rel), nil
}

// reuseValuesWithout renders `helm upgrade --reuse-values` over a release
// of chart 1.1.0 whose values are this chart's less the redis keys given:
// an older chart's, from before those values.
func reuseValuesWithout(t testing.TB, redisKeys ...string) rendered {
	t.Helper()
	old := deepCopy(t, loadChart(t).Values)
	for _, k := range redisKeys {
		delete(old["redis"].(map[string]any), k)
	}
	r, err := renderUpgrade(t, installed{ChartVersion: "1.1.0", ChartValues: old}, upgradeFlags{ReuseValues: true}, nil)
	if err != nil {
		t.Fatalf("helm upgrade --reuse-values from values without redis.%v: %v", redisKeys, err)
	}
	return r
}

// parseRelease splits a release's manifest and hooks into objects, in the
// order helm template prints them.
func parseRelease(t testing.TB, rel *release.Release) rendered {
	t.Helper()
	var r rendered
	var text strings.Builder
	text.WriteString(rel.Manifest)
	for _, doc := range strings.Split(rel.Manifest, "\n---\n") {
		r.add(t, doc, false)
	}
	for _, h := range rel.Hooks {
		text.WriteString("\n---\n# Source: " + h.Path + "\n" + h.Manifest)
		r.add(t, "# Source: "+h.Path+"\n"+h.Manifest, true)
	}
	r.Manifest = text.String()
	if rel.Info != nil {
		r.Notes = rel.Info.Notes
	}
	return r
}

func (r *rendered) add(t testing.TB, doc string, hook bool) {
	t.Helper()
	doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
	src := ""
	if i := strings.Index(doc, "# Source: "); i >= 0 {
		line := doc[i+len("# Source: "):]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		src = strings.TrimPrefix(line, "plantstore/")
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("%s: not YAML: %v\n%s", src, err, doc)
	}
	if len(obj) == 0 {
		return
	}
	r.Objects = append(r.Objects, object{Source: src, Text: doc, Hook: hook, Obj: obj})
}

// valueSets are the names of charts/plantstore/ci/*-values.yaml, the value
// sets validate.sh installs into a real API server.
func valueSets(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value sets in %s/ci: %v", chartDir, err)
	}
	var out []string
	for _, f := range files {
		out = append(out, filepath.Join("ci", filepath.Base(f)))
	}
	sort.Strings(out)
	return out
}

// readFile is the text of a file, failing the test without it.
func readFile(t testing.TB, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile writes a file, failing the test when it cannot.
func writeFile(t testing.TB, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// readYAML decodes a YAML file of this repository.
func readYAML(t testing.TB, path string) map[string]any {
	t.Helper()
	return fromYAML(t, readFile(t, path))
}

func fromYAML(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
	return m
}

func deepCopy(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	if m == nil {
		return map[string]any{}
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// dig walks nested maps by key; "" when a step is missing or not a map.
func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func str(m map[string]any, keys ...string) string {
	s, _ := dig(m, keys...).(string)
	return s
}

func list(m map[string]any, keys ...string) []any {
	l, _ := dig(m, keys...).([]any)
	return l
}

// each is every map a path reaches, stepping into each item of the lists
// along the way: each(ingress, "spec", "rules", "http", "paths") is the paths
// of all its rules.
func each(v any, path ...string) []map[string]any {
	switch v := v.(type) {
	case []any:
		var out []map[string]any
		for _, it := range v {
			out = append(out, each(it, path...)...)
		}
		return out
	case map[string]any:
		if len(path) == 0 {
			return []map[string]any{v}
		}
		return each(v[path[0]], path[1:]...)
	}
	return nil
}

// walk calls f with every value within v (of a map's key, or a list's item,
// key ""), and its path; where f returns false it does not walk into it.
func walk(v any, path string, f func(path, key string, v any) bool) {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			if f(path+"."+k, k, c) {
				walk(c, path+"."+k, f)
			}
		}
	case []any:
		for i, c := range n {
			if p := fmt.Sprintf("%s[%d]", path, i); f(p, "", c) {
				walk(c, p, f)
			}
		}
	}
}

// containers are a pod spec's init containers, then its containers.
func containers(spec map[string]any) []map[string]any {
	return append(each(spec, "initContainers"), each(spec, "containers")...)
}

// podSpec returns the pod spec of a workload (Deployment, StatefulSet, Job)
// or of a Pod, nil for other kinds.
func podSpec(o object) map[string]any {
	switch o.Kind() {
	case "Pod":
		m, _ := o.Obj["spec"].(map[string]any)
		return m
	case "Deployment", "StatefulSet", "Job", "DaemonSet":
		m, _ := dig(o.Obj, "spec", "template", "spec").(map[string]any)
		return m
	}
	return nil
}

// filesOf is the -f list of a value set: none for "", the defaults.
func filesOf(set string) []string {
	if set == "" {
		return nil
	}
	return []string{set}
}

// byName is the item of a list (containers, volumes, ports...) called name,
// nil without it.
func byName[T any](items []T, name string) map[string]any {
	for _, it := range items {
		if m, _ := any(it).(map[string]any); str(m, "name") == name {
			return m
		}
	}
	return nil
}

// container returns the named container of a pod spec, nil without it.
func container(spec map[string]any, name string) map[string]any {
	return byName(list(spec, "containers"), name)
}

// fieldOf is a field of every item of a list, in order: the names of
// containers, the mount paths of mounts...
func fieldOf[T any](items []T, keys ...string) []string {
	var out []string
	for _, it := range items {
		m, _ := any(it).(map[string]any)
		out = append(out, str(m, keys...))
	}
	return out
}

// wantEqual fails the test, without stopping it, when got is not want
// (deeply); it reports whether they were equal.
func wantEqual(t testing.TB, what string, got, want any) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return true
	}
	if a, ok := got.(string); ok && strings.Contains(a, "\n") {
		t.Errorf("%s, against what is wanted: %s", what, firstDiff(a, fmt.Sprint(want)))
	} else {
		t.Errorf("%s: %#v, want %#v", what, got, want)
	}
	return false
}

// wantContains fails the test for each phrase the text lacks.
func wantContains(t testing.TB, what, text string, phrases ...string) {
	t.Helper()
	for _, p := range phrases {
		if !strings.Contains(text, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, text)
		}
	}
}

// mustFail renders and returns the error, failing the test when the render
// succeeds or its error lacks one of the wanted phrases.
func mustFail(t testing.TB, want []string, files []string, maps ...map[string]any) string {
	t.Helper()
	_, err := renderTemplate(t, files, maps...)
	if err == nil {
		t.Errorf("rendered; want an error saying %q", want)
		return ""
	}
	wantContains(t, "the error", err.Error(), want...)
	return err.Error()
}
