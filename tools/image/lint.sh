#!/usr/bin/env bash
# Lints the Dockerfile offline with BuildKit's own rules and checks its
# structure and .dockerignore; exits non-zero on any finding. See docs/image.md.
#
#   1. go test in tools/image: proves that the offline lint fires (every rule
#      it is expected to catch, CopyIgnoredFile included), that an unknown base
#      image fails, and that each structural check catches its regression;
#   2. imagetool lint: BuildKit's Dockerfile frontend (the code behind
#      `docker build --check`, from github.com/moby/buildkit), experimental
#      rules included, with base image metadata from basemeta.json instead of
#      a registry; any warning fails;
#   3. imagetool check: the final stage is distroless static nonroot (or
#      scratch), USER 65532:65532, EXPOSE 8080/tcp 9090/tcp, ENTRYPOINT
#      ["/plantstore"], OCI labels; the builder is golang:${GO_VERSION}-bookworm
#      on go.mod's Go line, go.mod/go.sum and `go mod download` before the
#      source, cache mounts, CGO_ENABLED=0, -trimpath and the -ldflags stamps;
#      .dockerignore keeps what the build needs and nothing else.
#
# IMAGE_LINT_SKIP_TESTS=1 skips step 1.
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
