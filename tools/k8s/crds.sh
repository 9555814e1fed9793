#!/usr/bin/env bash
# Copies the CRDs of the custom resources the chart renders (ServiceMonitor,
# PrometheusRule, HTTPRoute) into DIR: the files clusters install, from the
# modules that publish them, fetched through the module proxy when missing
# (Gateway API's Standard channel: what the chart renders by default must
# pass it). validate.sh installs them into its API server, the cluster
# scenarios into the test cluster.
#
#   tools/k8s/crds.sh DIR
set -euo pipefail
PROMETHEUS_OPERATOR=github.com/prometheus-operator/prometheus-operator@v0.85.0
GATEWAY_API=sigs.k8s.io/gateway-api@v1.6.3

dir=${1:?usage: crds.sh DIR}
mkdir -p "$dir"
# copy MODULE@VERSION FILE...: the files from the module's directory in the module cache.
copy() {
  local mod
  mod=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -n $mod ]] || { echo "crds: $1: not downloaded" >&2; return 1; }
  shift
  for f in "$@"; do cp "$mod/$f" "$dir/"; done
}
copy "$PROMETHEUS_OPERATOR" \
  example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml \
  example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml
copy "$GATEWAY_API" config/crd/standard/gateway.networking.k8s.io_httproutes.yaml
