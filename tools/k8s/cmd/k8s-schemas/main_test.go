package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"sigs.k8s.io/yaml"
)

const swaggerFixture = `{"definitions": {
 "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
 "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
 "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
   "name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
 "io.k8s.api.test.v1.Port": {"type": "object", "required": ["port"], "properties": {
   "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
   "cpu": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
   "protocol": {"type": "string", "enum": ["TCP", "UDP"]}}},
 "io.k8s.api.test.v1.Node": {"type": "object", "properties": {
   "children": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.test.v1.Node"}}}},
 "io.k8s.api.apps.v1.Widget": {"type": "object", "required": ["spec"],
   "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Widget"}],
   "properties": {
     "apiVersion": {"type": "string"}, "kind": {"type": "string"},
     "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
     "spec": {"type": "object", "properties": {
       "ports": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.test.v1.Port"}},
       "tree": {"$ref": "#/definitions/io.k8s.api.test.v1.Node"},
       "replicas": {"type": "integer", "format": "int32"}}}}},
 "io.k8s.api.core.v1.Thing": {"type": "object",
   "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Thing"}],
   "properties": {"kind": {"type": "string"}}}
}}`

const crdFixture = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.coreos.com
spec:
  group: example.coreos.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              port:
                anyOf: [{type: integer}, {type: string}]
                x-kubernetes-int-or-string: true
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties: {a: {type: string}}
              maybe: {type: string, nullable: true}
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
`

func schemas(t *testing.T) map[string]obj {
	t.Helper()
	doc, err := LoadSwagger([]byte(swaggerFixture))
	if err != nil {
		t.Fatal(err)
	}
	files, err := doc.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	crd, kinds, err := CRDSchemas([]byte(crdFixture), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 1 || kinds[0] != "Gadget example.coreos.com/v1" {
		t.Fatalf("kinds = %v", kinds)
	}
	for k, v := range crd {
		files[k] = v
	}
	return files
}

func TestFileNames(t *testing.T) {
	files := schemas(t)
	for _, want := range []string{"widget-apps-v1.json", "thing-v1.json", "gadget-example-v1.json"} {
		if _, ok := files[want]; !ok {
			t.Errorf("missing %s in %v", want, keys(files))
		}
	}
	if len(files) != 3 {
		t.Errorf("got %v, want 3 files (no schema for definitions without a GVK or for unserved versions)", keys(files))
	}
}

func keys(m map[string]obj) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestValidation(t *testing.T) {
	files := schemas(t)
	cases := []struct {
		file, doc string
		ok        bool
		why       string
	}{
		{"widget-apps-v1.json", `{kind: Widget, metadata: {name: a, labels: {x: v1}}, spec: {replicas: 2, ports: [{port: 80, cpu: 1}, {port: http, cpu: 500m, protocol: TCP}]}}`, true, "valid"},
		{"widget-apps-v1.json", `{metadata: {name: a, annotations: null}, spec: {ports: null, tree: {children: [{children: [{anything: 1}]}]}}}`, false, "ObjectMeta fixture has no annotations"},
		{"widget-apps-v1.json", `{metadata: {name: null}, spec: {ports: null, replicas: null}}`, true, "optional fields may be null"},
		{"widget-apps-v1.json", `{metadata: {name: a}, spec: {replicas: "2"}}`, false, "replicas is an integer"},
		{"widget-apps-v1.json", `{metadata: {name: a}, spec: {replicaz: 2}}`, false, "strict: unknown field"},
		{"widget-apps-v1.json", `{metadata: {name: a}}`, false, "spec is required"},
		{"widget-apps-v1.json", `{spec: null}`, false, "required fields may not be null"},
		{"widget-apps-v1.json", `{spec: {ports: [{cpu: 1}]}}`, false, "port is required"},
		{"widget-apps-v1.json", `{spec: {ports: [{port: true}]}}`, false, "int-or-string"},
		{"widget-apps-v1.json", `{spec: {ports: [{port: 1, protocol: SCTP}]}}`, false, "enum"},
		{"widget-apps-v1.json", `{spec: {ports: [{port: 1, protocol: null}]}}`, true, "optional enum may be null"},
		{"widget-apps-v1.json", `{spec: {tree: {children: [{children: [{anything: 1}]}]}}}`, true, "recursion is cut with an open schema"},
		{"gadget-example-v1.json", `{apiVersion: example.coreos.com/v1, kind: Gadget, metadata: {name: g, labels: {a: b}}, spec: {port: 8080, free: {x: 1}, maybe: null}}`, true, "valid CR"},
		{"gadget-example-v1.json", `{metadata: {name: g}, spec: {port: http}}`, true, "int-or-string in a CRD"},
		{"gadget-example-v1.json", `{metadata: {name: g}, spec: {port: 1.5}}`, false, "int-or-string is not a float"},
		{"gadget-example-v1.json", `{metadata: {name: g}, spec: {prot: 1}}`, false, "strict CRD"},
		{"gadget-example-v1.json", `{metadata: {nmae: g}, spec: {}}`, false, "CRD metadata is ObjectMeta"},
	}
	compiled := map[string]*jsonschema.Schema{}
	for _, c := range cases {
		s := compiled[c.file]
		if s == nil {
			b, err := json.Marshal(files[c.file])
			if err != nil {
				t.Fatal(err)
			}
			comp := jsonschema.NewCompiler()
			comp.Draft = jsonschema.Draft4
			if err := comp.AddResource(c.file, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
			if s, err = comp.Compile(c.file); err != nil {
				t.Fatal(err)
			}
			compiled[c.file] = s
		}
		var v any
		if err := yaml.Unmarshal([]byte(c.doc), &v); err != nil {
			t.Fatal(err)
		}
		err := s.Validate(v)
		if (err == nil) != c.ok {
			t.Errorf("%s %s (%s): valid=%v, want %v: %v", c.file, c.doc, c.why, err == nil, c.ok, err)
		}
	}
}

func TestRunWritesLayoutAndStamp(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "swagger.json")
	crd := filepath.Join(dir, "gadgets.yaml")
	if err := os.WriteFile(sw, []byte(swaggerFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crd, []byte(crdFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"-out", out, "-swagger", sw, "-crd-module", "none", "-crd", crd}
	var buf bytes.Buffer
	if err := run(args, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "wrote 3 schemas") {
		t.Errorf("output %q", buf.String())
	}
	for _, f := range []string{"v1.31.0-standalone-strict/widget-apps-v1.json", "v1.31.0-standalone-strict/gadget-example-v1.json", "crds/gadgets.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	buf.Reset()
	if err := run(args, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "up to date") {
		t.Errorf("second run: %q", buf.String())
	}
}

// The test cluster installs the Gateway API CRDs whose HTTPRoute schema the
// chart is validated against: one version for both.
func TestGatewayAPIVersionIsTheTestClusters(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "cluster-test.d", "lib", "gateway.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GATEWAY_API_VERSION=(v[0-9.]+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("lib/gateway.sh sets no GATEWAY_API_VERSION")
	}
	want := "sigs.k8s.io/gateway-api@" + string(m[1]) + ":"
	for _, spec := range defaultCRDModules {
		if strings.HasPrefix(spec, "sigs.k8s.io/gateway-api@") && !strings.HasPrefix(spec, want) {
			t.Errorf("k8s-schemas validates against %s; the test cluster installs Gateway API %s", spec, m[1])
		}
	}
}

// The Traefik the test cluster runs reports the version of the module it is
// built from (build.sh stamps it; the scenario names it).
func TestTraefikStampIsItsModule(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join("..", "..", "traefik", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github.com/traefik/traefik/v3 (v[0-9.]+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("tools/k8s/traefik/go.mod requires no github.com/traefik/traefik/v3")
	}
	build, err := os.ReadFile(filepath.Join("..", "..", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if stamp := "pkg/version.Version=" + strings.TrimPrefix(string(m[1]), "v") + `"`; !strings.Contains(string(build), stamp) {
		t.Errorf("build.sh does not stamp Traefik %s (want %s)", m[1], stamp)
	}
}
