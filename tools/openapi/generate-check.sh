#!/bin/sh
# generate-check.sh: fail, with a diff, when the generated Go client is not
# what the OpenAPI document generates now (make generate-check, in make lint).
#
#   tools/openapi/generate-check.sh [document] [generated file] [config]
#
# The defaults are the repository's: api/openapi.yaml, api/client/client.gen.go
# and api/client/oapi-codegen.yaml. Relative paths are taken from the root of
# the repository; oapi-codegen is the version pinned in tools/go.mod.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
doc=${1:-api/openapi.yaml}
gen=${2:-api/client/client.gen.go}
config=${3:-api/client/oapi-codegen.yaml}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
${GO:-go} tool -modfile=tools/go.mod oapi-codegen -config "$config" -o "$tmp/client.gen.go" "$doc"
if ! diff -u "$gen" "$tmp/client.gen.go" >"$tmp/diff"; then
	cat "$tmp/diff"
	echo "generate-check: $gen is not what $doc generates; run make generate and commit the result" >&2
	exit 1
fi
echo "generate-check: $gen is what $doc generates"
