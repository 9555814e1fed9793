// Command k8s-pod-templates writes one Pod manifest per pod template of the
// objects it reads (Pod, Deployment, ReplicaSet, DaemonSet, StatefulSet, Job,
// ReplicationController, CronJob), as their controllers would create it, so
// that tools/k8s/validate.sh can have a bare kube-apiserver admit each under
// a Pod Security level. It prints "file<TAB>Kind/name<TAB>serviceAccount"
// per Pod:
//
//	k8s-pod-templates DIR < manifests
package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/plantstore/plantstore/tools/k8s/cmd/internal/manifest"
	"sigs.k8s.io/yaml"
)

type object = manifest.Object

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-pod-templates:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: k8s-pod-templates DIR < manifests")
	}
	objs, err := manifest.Read(stdin)
	if err != nil {
		return err
	}
	return writePods(args[0], objs, stdout)
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// writePods writes one Pod per pod template (a StatefulSet's
// volumeClaimTemplates become the volumes of its first replica's claims).
func writePods(dir string, objs []object, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, o := range objs {
		kind, name := manifest.String(o, "kind"), manifest.String(o, "metadata", "name")
		var tmpl object
		switch kind {
		case "Pod":
			tmpl = object{"metadata": manifest.Get(o, "metadata"), "spec": manifest.Get(o, "spec")}
		case "Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job", "ReplicationController":
			tmpl, _ = manifest.Get(o, "spec", "template").(object)
		case "CronJob":
			tmpl, _ = manifest.Get(o, "spec", "jobTemplate", "spec", "template").(object)
		default:
			continue
		}
		if tmpl == nil {
			return fmt.Errorf("%s/%s has no pod template", kind, name)
		}
		spec, _ := tmpl["spec"].(object)
		if spec == nil {
			return fmt.Errorf("%s/%s has no pod spec", kind, name)
		}
		spec = maps.Clone(spec)
		if kind == "StatefulSet" {
			vcts, _ := manifest.Get(o, "spec", "volumeClaimTemplates").([]any)
			vols, _ := spec["volumes"].([]any)
			vols = append([]any(nil), vols...)
			for _, v := range vcts {
				vn := manifest.String(v, "metadata", "name")
				vols = append(vols, object{"name": vn, "persistentVolumeClaim": object{"claimName": vn + "-" + name + "-0"}})
			}
			if len(vols) > 0 {
				spec["volumes"] = vols
			}
		}
		podName := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(kind+"-"+name), "-"), "-")
		meta := object{"name": podName}
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := manifest.Get(tmpl, "metadata", k).(object); ok && len(v) > 0 {
				meta[k] = v
			}
		}
		b, err := yaml.Marshal(object{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
		if err != nil {
			return err
		}
		file := filepath.Join(dir, podName+".yaml")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return err
		}
		sa := manifest.String(spec, "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		fmt.Fprintf(stdout, "%s\t%s/%s\t%s\n", file, kind, name, sa)
	}
	return nil
}
