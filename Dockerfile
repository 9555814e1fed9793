# syntax=docker/dockerfile:1
# check=error=true

# plantstore container image.
#
# CI builds it with BuildKit:
#   docker buildx build --build-arg VERSION=1.2.3 --build-arg REVISION=$(git rev-parse HEAD) -t plantstore:1.2.3 .
# tools/image/build.sh assembles the same runtime image without a daemon, and
# tools/image/lint.sh lints this file offline with BuildKit's own rules and
# checks its structure. docs/image.md tells the whole story.
#
# Pinning by digest: the tags below are the pins that tools/image checks. For
# byte-for-byte reproducible CI builds, append the digests that
# `docker buildx imagetools inspect <image>` prints, for example
#   golang:${GO_VERSION}-bookworm@sha256:<digest>
#   gcr.io/distroless/static-debian12:nonroot@sha256:<digest>
# and let a bot (Renovate, Dependabot) keep them fresh.

# GO_VERSION is the Go toolchain of the build stage: the newest patch release of the go directive's line in go.mod.
ARG GO_VERSION=1.26.11

# build compiles a static, trimmed binary on the build platform for the target platform.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

# Then the source the binary is built from (.dockerignore keeps the rest out of the context).
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/

ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG REVISION=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath \
      -ldflags "-s -w -X github.com/plantstore/plantstore/internal/version.Version=${VERSION} -X github.com/plantstore/plantstore/internal/version.Revision=${REVISION}" \
      -o /out/plantstore ./cmd/plantstore

# runtime is distroless static (CA certificates, tzdata, /etc/passwd with nonroot 65532; no shell, no package manager).
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
ARG VERSION=dev
ARG REVISION=unknown
# LICENSES is an SPDX expression for the image's licenses label: Apache-2.0, the repository's LICENSE.
ARG LICENSES=Apache-2.0
LABEL org.opencontainers.image.title="plantstore" \
      org.opencontainers.image.description="plantstore HTTP service: API on 8080, admin (probes, metrics) on 9090" \
      org.opencontainers.image.source="https://github.com/plantstore/plantstore" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="${LICENSES}"
COPY --from=build /out/plantstore /plantstore
USER 65532:65532
# 8080 is the API, 9090 the admin listener (/livez, /readyz, /metrics).
EXPOSE 8080/tcp 9090/tcp
ENTRYPOINT ["/plantstore"]
