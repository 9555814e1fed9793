#!/bin/sh
# chart-docs.sh: write, or check, the values table of the chart's README, which
# helm-docs (pinned in tools/helmdocs/go.mod) generates from the `# --`
# comments of values.yaml through README.md.gotmpl, and the descriptions of
# values.schema.json from that table.
#
#   tools/helmdocs/chart-docs.sh        rewrite charts/plantstore/README.md (make chart-docs, in make generate)
#   tools/helmdocs/chart-docs.sh check  fail, with a diff, when the README is not what values.yaml generates,
#                                       or its table disagrees with values.schema.json (make chart-docs-check,
#                                       in make lint)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
chart=charts/plantstore
go=${GO:-go}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# helm-docs reports a template or values file it cannot read as a warning and
# still exits 0, so a warning fails here.
helm_docs() {
	status=0
	"$go" tool -modfile=tools/helmdocs/go.mod helm-docs --chart-search-root "$chart" \
		--sort-values-order file --log-level warning "$@" 2>"$tmp/log" || status=$?
	cat "$tmp/log" >&2
	if [ "$status" -ne 0 ] || grep -q 'level=' "$tmp/log"; then
		echo "chart-docs: helm-docs failed on $chart (above)" >&2
		exit 1
	fi
}

case ${1:-generate} in
generate)
	helm_docs
	# values.schema.json's descriptions are the table's (what editors show).
	(cd tools/helmdocs && "$go" test -count=1 -run '^TestSchemaDescriptionsAreTheComments$' . -update >/dev/null)
	echo "chart-docs: wrote $chart/README.md and the descriptions of $chart/values.schema.json from $chart/values.yaml"
	;;
check)
	helm_docs --dry-run >"$tmp/README.md"
	if ! diff -u "$chart/README.md" "$tmp/README.md" >"$tmp/diff"; then
		cat "$tmp/diff"
		echo "chart-docs: $chart/README.md is not what $chart/README.md.gotmpl and the comments of values.yaml generate: edit those, not README.md, run make generate and commit the result" >&2
		exit 1
	fi
	if ! (cd tools/helmdocs && "$go" test -count=1 ./...); then
		echo "chart-docs: the values table of $chart/README.md disagrees with $chart/values.schema.json (above); fix the comment in values.yaml (or the schema's type) and run make generate" >&2
		exit 1
	fi
	echo "chart-docs: $chart/README.md is what $chart/values.yaml generates, and agrees with values.schema.json"
	;;
*)
	echo "usage: $0 [generate|check]" >&2
	exit 2
	;;
esac
