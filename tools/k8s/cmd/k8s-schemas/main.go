// Command k8s-schemas writes kubeconform's "standalone-strict" JSON schema
// layout for one Kubernetes version, offline:
//
//   - the built-in kinds come from api/openapi-spec/swagger.json of the
//     k8s.io/kubernetes module that tools/k8s/go.mod requires (taken from the
//     Go module cache, fetched through the module proxy if missing);
//   - custom resources come from CustomResourceDefinition YAMLs, by default the
//     prometheus-operator ServiceMonitor and PrometheusRule CRDs and Gateway
//     API's HTTPRoute (Standard channel) carried by their modules' zips.
//
// Output: <out>/v<version>-standalone-strict/<kind>-<group>-<version>.json
// (lowercase; the group is the first DNS label of the API group, and is
// omitted for the core group: deployment-apps-v1.json, service-v1.json,
// servicemonitor-monitoring-v1.json), which is the default template of
// kubeconform's -schema-location when it is given a directory. Every $ref is
// inlined, objects that declare properties get additionalProperties: false,
// int-or-string fields accept a string or an integer, quantities a string or a
// number, and optional fields accept null, as the API server does. The CRD
// YAMLs are copied to <out>/crds/ so that they can be installed into a test
// API server. A stamp file makes a second run with the same inputs a no-op.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"sigs.k8s.io/yaml"
)

// generatorVersion is part of the stamp: bump it when the output changes.
const generatorVersion = "k8s-schemas/3"

// defaultCRDModules are the module zips whose CRD YAMLs the chart's custom
// resources are validated against: module@version:file,file. Gateway API's
// Standard channel, which most clusters install: what the chart renders by
// default must pass it.
var defaultCRDModules = []string{
	"github.com/prometheus-operator/prometheus-operator@v0.85.0:" +
		"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml," +
		"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
	"sigs.k8s.io/gateway-api@v1.6.3:config/crd/standard/gateway.networking.k8s.io_httproutes.yaml",
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-schemas:", err)
		os.Exit(1)
	}
}

func defaultOut() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "plantstore-k8s", "schemas")
	}
	return filepath.Join(os.TempDir(), "plantstore-k8s", "schemas")
}

