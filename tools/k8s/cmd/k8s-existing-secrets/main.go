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
	"maps"
	"os"
	"regexp"
	"slices"
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
// Secret needs are the string values of the fields beside NAME named like
// existingSecretKey / existingSecretPasswordKey / passwordKey / key.
func existingSecrets(v any) []secretRef {
	byName := map[string]map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch n := v.(type) {
		case values:
			for k, val := range n {
				walk(val)
				if !existingSecretKey.MatchString(k) {
					continue
				}
				name, fields := "", n
				switch s := val.(type) {
				case string:
					name = s
				case values:
					name, _ = s["name"].(string)
					fields = s
				}
				if name == "" {
					continue
				}
				if byName[name] == nil {
					byName[name] = map[string]bool{}
				}
				for fk, fv := range fields {
					if key, ok := fv.(string); ok && key != "" && secretKeyKey.MatchString(fk) {
						byName[name][key] = true
					}
				}
			}
		case []any:
			for _, x := range n {
				walk(x)
			}
		}
	}
	walk(v)
	var out []secretRef
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, secretRef{name, slices.Sorted(maps.Keys(byName[name]))})
	}
	return out
}
