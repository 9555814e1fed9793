// Command k8s-testenv holds the small pieces of tools/k8s/validate.sh that are
// awkward in bash and should not depend on python or ss:
//
//	k8s-testenv ports N                 print N free TCP ports on 127.0.0.1
//	k8s-testenv pods DIR < manifests    one Pod manifest per pod template
//	                                    (Pod, Deployment, StatefulSet, DaemonSet,
//	                                    ReplicaSet, Job, CronJob) written to DIR;
//	                                    prints "file<TAB>source<TAB>serviceAccount"
//	k8s-testenv namespaces < manifests  distinct metadata.namespace values
//	k8s-testenv hooks < manifests       "kind/name<TAB>hooks" of non-test hooks
//	k8s-testenv secrets [CHART_VALUES] VALUES
//	                                    Secrets an existingSecret value set
//	                                    expects: "name<TAB>key,key"
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

type obj = map[string]any

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-testenv:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: k8s-testenv ports|pods|namespaces|hooks|secrets ...")
	}
	switch args[0] {
	case "ports":
		n := 1
		if len(args) > 1 {
			var err error
			if n, err = strconv.Atoi(args[1]); err != nil {
				return err
			}
		}
		ports, err := freePorts(n)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Fprintln(stdout, p)
		}
		return nil
	case "pods":
		if len(args) != 2 {
			return errors.New("usage: k8s-testenv pods DIR < manifests")
		}
		docs, err := readDocs(stdin)
		if err != nil {
			return err
		}
		return writePods(args[1], docs, stdout)
	case "namespaces":
		docs, err := readDocs(stdin)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, d := range docs {
			if ns := str(d, "metadata", "namespace"); ns != "" && !seen[ns] {
				seen[ns] = true
				fmt.Fprintln(stdout, ns)
			}
		}
		return nil
	case "hooks":
		docs, err := readDocs(stdin)
		if err != nil {
			return err
		}
		for _, d := range docs {
			h := str(d, "metadata", "annotations", "helm.sh/hook")
			if h == "" {
				continue
			}
			nonTest := false
			for _, x := range strings.Split(h, ",") {
				if x = strings.TrimSpace(x); x != "test" && x != "test-success" {
					nonTest = true
				}
			}
			if nonTest {
				fmt.Fprintf(stdout, "%s/%s\t%s\n", str(d, "kind"), str(d, "metadata", "name"), h)
			}
		}
		return nil
	case "secrets":
		// secrets [DEFAULTS.yaml] VALUES.yaml: names come from VALUES (the
		// value set), key names may come from the chart's defaults.
		if len(args) < 2 || len(args) > 3 {
			return errors.New("usage: k8s-testenv secrets [chart-values.yaml] values.yaml")
		}
		var merged any
		for _, f := range args[1:] {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			var v any
			if err := yaml.Unmarshal(b, &v); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			merged = merge(merged, v)
		}
		for _, s := range existingSecrets(merged) {
			fmt.Fprintf(stdout, "%s\t%s\n", s.name, strings.Join(s.keys, ","))
		}
		return nil
	}
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// ---------------------------------------------------------------------------

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ---------------------------------------------------------------------------

