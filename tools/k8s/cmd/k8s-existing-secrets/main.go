// Command k8s-existing-secrets prints the Secrets a chart value set expects
// to exist, "name<TAB>key,key" a line, so that tools/k8s/validate.sh can
// create them before installing. Names come from existingSecret values,
// keys from the sibling *Key values; with the chart's own values.yaml first,
// the value set is laid over it as Helm does, so key names may come from the
// chart's defaults.
//
//	k8s-existing-secrets [CHART_VALUES] VALUES
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
)

type values = map[string]any

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-existing-secrets:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: k8s-existing-secrets [chart-values.yaml] values.yaml")
	}
	var merged values
	for _, f := range slices.Backward(args) { // the value set first: it wins
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		merged = chartutil.CoalesceTables(merged, v)
	}
	for _, s := range existingSecrets(merged) {
		fmt.Fprintf(stdout, "%s\t%s\n", s.name, strings.Join(s.keys, ","))
	}
	return nil
}

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
		case values:
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
				case values:
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
