#!/usr/bin/env bash
# Lints the Dockerfile offline with BuildKit's own rules and checks its
# structure and .dockerignore; exits non-zero on any finding. The steps, and
# what each proves, are in docs/image.md ("Linting offline"): go test of
# tools/image, imagetool lint, imagetool check.
#
# IMAGE_LINT_SKIP_TESTS=1 skips the go test.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/tools/image"
export GOWORK=off

t0=$SECONDS
step() { printf '== [%3ss] %s\n' "$((SECONDS - t0))" "$*"; }

bin=$(mktemp -d /tmp/plantstore-imagetool.XXXXXX)
trap 'rm -rf "$bin"' EXIT

if [ "${IMAGE_LINT_SKIP_TESTS:-0}" != 1 ]; then
  step "go test ./... (tools/image)"
  go test -count=1 ./...
fi

step "building imagetool"
go build -o "$bin/imagetool" .

step "BuildKit's lint rules, offline: Dockerfile"
"$bin/imagetool" lint -C "$root"

step "structure: Dockerfile and .dockerignore"
"$bin/imagetool" check -C "$root"

step "done"
