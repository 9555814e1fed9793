// Package manifest reads the multi-document YAML that helm template and
// kubectl kustomize print, for the small commands of tools/k8s.
package manifest

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one decoded Kubernetes object.
type Object = map[string]any

// Read decodes every object of a YAML stream; empty documents are skipped
// and the items of a List are returned in its place.
func Read(r io.Reader) ([]Object, error) {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []Object
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		var o Object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if o == nil {
			continue
		}
		if String(o, "kind") == "List" {
			items, _ := o["items"].([]any)
			for _, it := range items {
				if item, ok := it.(Object); ok {
					objs = append(objs, item)
				}
			}
			continue
		}
		objs = append(objs, o)
	}
}

// Get is the value at path, or nil when a step is missing or not a map.
func Get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(Object)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

// String is the string at path, or "".
func String(o any, path ...string) string {
	s, _ := Get(o, path...).(string)
	return s
}
