// Command k8s-helm-hooks lists the Helm hooks of rendered manifests other
// than test hooks, "Kind/name<TAB>hooks" a line: tools/k8s/validate.sh
// installs with --no-hooks and says which hooks it did not run.
//
//	k8s-helm-hooks < manifests
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/plantstore/plantstore/tools/k8s/cmd/internal/manifest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-helm-hooks:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 0 {
		return errors.New("usage: k8s-helm-hooks < manifests")
	}
	objs, err := manifest.Read(stdin)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if h := manifest.String(o, "metadata", "annotations", "helm.sh/hook"); runsOutsideTests(h) {
			fmt.Fprintf(stdout, "%s/%s\t%s\n", manifest.String(o, "kind"), manifest.String(o, "metadata", "name"), h)
		}
	}
	return nil
}

// runsOutsideTests tells whether a helm.sh/hook value names a hook other
// than "test" (and its old spelling "test-success").
func runsOutsideTests(hooks string) bool {
	for _, h := range strings.Split(hooks, ",") {
		if h = strings.TrimSpace(h); h != "" && h != "test" && h != "test-success" {
			return true
		}
	}
	return false
}
