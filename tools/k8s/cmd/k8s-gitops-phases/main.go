// Command k8s-gitops-phases splits what `helm template` prints into the
// steps of an Argo CD sync, as Argo CD maps Helm's hooks: pre-install and
// pre-upgrade hooks are PreSync, post-install and post-upgrade PostSync,
// the rest is Sync; helm.sh/hook-weight is the hook's wave, and test,
// delete and rollback hooks are not run. tools/k8s/cluster-test.d's GitOps
// scenario applies the steps in order with server-side apply.
//
//	k8s-gitops-phases -out DIR < manifests
//
// It writes one file a step into DIR and prints the steps in order, one a
// line: "FILE<TAB>PHASE<TAB>WAVE<TAB>DELETE-POLICIES" (policies as Argo CD
// names them, comma-separated; "-" for the Sync phase's objects).
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plantstore/plantstore/tools/k8s/cmd/internal/manifest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-gitops-phases:", err)
		os.Exit(1)
	}
}

// phases in the order a sync runs them.
var phases = []string{"PreSync", "Sync", "PostSync"}

// helmHookPhase maps one helm.sh/hook value to Argo CD's phase; "" for the
// hooks Argo CD does not run.
var helmHookPhase = map[string]string{
	"pre-install": "PreSync", "pre-upgrade": "PreSync",
	"post-install": "PostSync", "post-upgrade": "PostSync",
}

// helmDeletePolicy maps helm.sh/hook-delete-policy values to Argo CD's.
var helmDeletePolicy = map[string]string{
	"before-hook-creation": "BeforeHookCreation",
	"hook-succeeded":       "HookSucceeded",
	"hook-failed":          "HookFailed",
}

type step struct {
	phase    string
	wave     int
	policies string
	objs     []manifest.Object
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("k8s-gitops-phases", flag.ContinueOnError)
	out := fs.String("out", "", "directory for the steps' files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		return errors.New("usage: k8s-gitops-phases -out DIR < manifests")
	}
	objs, err := manifest.Read(stdin)
	if err != nil {
		return err
	}
	steps := map[string]*step{}
	for _, o := range objs {
		phase, wave, policies, err := classify(o)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", manifest.String(o, "kind"), manifest.String(o, "metadata", "name"), err)
		}
		if phase == "" {
			continue
		}
		key := fmt.Sprintf("%s\t%d\t%s", phase, wave, policies)
		if steps[key] == nil {
			steps[key] = &step{phase: phase, wave: wave, policies: policies}
		}
		steps[key].objs = append(steps[key].objs, o)
	}
	ordered := slices.SortedFunc(maps.Values(steps), func(a, b *step) int {
		return cmp.Or(cmp.Compare(slices.Index(phases, a.phase), slices.Index(phases, b.phase)),
			cmp.Compare(a.wave, b.wave), strings.Compare(a.policies, b.policies))
	})
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for i, s := range ordered {
		file := filepath.Join(*out, fmt.Sprintf("%02d-%s-wave%d.yaml", i, strings.ToLower(s.phase), s.wave))
		var b strings.Builder
		for _, o := range s.objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\t%s\t%d\t%s\n", file, s.phase, s.wave, s.policies)
	}
	return nil
}

// classify returns an object's phase ("" when Argo CD does not run it), its
// wave and its delete policies.
func classify(o manifest.Object) (phase string, wave int, policies string, err error) {
	hooks := manifest.String(o, "metadata", "annotations", "helm.sh/hook")
	if hooks == "" {
		w, err := atoi(manifest.String(o, "metadata", "annotations", "argocd.argoproj.io/sync-wave"))
		return "Sync", w, "-", err
	}
	for _, h := range strings.Split(hooks, ",") {
		if p := helmHookPhase[strings.TrimSpace(h)]; p != "" {
			if phase != "" && phase != p {
				return "", 0, "", fmt.Errorf("hooks %q fall in two phases", hooks)
			}
			phase = p
		}
	}
	if phase == "" {
		return "", 0, "", nil
	}
	if wave, err = atoi(manifest.String(o, "metadata", "annotations", "helm.sh/hook-weight")); err != nil {
		return "", 0, "", err
	}
	var ps []string
	for _, p := range strings.Split(manifest.String(o, "metadata", "annotations", "helm.sh/hook-delete-policy"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		a, ok := helmDeletePolicy[p]
		if !ok {
			return "", 0, "", fmt.Errorf("unknown helm.sh/hook-delete-policy %q", p)
		}
		ps = append(ps, a)
	}
	if len(ps) == 0 {
		ps = []string{"BeforeHookCreation"} // Argo CD's default
	}
	slices.Sort(ps)
	return phase, wave, strings.Join(ps, ","), nil
}

func atoi(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("wave %q: %w", s, err)
	}
	return n, nil
}