func defaultModDir() string {
	if fi, err := os.Stat(filepath.Join("tools", "k8s", "go.mod")); err == nil && !fi.IsDir() {
		return filepath.Join("tools", "k8s")
	}
	return "."
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("k8s-schemas", flag.ContinueOnError)
	out := fs.String("out", defaultOut(), "output directory (kubeconform -schema-location)")
	version := fs.String("kubernetes-version", "1.31.0", "Kubernetes version the layout is named after (kubeconform -kubernetes-version)")
	swagger := fs.String("swagger", "", "swagger.json to convert (default: api/openapi-spec/swagger.json of the k8s.io/kubernetes module required by -moddir)")
	modDir := fs.String("moddir", defaultModDir(), "directory of the Go module (tools/k8s) whose k8s.io/kubernetes requirement gives swagger.json")
	var crdModules, crds stringList
	fs.Var(&crdModules, "crd-module", "module@version:file,file: CRD YAMLs inside a module's zip (repeatable; default: the prometheus-operator and Gateway API ones; \"none\": none)")
	fs.Var(&crds, "crd", "extra CRD YAML file (repeatable)")
	force := fs.Bool("force", false, "regenerate even if the stamp matches")
	if err := fs.Parse(args); err != nil {
		return err
	}

	swaggerPath := *swagger
	if swaggerPath == "" {
		dir, err := moduleDir(*modDir, "k8s.io/kubernetes")
		if err != nil {
			return fmt.Errorf("locating k8s.io/kubernetes: %w", err)
		}
		swaggerPath = filepath.Join(dir, "api", "openapi-spec", "swagger.json")
	}
	var crdPaths []string
	var skipped []string // "Kind: reason"
	if len(crdModules) == 0 {
		crdModules = defaultCRDModules
	}
	for _, spec := range crdModules {
		if spec == "none" {
			continue
		}
		mod, files, ok := strings.Cut(spec, ":")
		if !ok {
			return fmt.Errorf("-crd-module %q: want module@version:file,file", spec)
		}
		dir, err := moduleDir(*modDir, mod)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("CRDs of %s: module not available: %v", mod, err))
			continue
		}
		for _, f := range strings.Split(files, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(f))
			if _, err := os.Stat(p); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: not in %s", f, mod))
				continue
			}
			crdPaths = append(crdPaths, p)
		}
	}
	crdPaths = append(crdPaths, crds...)

	// Stamp: generator version + inputs' content.
	h := sha256.New()
	fmt.Fprintln(h, generatorVersion, *version)
	swaggerBytes, err := os.ReadFile(swaggerPath)
	if err != nil {
		return err
	}
	h.Write(swaggerBytes)
	crdBytes := make([][]byte, len(crdPaths))
	for i, p := range crdPaths {
		if crdBytes[i], err = os.ReadFile(p); err != nil {
			return err
		}
		fmt.Fprintln(h, filepath.Base(p))
		h.Write(crdBytes[i])
	}
	stamp := hex.EncodeToString(h.Sum(nil))

	layout := "v" + strings.TrimPrefix(*version, "v") + "-standalone-strict"
	final := filepath.Join(*out, layout)
	stampFile := filepath.Join(*out, layout+".stamp")
	if old, err := os.ReadFile(stampFile); err == nil && !*force && strings.TrimSpace(string(old)) == stamp {
		if _, err := os.Stat(final); err == nil {
			fmt.Fprintf(stdout, "schemas up to date in %s (swagger %s)\n", final, swaggerPath)
			for _, s := range skipped {
				fmt.Fprintln(stdout, "SKIPPED", s)
			}
			return nil
		}
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(*out, ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	schemaDir := filepath.Join(tmp, layout)
	crdDir := filepath.Join(tmp, "crds")
	for _, d := range []string{schemaDir, crdDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	doc, err := LoadSwagger(swaggerBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", swaggerPath, err)
	}
	files, err := doc.Schemas()
	if err != nil {
		return err
	}
	nBuiltin := len(files)
	var crdKinds []string
	for i, p := range crdPaths {
		cf, kinds, err := CRDSchemas(crdBytes[i], doc)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for name, s := range cf {
			if _, dup := files[name]; dup {
				return fmt.Errorf("%s: %s collides with a built-in kind", p, name)
			}
			files[name] = s
		}
		crdKinds = append(crdKinds, kinds...)
		if err := os.WriteFile(filepath.Join(crdDir, filepath.Base(p)), crdBytes[i], 0o644); err != nil {
			return err
		}
	}

	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := json.MarshalIndent(files[n], "", "  ")
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		// kubeconform silently treats a schema it cannot compile as missing:
		// compile each one here, with the same draft, so that cannot happen.
		if err := compiles(n, b); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(schemaDir, n), b, 0o644); err != nil {
			return err
		}
	}

	for _, d := range []string{layout, "crds"} {
		if err := os.RemoveAll(filepath.Join(*out, d)); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(tmp, d), filepath.Join(*out, d)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(stampFile, []byte(stamp+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d schemas (%d built-in from %s, %d from CRDs: %s) to %s\n",
		len(files), nBuiltin, swaggerPath, len(files)-nBuiltin, strings.Join(crdKinds, ", "), final)
	for _, s := range skipped {
		fmt.Fprintln(stdout, "SKIPPED", s)
	}
	return nil
}

func compiles(name string, b []byte) error {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4 // what kubeconform v0.6 uses
	if err := c.AddResource(name, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := c.Compile(name); err != nil {
		return fmt.Errorf("%s does not compile: %w", name, err)
	}
	return nil
}

// moduleDir downloads (if needed) a module through the Go module proxy and
// returns its directory in the module cache. mod is a path (version taken
// from the go.mod in dir) or path@version.
func moduleDir(dir, mod string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", errors.New(info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %v: %s", mod, err, strings.TrimSpace(stderr.String()))
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory in %q", mod, out)
	}
	return info.Dir, nil
}

// ---------------------------------------------------------------------------
// Swagger (OpenAPI v2) → standalone JSON schemas.

type obj = map[string]any

// Swagger is a parsed Kubernetes swagger.json.
type Swagger struct {
	defs obj
}

// special definitions whose swagger type is narrower than what the API
// server accepts when decoding JSON/YAML.
var overrides = map[string]obj{
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": []any{"string", "integer"}},
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"type": []any{"string", "number"}},
}

