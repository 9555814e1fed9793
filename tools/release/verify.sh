#!/usr/bin/env bash
# tools/release/verify.sh REGISTRY VERSION: verifies a published release as
# a user would before installing it (docs/release.md), with cosign only: the
# tag REGISTRY/plantstore:VERSION resolves to a signed image index, with a
# signed CycloneDX SBOM for each of its platforms and a signed SLSA v1
# provenance of it matching its annotations; the chart
# REGISTRY/charts/plantstore:VERSION is signed and pins that index.
#
# Key mode (default): COSIGN_PUB (default bin/release/cosign.pub). Keyless:
# CERT_IDENTITY_REGEXP and CERT_OIDC_ISSUER (the release workflow's identity,
# docs/release.md). Exits 1 on the first check that fails; prints one VERIFY
# line of figures when all pass.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
REGISTRY=${1:?usage: verify.sh REGISTRY VERSION}
VERSION=${2:?usage: verify.sh REGISTRY VERSION}
tools=$root/bin/tools
[ -x "$tools/cosign" ] && [ -x "$tools/crane" ] || "$root/tools/release/build.sh"
cosign=$tools/cosign
crane=$tools/crane
HELM=${HELM:-go tool -modfile=$root/tools/k8s/go.mod helm}

case $REGISTRY in
  localhost*|127.*|\[::1\]*) insecure=(--allow-insecure-registry --allow-http-registry); crane_insecure=(--insecure); plain_http=(--plain-http) ;;
  *) insecure=(); crane_insecure=(); plain_http=() ;;
esac
if [ -n "${CERT_IDENTITY_REGEXP:-}" ]; then
  trust=(--certificate-identity-regexp "$CERT_IDENTITY_REGEXP" --certificate-oidc-issuer "${CERT_OIDC_ISSUER:?with CERT_IDENTITY_REGEXP}")
else
  trust=(--key "${COSIGN_PUB:-$root/bin/release/cosign.pub}" --insecure-ignore-tlog=true)
fi

fail() { echo "verify: FAIL $*" >&2; exit 1; }
ok() { echo "  ok    $*"; }
work=$(mktemp -d /tmp/plantstore-release-verify.XXXXXX)
trap 'rm -rf "$work"' EXIT

image=$REGISTRY/plantstore
echo "== image $image:$VERSION"
digest=$("$crane" digest "${crane_insecure[@]}" "$image:$VERSION") || fail "$image:$VERSION does not resolve"
"$cosign" verify "${trust[@]}" "${insecure[@]}" "$image:$VERSION" >"$work/sig.json" 2>"$work/sig.err" \
  || { sed 's/^/    /' "$work/sig.err" >&2; fail "no valid signature on $image:$VERSION ($digest)"; }
signed=$(jq -r '.[0].critical.image["docker-manifest-digest"]' "$work/sig.json")
[ "$signed" = "$digest" ] || fail "the signature is for $signed, the tag is $digest"
ok "signature on $digest (annotations: $(jq -c '.[0].optional // {}' "$work/sig.json"))"

"$crane" manifest "${crane_insecure[@]}" "$image@$digest" >"$work/index.json"
jq -e '.mediaType == "application/vnd.oci.image.index.v1+json"' "$work/index.json" >/dev/null || fail "$digest is not an OCI image index"
platforms=$(jq -r '[.manifests[].platform | "\(.os)/\(.architecture)"] | join(",")' "$work/index.json")
revision=$(jq -r '.annotations["org.opencontainers.image.revision"] // ""' "$work/index.json")
[ "$(jq -r '.annotations["org.opencontainers.image.version"] // ""' "$work/index.json")" = "$VERSION" ] || fail "the index's version annotation is not $VERSION"
ok "image index of $platforms, version $VERSION, revision $revision, created $(jq -r '.annotations["org.opencontainers.image.created"]' "$work/index.json")"

echo "== attestations"
decode() { jq -r '.payload' | base64 -d; }
"$cosign" verify-attestation "${trust[@]}" "${insecure[@]}" --type cyclonedx "$image@$digest" >"$work/sbom.jsonl" 2>"$work/sbom.err" \
  || { sed 's/^/    /' "$work/sbom.err" >&2; fail "no valid CycloneDX SBOM attestation on $digest"; }
sboms=0
while read -r line; do
  st=$(decode <<<"$line")
  [ "$(jq -r '.subject[0].digest.sha256' <<<"$st")" = "${digest#sha256:}" ] || fail "an SBOM attestation's subject is not $digest"
  n=$(jq '.predicate.components | length' <<<"$st")
  plat=$(jq -r '.predicate.metadata.properties[]? | select(.name == "plantstore:platform") | .value' <<<"$st")
  jq -e '.predicate.components[] | select(.name == "github.com/redis/go-redis/v9")' <<<"$st" >/dev/null || fail "the $plat SBOM lacks go-redis"
  ok "SBOM for $plat: $n components (CycloneDX $(jq -r .predicate.specVersion <<<"$st"))"
  sboms=$((sboms + 1))
done <"$work/sbom.jsonl"
nplat=$(jq '.manifests | length' "$work/index.json")
[ "$sboms" -ge "$nplat" ] || fail "$sboms SBOM attestations for $nplat platforms"

"$cosign" verify-attestation "${trust[@]}" "${insecure[@]}" --type slsaprovenance1 "$image@$digest" >"$work/prov.jsonl" 2>"$work/prov.err" \
  || { sed 's/^/    /' "$work/prov.err" >&2; fail "no valid SLSA provenance attestation on $digest"; }
st=$(head -1 "$work/prov.jsonl" | decode)
[ "$(jq -r '.subject[0].digest.sha256' <<<"$st")" = "${digest#sha256:}" ] || fail "the provenance's subject is not $digest"
[ "$(jq -r '.predicate.buildDefinition.externalParameters.version' <<<"$st")" = "$VERSION" ] || fail "the provenance's version is not $VERSION"
[ "$(jq -r '.predicate.buildDefinition.externalParameters.source.digest.gitCommit' <<<"$st")" = "$revision" ] || fail "the provenance's commit is not the index's revision $revision"
ok "SLSA provenance: commit $revision, builder $(jq -r '.predicate.runDetails.builder.id' <<<"$st")"

echo "== chart $REGISTRY/charts/plantstore:$VERSION"
chart=$REGISTRY/charts/plantstore
chart_digest=$("$crane" digest "${crane_insecure[@]}" "$chart:$VERSION") || fail "$chart:$VERSION does not resolve"
"$cosign" verify "${trust[@]}" "${insecure[@]}" "$chart:$VERSION" >/dev/null 2>"$work/chart.err" \
  || { sed 's/^/    /' "$work/chart.err" >&2; fail "no valid signature on the chart $chart:$VERSION ($chart_digest)"; }
ok "signature on $chart_digest"
$HELM show values "oci://$chart" --version "$VERSION" "${plain_http[@]}" >"$work/values.yaml" 2>"$work/helm.err" \
  || { cat "$work/helm.err" >&2; fail "helm cannot read the chart"; }
pinned=$(awk '/^image:/ {i=1; next} i && /^[^ #]/ {i=0} i && /^  digest:/ {gsub(/"/, "", $2); print $2}' "$work/values.yaml")
[ "$pinned" = "$digest" ] || fail "the chart pins image $pinned, the verified image is $digest"
ok "the chart pins the verified image $digest"

echo "VERIFY version=$VERSION image=$digest platforms=$platforms sboms=$sboms provenance=1 chart=$chart_digest"
