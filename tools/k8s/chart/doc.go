// Package chart holds the render tests of charts/plantstore, run by `make
// test`: the chart rendered in-process by Helm's own install and upgrade
// actions, exactly as `helm template` (no cluster: lookup finds nothing) and
// `helm upgrade --dry-run` render it, and the objects checked. What needs a
// real API server or kubelet is tools/k8s/validate.sh's and the test
// cluster's (cluster-test.d/).
package chart