func readDocs(r io.Reader) ([]obj, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var docs []obj
	for _, d := range splitYAML(b) {
		if len(bytes.TrimSpace(d)) == 0 {
			continue
		}
		var o obj
		if err := yaml.Unmarshal(d, &o); err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		if str(o, "kind") == "List" {
			if items, ok := o["items"].([]any); ok {
				for _, it := range items {
					if item, ok := it.(obj); ok {
						docs = append(docs, item)
					}
				}
			}
			continue
		}
		docs = append(docs, o)
	}
	return docs, nil
}

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(obj)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string {
	s, _ := get(o, path...).(string)
	return s
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// writePods writes one Pod per pod template, as the workload controllers
// would create it (StatefulSet volumeClaimTemplates become PVC volumes).
func writePods(dir string, docs []obj, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range docs {
		kind, name := str(d, "kind"), str(d, "metadata", "name")
		var tmpl obj
		switch kind {
		case "Pod":
			tmpl = obj{"metadata": get(d, "metadata"), "spec": get(d, "spec")}
		case "Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job", "ReplicationController":
			tmpl, _ = get(d, "spec", "template").(obj)
		case "CronJob":
			tmpl, _ = get(d, "spec", "jobTemplate", "spec", "template").(obj)
		default:
			continue
		}
		if tmpl == nil {
			return fmt.Errorf("%s/%s has no pod template", kind, name)
		}
		spec, _ := tmpl["spec"].(obj)
		if spec == nil {
			return fmt.Errorf("%s/%s has no pod spec", kind, name)
		}
		spec = shallow(spec)
		if kind == "StatefulSet" {
			vcts, _ := get(d, "spec", "volumeClaimTemplates").([]any)
			vols, _ := spec["volumes"].([]any)
			vols = append([]any(nil), vols...)
			for _, v := range vcts {
				vn := str(v, "metadata", "name")
				vols = append(vols, obj{"name": vn, "persistentVolumeClaim": obj{"claimName": vn + "-" + name + "-0"}})
			}
			if len(vols) > 0 {
				spec["volumes"] = vols
			}
		}
		podName := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(kind+"-"+name), "-"), "-")
		meta := obj{"name": podName}
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := get(tmpl, "metadata", k).(obj); ok && len(v) > 0 {
				meta[k] = v
			}
		}
		pod := obj{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
		b, err := yaml.Marshal(pod)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, podName+".yaml")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return err
		}
		sa := str(spec, "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		fmt.Fprintf(stdout, "%s\t%s/%s\t%s\n", file, kind, name, sa)
	}
	return nil
}

func shallow(o obj) obj {
	c := make(obj, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}

// ---------------------------------------------------------------------------

type secretRef struct {
	name string
	keys []string
}

var (
	existingSecretKey = regexp.MustCompile(`(?i)^existingSecret(Name)?$`)
	secretKeyKey      = regexp.MustCompile(`(?i)^(existingSecret)?\w*Key$`)
)

// existingSecrets finds every `existingSecret: NAME` (or
// `existingSecret: {name: NAME, key: KEY}`) in a values tree. The keys the
// Secret needs are the string values of sibling fields named like
// existingSecretKey / existingSecretPasswordKey / passwordKey / key.
func existingSecrets(v any) []secretRef {
	byName := map[string]map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch n := v.(type) {
		case obj:
			for k, val := range n {
				if !existingSecretKey.MatchString(k) {
					continue
				}
				name := ""
				keys := map[string]bool{}
				switch s := val.(type) {
				case string:
					name = s
					for sk, sv := range n {
						if sk != k && secretKeyKey.MatchString(sk) {
							if s, ok := sv.(string); ok && s != "" {
								keys[s] = true
							}
						}
					}
				case obj:
					name, _ = s["name"].(string)
					for sk, sv := range s {
						if sk == "key" || secretKeyKey.MatchString(sk) {
							if s, ok := sv.(string); ok && s != "" {
								keys[s] = true
							}
						}
					}
				}
				if name == "" {
					continue
				}
				if byName[name] == nil {
					byName[name] = map[string]bool{}
				}
				for k := range keys {
					byName[name][k] = true
				}
			}
			for _, val := range n {
				walk(val)
			}
		case []any:
			for _, x := range n {
				walk(x)
			}
		}
	}
	walk(v)
	var out []secretRef
	for name, keys := range byName {
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		out = append(out, secretRef{name, ks})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// merge overlays b on a as Helm merges values files (maps merge, the rest is
// replaced; null deletes).
func merge(a, b any) any {
	am, aok := a.(obj)
	bm, bok := b.(obj)
	if !aok || !bok {
		if b == nil && a != nil && !bok {
			return a
		}
		return b
	}
	out := shallow(am)
	for k, v := range bm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = merge(out[k], v)
	}
	return out
}