// LoadSwagger parses swagger.json.
func LoadSwagger(b []byte) (*Swagger, error) {
	var doc struct {
		Definitions obj `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Definitions) == 0 {
		return nil, errors.New("no definitions")
	}
	return &Swagger{defs: doc.Definitions}, nil
}

// FileName is kubeconform's schema file name for a kind and apiVersion.
func FileName(kind, group, version string) string {
	n := strings.ToLower(kind)
	if group != "" {
		n += "-" + strings.ToLower(strings.Split(group, ".")[0])
	}
	return n + "-" + strings.ToLower(version) + ".json"
}

// Schemas returns one standalone strict schema per group/version/kind.
func (s *Swagger) Schemas() (map[string]obj, error) {
	files := map[string]obj{}
	owner := map[string]string{}
	names := make([]string, 0, len(s.defs))
	for n := range s.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		def, _ := s.defs[name].(obj)
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(obj)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if kind == "" || version == "" {
				continue
			}
			fn := FileName(kind, group, version)
			if prev, ok := owner[fn]; ok {
				return nil, fmt.Errorf("%s and %s both map to %s", prev, name, fn)
			}
			owner[fn] = name
			sch, err := s.Definition(name)
			if err != nil {
				return nil, err
			}
			files[fn] = sch
		}
	}
	return files, nil
}

// Definition returns the named definition with refs inlined and made strict.
func (s *Swagger) Definition(name string) (obj, error) {
	v, err := s.expand(obj{"$ref": "#/definitions/" + name}, nil)
	if err != nil {
		return nil, err
	}
	o := v.(obj)
	finish(o)
	return o, nil
}

func (s *Swagger) expand(node any, stack []string) (any, error) {
	switch n := node.(type) {
	case obj:
		if ref, ok := n["$ref"].(string); ok {
			name, ok := strings.CutPrefix(ref, "#/definitions/")
			if !ok {
				return nil, fmt.Errorf("unsupported $ref %q", ref)
			}
			for _, seen := range stack {
				if seen == name {
					// A recursive type (JSONSchemaProps): stop, accept anything.
					return obj{"description": "recursive reference to " + name + " (not expanded)"}, nil
				}
			}
			if o, ok := overrides[name]; ok {
				c := copyObj(o)
				if d, ok := s.defs[name].(obj)["description"]; ok {
					c["description"] = d
				}
				return c, nil
			}
			def, ok := s.defs[name]
			if !ok {
				return nil, fmt.Errorf("dangling $ref %q", ref)
			}
			e, err := s.expand(def, append(stack[:len(stack):len(stack)], name))
			if err != nil {
				return nil, err
			}
			out := copyObj(e.(obj))
			if d, ok := n["description"]; ok { // the field's own description wins
				out["description"] = d
			}
			return out, nil
		}
		out := make(obj, len(n))
		for k, v := range n {
			if k == "x-kubernetes-group-version-kind" {
				continue
			}
			e, err := s.expand(v, stack)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		if f, _ := out["format"].(string); f == "int-or-string" {
			delete(out, "format")
			out["type"] = []any{"string", "integer"}
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			e, err := s.expand(v, stack)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	default:
		return node, nil
	}
}

func copyObj(o obj) obj {
	c := make(obj, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}

// finish walks a fully inlined schema and
//   - sets additionalProperties: false on objects that declare properties and
//     neither declare additionalProperties nor preserve unknown fields (strict);
//   - lets int-or-string fields (x-kubernetes-int-or-string) be string or integer;
//   - lets fields marked nullable, and optional properties (not in their parent's
//     required list), be null, as the API server decodes null as "unset".
func finish(o obj) {
	if v, _ := o["x-kubernetes-int-or-string"].(bool); v {
		o["type"] = []any{"string", "integer"}
	}
	if v, _ := o["nullable"].(bool); v {
		addNull(o)
	}
	if props, ok := o["properties"].(obj); ok {
		preserve, _ := o["x-kubernetes-preserve-unknown-fields"].(bool)
		if _, has := o["additionalProperties"]; !has && !preserve {
			o["additionalProperties"] = false
		}
		required := map[string]bool{}
		if r, ok := o["required"].([]any); ok {
			for _, x := range r {
				if s, ok := x.(string); ok {
					required[s] = true
				}
			}
		}
		for k, v := range props {
			p, ok := v.(obj)
			if !ok {
				continue
			}
			finish(p)
			if !required[k] {
				addNull(p)
			}
		}
	}
	for k, v := range o {
		switch k {
		case "properties":
			continue
		case "items", "additionalProperties", "not":
			if c, ok := v.(obj); ok {
				finish(c)
			}
			if l, ok := v.([]any); ok {
				for _, x := range l {
					if c, ok := x.(obj); ok {
						finish(c)
					}
				}
			}
		case "allOf", "anyOf", "oneOf":
			if l, ok := v.([]any); ok {
				for _, x := range l {
					if c, ok := x.(obj); ok {
						finish(c)
					}
				}
			}
		}
	}
}

func addNull(o obj) {
	switch t := o["type"].(type) {
	case string:
		if t != "null" {
			o["type"] = []any{t, "null"}
		}
	case []any:
		for _, x := range t {
			if x == "null" {
				return
			}
		}
		o["type"] = append(append([]any{}, t...), "null")
	}
	// For enums, null must be listed too or the enum rejects it.
	if e, ok := o["enum"].([]any); ok {
		for _, x := range e {
			if x == nil {
				return
			}
		}
		o["enum"] = append(append([]any{}, e...), nil)
	}
}

// ---------------------------------------------------------------------------
// CustomResourceDefinition → standalone JSON schemas.

// CRDSchemas converts every served version of every CRD in a (multi-document)
// YAML file. metadata is replaced by the built-in ObjectMeta schema when doc
// is not nil, since the API server validates it as such.
func CRDSchemas(b []byte, doc *Swagger) (map[string]obj, []string, error) {
	files := map[string]obj{}
	var kinds []string
	var meta obj
	if doc != nil {
		m, err := doc.expand(obj{"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}, nil)
		if err != nil {
			return nil, nil, err
		}
		meta = m.(obj)
	}
	for _, d := range splitYAML(b) {
		var crd struct {
			Kind string `json:"kind"`
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
					Schema struct {
						OpenAPIV3Schema obj `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(d, &crd); err != nil {
			return nil, nil, err
		}
		if crd.Kind == "" {
			continue
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, nil, fmt.Errorf("kind %s is not a CustomResourceDefinition", crd.Kind)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			s := v.Schema.OpenAPIV3Schema
			if s == nil {
				return nil, nil, fmt.Errorf("%s %s/%s has no openAPIV3Schema", crd.Spec.Names.Kind, crd.Spec.Group, v.Name)
			}
			if props, ok := s["properties"].(obj); ok && meta != nil {
				if m, ok := props["metadata"].(obj); ok && m["properties"] == nil {
					mm := copyObj(meta)
					if d, ok := m["description"]; ok {
						mm["description"] = d
					}
					props["metadata"] = mm
				}
			}
			finish(s)
			files[FileName(crd.Spec.Names.Kind, crd.Spec.Group, v.Name)] = s
			kinds = append(kinds, crd.Spec.Names.Kind+" "+crd.Spec.Group+"/"+v.Name)
		}
	}
	if len(files) == 0 {
		return nil, nil, errors.New("no CustomResourceDefinition with a served version")
	}
	return files, kinds, nil
}

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}
