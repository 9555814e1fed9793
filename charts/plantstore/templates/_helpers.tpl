{{/*
Names. Every helper takes the root context unless it says otherwise.
*/}}
{{- define "plantstore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "plantstore.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The name of one of the release's objects: fullname and a suffix, fullname cut so that the suffix survives
and the whole stays within a limit: 63 by default (a DNS label, and a label value: a Job's name becomes its
pods' job-name label), 52 for a StatefulSet (its controller-revision-hash label adds 11 characters). Any
release name Helm accepts (53 characters at most) then gives every object a distinct name within its limit.
Takes (list $ctx suffix [limit]).
*/}}
{{- define "plantstore.suffixedName" -}}
{{- $ctx := index . 0 }}
{{- $suffix := index . 1 }}
{{- $limit := 63 }}
{{- if gt (len .) 2 }}{{ $limit = index . 2 }}{{ end }}
{{- printf "%s%s" (include "plantstore.fullname" $ctx | trunc (sub $limit (len $suffix) | int) | trimSuffix "-") $suffix }}
{{- end }}

{{- define "plantstore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels the chart sets itself on every object. */}}
{{- define "plantstore.chartLabels" -}}
helm.sh/chart: {{ include "plantstore.chart" . }}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: plantstore
{{- end }}

{{/* Labels of every object: the chart's, then commonLabels. */}}
{{- define "plantstore.commonLabels" -}}
{{ include "plantstore.chartLabels" . }}
{{- include "plantstore.extraLabels" (dict "maps" (list .Values.commonLabels)) }}
{{- end }}

{{/*
Labels the user adds (commonLabels, podLabels, ...), for appending after the chart's: the maps of .maps
merged, an earlier one winning, as YAML lines each after a newline; nothing when empty. The keys the chart
sets itself are dropped (the schema refuses them in commonLabels): selectors match on them, so a pod
labelled otherwise would fall out of its Deployment, Service and NetworkPolicy.
*/}}
{{- define "plantstore.extraLabels" -}}
{{- $out := dict }}
{{- range .maps }}{{ $out = merge $out (deepCopy (. | default dict)) }}{{ end }}
{{- range list "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" "app.kubernetes.io/component" }}
{{- $_ := unset $out . }}
{{- end }}
{{- with $out }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Labels of an object (a pod template, a ServiceMonitor, ...) with labels of its own: the chart's and the
component's, then its own over commonLabels (Bitnami's precedence: podLabels win). Call with
(dict "context" $ "component" "api" "labels" map).
*/}}
{{- define "plantstore.labelsWith" -}}
{{ include "plantstore.chartLabels" .context }}
app.kubernetes.io/component: {{ .component }}
{{- include "plantstore.extraLabels" (dict "maps" (list .labels .context.Values.commonLabels)) }}
{{- end }}

{{/*
metadata.annotations of an object: its own (.own, a map; they win) over commonAnnotations without the keys
of .skip (those the template writes itself, such as helm.sh/hook), as YAML lines at column 0; nothing when
empty. Call with (dict "context" $ "own" map "skip" list); use in `with`, so that no empty
`annotations:` is rendered.
*/}}
{{- define "plantstore.annotations" -}}
{{- $common := deepCopy (.context.Values.commonAnnotations | default dict) }}
{{- range .skip }}{{ $_ := unset $common . }}{{ end }}
{{- $out := merge (deepCopy (.own | default dict)) $common }}
{{- with $out }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* Labels of the API objects. */}}
{{- define "plantstore.labels" -}}
{{ include "plantstore.commonLabels" . }}
app.kubernetes.io/component: api
{{- end }}

{{/* Selector labels of the API pods (immutable: never add to them). */}}
{{- define "plantstore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: api
{{- end }}

{{/*
The admin Service: the API pods' admin port, inside the cluster only. Its component label tells it
from the API Service, for the ServiceMonitor's selector.
*/}}
{{- define "plantstore.admin.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-admin") }}
{{- end }}

{{- define "plantstore.admin.labels" -}}
{{ include "plantstore.commonLabels" . }}
app.kubernetes.io/component: admin
{{- end }}

{{- define "plantstore.admin.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: admin
{{- end }}

{{- define "plantstore.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "plantstore.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
An image reference from {registry, repository, tag, digest}, for every image the chart renders; call with
(dict "image" ... "defaultTag" ... "context" $). The registry is global.imageRegistry, else image.registry,
else the host that begins repository (a first path element with a "." or ":", or localhost; none: Docker
Hub). Either value replaces that host, so a mirror takes every image with one value whether repository
names its registry (ghcr.io/plantstore/plantstore) or not (redis): Bitnami's registry/repository split,
with this chart's repositories that name their registry.
*/}}
{{- define "plantstore.imageRef" -}}
{{- if not .context }}
{{- fail "plantstore.imageRef: call with (dict \"image\" ... \"defaultTag\" ... \"context\" $): global.imageRegistry applies to every image" }}
{{- end }}
{{- $repo := .image.repository }}
{{- $parts := splitList "/" $repo }}
{{- $host := "" }}
{{- $first := first $parts }}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) }}
{{- $host = $first }}
{{- $repo = rest $parts | join "/" }}
{{- end }}
{{- $registry := (.context.Values.global | default dict).imageRegistry | default .image.registry | default $host }}
{{- if $registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo }}{{ end }}
{{- $tag := .image.tag | default .defaultTag | toString }}
{{- if .image.digest }}
{{- printf "%s:%s@%s" $repo $tag .image.digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{- define "plantstore.image" -}}
{{- include "plantstore.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion "context" .) }}
{{- end }}

{{/*
imagePullSecrets of every pod: global.imagePullSecrets, then imagePullSecrets, each a name or {name: ...}
(the forms Bitnami's charts take), a name once; a pod-spec key at column 0 for nindent, nothing when none.
*/}}
{{- define "plantstore.imagePullSecrets" -}}
{{- $names := list }}
{{- range concat ((.Values.global | default dict).imagePullSecrets | default list) (.Values.imagePullSecrets | default list) }}
{{- if kindIs "string" . }}{{ $names = append $names . }}{{ else }}{{ $names = append $names .name }}{{ end }}
{{- end }}
{{- with uniq $names }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A value holding Kubernetes objects (initContainers, sidecars, extraVolumes, ...), rendered through tpl
as Bitnami's common.tplvalues.render does, so it may refer to the release ({{ .Release.Name }}); YAML at
column 0 for nindent. Call with (dict "value" ... "context" $).
*/}}
{{- define "plantstore.tplvalues" -}}
{{- if kindIs "string" .value }}{{ tpl .value .context }}{{ else }}{{ tpl (toYaml .value) .context }}{{ end }}
{{- end }}

{{/*
A Go duration ("5s", "1m30s", "500ms", "0") in milliseconds, as a decimal string. Call with the
duration string. The schema has already checked the syntax.
*/}}
{{- define "plantstore.durationMs" -}}
{{- $units := dict "ns" 0.000001 "us" 0.001 "µs" 0.001 "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" (toString .) -1 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . | float64 }}
{{- $unit := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" . "" }}
{{- $total = addf $total (mulf $num (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
API tokens, from one of three places:
- auth.existingSecret: the user's Secret; the chart writes none.
- auth.tokens: the chart renders the Secret from those lines (plantstore.tokens.rendered).
- neither: one random token, generated (plantstore.tokens.generated) by the hook Job of
  templates/secrets-job.yaml, which creates the Secret only when it is missing. Nothing random is
  rendered, so `helm template` prints the same bytes every time (GitOps), and the Secret is not part of
  the release: an upgrade, a sync, a rollback or an uninstall and reinstall keep the token.
*/}}
{{- define "plantstore.tokens.rendered" -}}
{{- if and (not .Values.auth.existingSecret) .Values.auth.tokens }}true{{ end }}
{{- end }}

{{- define "plantstore.tokens.generated" -}}
{{- if and (not .Values.auth.existingSecret) (not .Values.auth.tokens) }}true{{ end }}
{{- end }}

{{- define "plantstore.tokens.secretName" -}}
{{- .Values.auth.existingSecret | default (include "plantstore.suffixedName" (list . "-tokens")) }}
{{- end }}

{{- define "plantstore.tokens.secretKey" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.existingSecretKey }}{{ else }}tokens{{ end }}
{{- end }}

{{/* One line of the tokens file from an auth.tokens item: a string as it is, an object as its attributes. */}}
{{- define "plantstore.tokens.line" -}}
{{- if kindIs "string" . }}{{ . }}
{{- else }}
{{- if .token }}{{ .token }}{{ else }}sha256:{{ .sha256 }}{{ end }}
{{- with .name }} name={{ . }}{{ end }}
{{- with .scopes }} scopes={{ join "," . }}{{ end }}
{{- with .expires }} expires={{ . }}{{ end }}
{{- with .rate }} rate={{ . }}{{ end }}
{{- with .burst }} burst={{ . }}{{ end }}
{{- end }}
{{- end }}

{{/*
The tokens file rendered from auth.tokens, then the identity lines of auth.identities. (With the
generated token the secrets Job keeps those lines in the file it generated instead.)
*/}}
{{- /* Its first line tells `plantstore ensure-secrets` (internal/kube) that a tokens file came from
     auth.tokens, so that it revokes them once auth.tokens is removed: every chart version writes it. */}}
{{- define "plantstore.tokens.content" -}}
{{- $lines := list }}
{{- range .Values.auth.tokens }}{{ $lines = append $lines (include "plantstore.tokens.line" .) }}{{ end }}
{{- printf "# API tokens from the chart's auth.tokens value: a token or sha256:<hex>, then attributes, a line.\n%s\n" (join "\n" $lines) }}
{{- with include "plantstore.identities.lines" . | fromJsonArray }}
{{- printf "# JWT callers mapped to clients, from the chart's auth.identities value.\n%s\n" (join "\n" .) }}
{{- end }}
{{- end }}

{{/*
JWT issuers (auth.jwt): the issuers file, a ConfigMap (key issuers) mounted with the CA bundles of
auth.jwt.issuers' caConfigMaps at /etc/plantstore/jwt. The service reads it only at start: the pods
carry its checksum. For the cluster's own issuer the pods also get a projected token of the API
server's default audience and the cluster's CA (kube-root-ca.crt), the bearer and the roots of the
discovery and key set requests, at /var/run/secrets/plantstore/kubernetes; never the automounted token.
*/}}
{{- define "plantstore.jwt.enabled" -}}
{{- if or .Values.auth.jwt.kubernetes.enabled .Values.auth.jwt.issuers }}true{{ end }}
{{- end }}

{{- define "plantstore.jwt.configMapName" -}}
{{- include "plantstore.suffixedName" (list . "-jwt-issuers") }}
{{- end }}

{{- define "plantstore.jwt.dir" -}}/etc/plantstore/jwt{{- end }}

{{- define "plantstore.jwt.kubernetesDir" -}}/var/run/secrets/plantstore/kubernetes{{- end }}

{{/* The issuers file. */}}
{{- define "plantstore.jwt.issuers" -}}
{{- $jwt := .Values.auth.jwt }}
{{- $lines := list }}
{{- if $jwt.kubernetes.enabled }}
{{- $k := $jwt.kubernetes }}
{{- $kdir := include "plantstore.jwt.kubernetesDir" . }}
{{- $jwks := $k.jwksURL | default (printf "%s/openid/v1/jwks" (trimSuffix "/" $k.issuer)) }}
{{- $lines = append $lines (printf "%s audience=%s ca-file=%s/ca.crt discovery-token-file=%s/token jwks-url=%s" $k.issuer $k.audience $kdir $kdir $jwks) }}
{{- end }}
{{- range $i, $iss := $jwt.issuers }}
{{- $line := printf "%s audience=%s" $iss.url $iss.audience }}
{{- if $iss.caConfigMap }}{{ $line = printf "%s ca-file=%s/ca-%d.crt" $line (include "plantstore.jwt.dir" $) $i }}{{ end }}
{{- with $iss.jwksURL }}{{ $line = printf "%s jwks-url=%s" $line . }}{{ end }}
{{- $lines = append $lines $line }}
{{- end }}
{{- printf "# JWT issuers from the chart's auth.jwt values: the issuer URL (the tokens' iss), then attributes, a line.\n%s\n" (join "\n" $lines) }}
{{- end }}

{{/* The volumeMounts and the volumes of the API container for auth.jwt, for nindent; nothing without it. */}}
{{- define "plantstore.jwt.volumeMounts" -}}
{{- if include "plantstore.jwt.enabled" . -}}
- name: jwt
  mountPath: {{ include "plantstore.jwt.dir" . }}
  readOnly: true
{{- if .Values.auth.jwt.kubernetes.enabled }}
- name: jwt-kubernetes
  mountPath: {{ include "plantstore.jwt.kubernetesDir" . }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "plantstore.jwt.volumes" -}}
{{- if include "plantstore.jwt.enabled" . -}}
- name: jwt
  projected:
    sources:
      - configMap:
          name: {{ include "plantstore.jwt.configMapName" . }}
          items:
            - key: issuers
              path: issuers
      {{- range $i, $iss := .Values.auth.jwt.issuers }}
      {{- with $iss.caConfigMap }}
      - configMap:
          name: {{ .name }}
          items:
            - key: {{ .key | default "ca.crt" }}
              path: ca-{{ $i }}.crt
      {{- end }}
      {{- end }}
{{- if .Values.auth.jwt.kubernetes.enabled }}
# The bearer of the discovery and key set requests to the API server: no audience, so the API server's
# own (tokens of the callers' audience are refused there); rotated by the kubelet, which the service
# rereads at each request. The cluster's CA is what the API server's certificate is signed by.
- name: jwt-kubernetes
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3600
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
{{- end }}
{{- end }}
{{- end }}

{{/*
The identity lines of auth.identities, as a JSON list (fromJsonArray): one a line of the tokens file,
`issuer=<URL> subject=<sub> claim=<name>:<value> name=<client> scopes=... rate=... burst=...`.
*/}}
{{- define "plantstore.identities.lines" -}}
{{- $lines := list }}
{{- range .Values.auth.identities }}
{{- $line := printf "issuer=%s" (.issuer | default $.Values.auth.jwt.kubernetes.issuer) }}
{{- if .serviceAccount }}
{{- $line = printf "%s subject=system:serviceaccount:%s" $line (replace "/" ":" .serviceAccount) }}
{{- else if .subject }}
{{- $line = printf "%s subject=%s" $line .subject }}
{{- end }}
{{- with .claim }}{{ $line = printf "%s claim=%s" $line . }}{{ end }}
{{- $line = printf "%s name=%s" $line .name }}
{{- with .scopes }}{{ $line = printf "%s scopes=%s" $line (join "," .) }}{{ end }}
{{- with .rate }}{{ $line = printf "%s rate=%s" $line . }}{{ end }}
{{- with .burst }}{{ $line = printf "%s burst=%d" $line (int .) }}{{ end }}
{{- $lines = append $lines $line }}
{{- end }}
{{- toJson $lines }}
{{- end }}

{{/*
helm test's read-only token (tests.readToken): generated with the API token by the hook Job, its raw
value in its own Secret, its digest in the tokens file. Only with a generated tokens file; otherwise
the read checks need tests.readTokenSecret.
*/}}
{{- define "plantstore.tests.readerGenerated" -}}
{{- if and .Values.tests.readToken (include "plantstore.tokens.generated" .) (not .Values.tests.readTokenSecret) }}true{{ end }}
{{- end }}

{{- define "plantstore.tests.readerSecretName" -}}
{{- .Values.tests.readTokenSecret | default (include "plantstore.suffixedName" (list . "-test-reader")) }}
{{- end }}

{{/* Redis (the chart's own StatefulSet). */}}
{{- define "plantstore.redis.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-redis" 52) }}
{{- end }}

{{- define "plantstore.redis.labels" -}}
{{ include "plantstore.commonLabels" . }}
app.kubernetes.io/component: redis
{{- end }}

{{/*
Labels of the Redis pod template: only stable ones, never helm.sh/chart nor app.kubernetes.io/version
(plantstore's version, not Redis's). A change of the pod template restarts Redis (with
redis.updateStrategy.type=RollingUpdate) or leaves the pod on an older revision (OnDelete): a chart
version bump must do neither.
*/}}
{{- define "plantstore.redis.podLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: plantstore
app.kubernetes.io/component: redis
{{- include "plantstore.extraLabels" (dict "maps" (list .Values.commonLabels)) }}
{{- end }}

{{- define "plantstore.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end }}

{{/*
The Redis pods' ServiceAccount: their own, not the namespace's default, and without a token (Redis calls no
API). Named as the StatefulSet.
*/}}
{{- define "plantstore.redis.serviceAccountName" -}}
{{- include "plantstore.suffixedName" (list . "-redis" 52) }}
{{- end }}

{{/*
The labels of the Redis data PVCs (the StatefulSet's volume claim template), as JSON: the selector labels, the
same as every chart before, and commonLabels. Never the chart's version nor anything else that changes with the
chart: Kubernetes refuses any change of a StatefulSet's volumeClaimTemplates, so such a label would fail every
upgrade. plantstore.validate compares them with the running StatefulSet's.
*/}}
{{- define "plantstore.redis.claimLabels" -}}
{{- $labels := deepCopy (.Values.commonLabels | default dict) }}
{{- range list "helm.sh/chart" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" }}{{ $_ := unset $labels . }}{{ end }}
{{- $_ := set $labels "app.kubernetes.io/name" (include "plantstore.name" .) }}
{{- $_ = set $labels "app.kubernetes.io/instance" .Release.Name }}
{{- $_ = set $labels "app.kubernetes.io/component" "redis" }}
{{- toJson $labels }}
{{- end }}

{{/*
The StorageClass of the Redis data PVCs: redis.persistence.storageClass, else global.storageClass; "-" (render
storageClassName "", no dynamic provisioning) or empty (leave it out: the cluster's default StorageClass) as
the values say.
*/}}
{{- define "plantstore.redis.storageClass" -}}
{{- .Values.redis.persistence.storageClass | default (.Values.global | default dict).storageClass | default "" }}
{{- end }}

{{/*
The Redis StatefulSet's volume claim template, which Kubernetes never lets change: when the release's StatefulSet
exists (lookup: helm install and upgrade; `helm template` sees none) and these values would change its labels
(commonLabels) or StorageClass, the render stops with what to do, before Helm changes anything, rather than
the API server refusing the StatefulSet halfway through the upgrade.
*/}}
{{- define "plantstore.redis.checkClaimTemplate" -}}
{{- $name := include "plantstore.redis.fullname" . }}
{{- $sts := lookup "apps/v1" "StatefulSet" .Release.Namespace $name | default dict }}
{{- range dig "spec" "volumeClaimTemplates" list $sts }}
{{- if eq (dig "metadata" "name" "" .) "data" }}
{{- $liveLabels := toJson (dig "metadata" "labels" dict .) }}
{{- $wantLabels := include "plantstore.redis.claimLabels" $ }}
{{- $spec := dig "spec" dict . }}
{{- $liveClass := "" }}
{{- if hasKey $spec "storageClassName" }}{{ $liveClass = get $spec "storageClassName" | default "-" }}{{ end }}
{{- $wantClass := include "plantstore.redis.storageClass" $ }}
{{- if or (ne $liveLabels $wantLabels) (ne $liveClass $wantClass) }}
{{- include "plantstore.fail" (printf "the Redis StatefulSet %s has PVC labels %s and storageClass %q, and these values would change them to %s and %q (commonLabels; redis.persistence.storageClass, else global.storageClass; \"\" is the cluster's default, \"-\" none): Kubernetes refuses any change of a StatefulSet's volumeClaimTemplates. Either set those values back, or recreate the StatefulSet and leave its pods and PVCs in place: `kubectl delete statefulset %s -n %s --cascade=orphan`, then upgrade again (the PVCs that exist keep their labels and StorageClass; new ones get these)" $name $liveLabels $liveClass $wantLabels $wantClass $name $.Release.Namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether the chart's Redis runs as a master, replicas and Sentinels (redis.architecture sentinel). */}}
{{- define "plantstore.redis.sentinel" -}}
{{- if and .Values.redis.enabled (eq (toString (.Values.redis.architecture | default "standalone")) "sentinel") }}true{{ end }}
{{- end }}

{{/* Pods of the chart's Redis StatefulSet. */}}
{{- define "plantstore.redis.replicas" -}}
{{- if include "plantstore.redis.sentinel" . }}{{ .Values.redis.sentinel.replicas | int }}{{ else }}1{{ end }}
{{- end }}

{{/*
The DNS names of the Redis pods, space-separated, in ordinal order: <pod>.<headless Service>.<namespace>.svc,
which every pod of the namespace resolves (publishNotReadyAddresses: a pod still starting is found too).
*/}}
{{- define "plantstore.redis.hosts" -}}
{{- $name := include "plantstore.redis.fullname" . }}
{{- $hosts := list }}
{{- range $i := until (include "plantstore.redis.replicas" . | int) }}
{{- $hosts = append $hosts (printf "%s-%d.%s.%s.svc" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- join " " $hosts }}
{{- end }}

{{/* config.redis.minReplicaAcks, or when null 1 with the chart's Sentinel and 0 otherwise. */}}
{{- define "plantstore.redis.minReplicaAcks" -}}
{{- $acks := .Values.config.redis.minReplicaAcks }}
{{- if kindIs "invalid" $acks }}{{ ternary 1 0 (eq (include "plantstore.redis.sentinel" .) "true") }}{{ else }}{{ $acks | int }}{{ end }}
{{- end }}

{{/* The `helm test` pod's ServiceAccount: its own, without a token, a plain object of the release. */}}
{{- define "plantstore.tests.serviceAccountName" -}}
{{- include "plantstore.suffixedName" (list . "-test") }}
{{- end }}

{{- define "plantstore.redis.secretName" -}}
{{- .Values.redis.auth.existingSecret | default (include "plantstore.redis.fullname" .) }}
{{- end }}

{{- define "plantstore.redis.secretKey" -}}
{{- .Values.redis.auth.existingSecretKey }}
{{- end }}

{{/* Whether the hook Job generates the Redis password (the chart's Redis, no redis.auth.existingSecret). */}}
{{- define "plantstore.redis.passwordGenerated" -}}
{{- if and .Values.redis.enabled (not .Values.redis.auth.existingSecret) }}true{{ end }}
{{- end }}

{{/*
The hook Job of templates/secrets-job.yaml: rendered when the chart generates a Secret. The arguments
of `plantstore ensure-secrets` name each Secret to keep, for nindent.
*/}}
{{/*
Whether the redis.roll hook rolls the chart's Redis: Sentinel mode with redis.updateStrategy RollingUpdate.
The StatefulSet is then OnDelete, since its controller restarts the highest ordinal first, wherever the
master is, which may hand the master over twice and restart it before its replicas.
*/}}
{{- define "plantstore.redis.roll.enabled" -}}
{{- if and (include "plantstore.redis.sentinel" .) (eq (dig "updateStrategy" "type" "RollingUpdate" .Values.redis) "RollingUpdate") }}true{{ end }}
{{- end }}

{{- define "plantstore.redis.roll.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-redis-roll") }}
{{- end }}

{{- define "plantstore.redis.roll.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis-roll
{{- end }}

{{- define "plantstore.secretsJob.enabled" -}}
{{- if or (include "plantstore.tokens.generated" .) (include "plantstore.redis.passwordGenerated" .) }}true{{ end }}
{{- end }}

{{- define "plantstore.secretsJob.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-secrets") }}
{{- end }}

{{- define "plantstore.secretsJob.labels" -}}
{{ include "plantstore.commonLabels" . }}
app.kubernetes.io/component: secrets
{{- end }}

{{/* The names of the Secrets the Job keeps, a list. */}}
{{- define "plantstore.secretsJob.secrets" -}}
{{- $names := list }}
{{- if include "plantstore.tokens.generated" . }}{{ $names = append $names (include "plantstore.tokens.secretName" .) }}{{ end }}
{{- if include "plantstore.tests.readerGenerated" . }}{{ $names = append $names (include "plantstore.tests.readerSecretName" .) }}{{ end }}
{{- if include "plantstore.redis.passwordGenerated" . }}{{ $names = append $names (include "plantstore.redis.fullname" .) }}{{ end }}
{{- toJson $names }}
{{- end }}

{{/* Which store the service uses: redis, external or embedded. */}}
{{- define "plantstore.store" -}}
{{- if .Values.redis.enabled }}redis{{ else if .Values.externalRedis.addresses }}external{{ else }}embedded{{ end }}
{{- end }}

{{/* Whether the external Redis runs in Cluster mode (what the service decides from the same values). */}}
{{- define "plantstore.externalRedis.isCluster" -}}
{{- if and (not .Values.externalRedis.masterName) (or .Values.externalRedis.cluster (gt (len .Values.externalRedis.addresses) 1)) }}true{{ end }}
{{- end }}

{{/*
The Redis environment of the service (PLANTSTORE_REDIS_*), the same for the API pods and the migration
Job: EnvVar items at column 0, for nindent. With the embedded store, only an empty PLANTSTORE_REDIS_ADDR.
*/}}
{{- define "plantstore.redisEnv" -}}
{{- $store := include "plantstore.store" . }}
{{- $ext := .Values.externalRedis }}
{{- if include "plantstore.redis.sentinel" . -}}
# The chart's Sentinels, one beside each Redis server: they name the master.
- name: PLANTSTORE_REDIS_ADDR
  value: {{ regexReplaceAll "( |$)" (include "plantstore.redis.hosts" .) ":26379$1" | replace " " "," | quote }}
- name: PLANTSTORE_REDIS_MASTER_NAME
  value: {{ .Values.redis.sentinel.masterName | quote }}
- name: PLANTSTORE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "plantstore.redis.secretName" . }}
      key: {{ include "plantstore.redis.secretKey" . }}
# The Sentinels ask for the same password.
- name: PLANTSTORE_REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "plantstore.redis.secretName" . }}
      key: {{ include "plantstore.redis.secretKey" . }}
{{- else if eq $store "redis" -}}
# The chart's Redis, through its headless Service.
- name: PLANTSTORE_REDIS_ADDR
  value: {{ printf "%s:6379" (include "plantstore.redis.fullname" .) | quote }}
- name: PLANTSTORE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "plantstore.redis.secretName" . }}
      key: {{ include "plantstore.redis.secretKey" . }}
{{- else if eq $store "external" -}}
- name: PLANTSTORE_REDIS_ADDR
  value: {{ join "," $ext.addresses | quote }}
{{- with $ext.masterName }}
- name: PLANTSTORE_REDIS_MASTER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.cluster }}
- name: PLANTSTORE_REDIS_CLUSTER
  value: "true"
{{- end }}
{{- with $ext.username }}
- name: PLANTSTORE_REDIS_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.existingSecret }}
- name: PLANTSTORE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ext.existingSecret }}
      key: {{ $ext.existingSecretKey }}
{{- end }}
{{- with $ext.sentinel.username }}
- name: PLANTSTORE_REDIS_SENTINEL_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.sentinel.existingSecret }}
- name: PLANTSTORE_REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ext.sentinel.existingSecret }}
      key: {{ $ext.sentinel.existingSecretKey }}
{{- end }}
{{- if $ext.tls.enabled }}
- name: PLANTSTORE_REDIS_TLS
  value: "true"
{{- with $ext.tls.serverName }}
- name: PLANTSTORE_REDIS_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.tls.caSecret }}
- name: PLANTSTORE_REDIS_TLS_CA_FILE
  value: /etc/plantstore/redis-ca/ca.crt
{{- end }}
{{- end }}
{{- else -}}
# allowEmbeddedStore: no Redis address selects the in-memory store (not durable).
- name: PLANTSTORE_REDIS_ADDR
  value: ""
{{- end }}
{{- if ne $store "embedded" }}
- name: PLANTSTORE_REDIS_KEY_PREFIX
  value: {{ .Values.config.redis.keyPrefix | quote }}
{{- if not (include "plantstore.externalRedis.isCluster" .) }}
- name: PLANTSTORE_REDIS_DB
  value: {{ .Values.config.redis.db | int | quote }}
{{- end }}
- name: PLANTSTORE_REDIS_POOL_SIZE
  value: {{ .Values.config.redis.poolSize | int | quote }}
- name: PLANTSTORE_REDIS_BATCH
  value: {{ .Values.config.redis.batch | quote }}
- name: PLANTSTORE_REDIS_MAX_RETRIES
  value: {{ .Values.config.redis.maxRetries | int | quote }}
- name: PLANTSTORE_REDIS_DIAL_TIMEOUT
  value: {{ .Values.config.redis.dialTimeout | quote }}
- name: PLANTSTORE_REDIS_READ_TIMEOUT
  value: {{ .Values.config.redis.readTimeout | quote }}
- name: PLANTSTORE_REDIS_WRITE_TIMEOUT
  value: {{ .Values.config.redis.writeTimeout | quote }}
- name: PLANTSTORE_REDIS_MIN_REPLICA_ACKS
  value: {{ include "plantstore.redis.minReplicaAcks" . | quote }}
- name: PLANTSTORE_REDIS_REPLICA_ACK_TIMEOUT
  value: {{ .Values.config.redis.replicaAckTimeout | quote }}
{{- end }}
{{- end }}

{{/*
NetworkPolicy egress rules to DNS and to the store (the chart's Redis, or networkPolicy.egress.externalRedis),
the same for the API pods and the migration Job: NetworkPolicyEgressRule items at column 0, for nindent.
*/}}
{{- define "plantstore.networkPolicy.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.egress.dns -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- if or $dns.namespaceSelector $dns.podSelector }}
  to:
    - namespaceSelector:
        {{- toYaml ($dns.namespaceSelector | default dict) | nindent 8 }}
      {{- with $dns.podSelector }}
      podSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  {{- end }}
{{- end }}

{{- define "plantstore.networkPolicy.storeEgress" -}}
{{- $np := .Values.networkPolicy }}
{{- $store := include "plantstore.store" . -}}
{{ include "plantstore.networkPolicy.dnsEgress" . }}
{{- if eq $store "redis" }}
- to:
    - podSelector:
        matchLabels:
          {{- include "plantstore.redis.selectorLabels" . | nindent 10 }}
  ports:
    - port: 6379
      protocol: TCP
    {{- if include "plantstore.redis.sentinel" . }}
    - port: 26379
      protocol: TCP
    {{- end }}
{{- else if eq $store "external" }}
{{- $ext := $np.egress.externalRedis }}
- ports:
    {{- range $ext.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- if or $ext.cidrs $ext.to }}
  to:
    {{- range $ext.cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- with $ext.to }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The migration Job (templates/migrate-job.yaml): a post-install and post-upgrade hook running
`plantstore migrate-store --settle <settle>`, rendered when migration.enabled and the store is Redis (the
embedded store has no 1.0.0 keys).
*/}}
{{- define "plantstore.migration.enabled" -}}
{{- if and .Values.migration.enabled (ne (include "plantstore.store" .) "embedded") }}true{{ end }}
{{- end }}

{{- define "plantstore.migration.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-migrate") }}
{{- end }}

{{- define "plantstore.migration.labels" -}}
{{ include "plantstore.commonLabels" . }}
app.kubernetes.io/component: migrate
{{- end }}

{{- define "plantstore.migration.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: migrate
{{- end }}

{{/*
The Job's --settle: migration.settle, or by default terminationGracePeriodSeconds + 5s on an upgrade from
1.0.0 (the last 1.0.0 pod may write until its grace period ends), and 2s on an install or an upgrade from a
later chart: a short settle rather than one pass, so that a pass that finds Redis still starting is retried.
*/}}
{{- define "plantstore.migration.settle" -}}
{{- if .Values.migration.settle }}{{ .Values.migration.settle }}
{{- else if .Release.IsUpgrade }}
{{- /* Only 1.0.0 pods write 1.0.0 keys. The running Deployment's labels tell which chart made it: the
     1.0.0 release's chart is version 0.1.0 (and its pods run 1.0.0); an upgrade from any later chart has no
     1.0.0 pod draining and settles as an install does. Labels that cannot be read (helm template, a
     Deployment not made by this chart) count as 1.0.0. */}}
{{- $running := lookup "apps/v1" "Deployment" .Release.Namespace (include "plantstore.fullname" .) | default dict }}
{{- $labels := dig "metadata" "labels" dict $running }}
{{- $chart := get $labels "helm.sh/chart" | default "" | toString }}
{{- $version := get $labels "app.kubernetes.io/version" | default "" | toString }}
{{- if and (hasPrefix "plantstore-" $chart) (ne $chart "plantstore-0.1.0") (ne $version "1.0.0") }}2s
{{- else }}{{ add (int .Values.terminationGracePeriodSeconds) 5 }}s
{{- end }}
{{- else }}2s
{{- end }}
{{- end }}

{{/* The Job's --settle-found: once it has found a 1.0.0 key it settles at least this long, whatever the
     render could tell (helm template, a GitOps sync: no upgrade flag, no lookup). With migration.settle
     set, that value alone. */}}
{{- define "plantstore.migration.settleFound" -}}
{{- if .Values.migration.settle }}0s{{ else }}{{ add (int .Values.terminationGracePeriodSeconds) 5 }}s{{ end }}
{{- end }}

{{/* Whether the pods mount the external Redis's CA bundle (externalRedis.tls.caSecret). */}}
{{- define "plantstore.redisCA.enabled" -}}
{{- $ext := .Values.externalRedis }}
{{- if and (eq (include "plantstore.store" .) "external") $ext.tls.enabled $ext.tls.caSecret }}true{{ end }}
{{- end }}

{{/* The volumeMount and the volume of that CA bundle (PLANTSTORE_REDIS_TLS_CA_FILE), for nindent. */}}
{{- define "plantstore.redisCA.volumeMount" -}}
- name: redis-ca
  mountPath: /etc/plantstore/redis-ca
  readOnly: true
{{- end }}

{{- define "plantstore.redisCA.volume" -}}
- name: redis-ca
  secret:
    secretName: {{ .Values.externalRedis.tls.caSecret }}
    items:
      - key: {{ .Values.externalRedis.tls.caSecretKey }}
        path: ca.crt
{{- end }}

{{/*
Rejects the values with a message (call with the message). `fail` stops `helm template` and
`helm install`; under `helm lint` it only logs, so the include of a template that cannot exist,
named after the message, makes lint fail with the same message.
*/}}
{{- define "plantstore.fail" -}}
{{- fail . }}
{{- include (printf "values rejected: %s" .) dict }}
{{- end }}

{{/*
Checks the schema cannot express. Included by every template that depends on them, so any render
fails with the same clear message.
*/}}
{{- define "plantstore.validate" -}}
{{- if not (hasKey . "plantstoreValidated") }}
{{- $_ := set . "plantstoreValidated" true }}
{{- /*
`helm upgrade --reuse-values` renders this chart with the values of the release's older chart: its
defaults and the user's, none of this chart's. Every template includes this check first, so such values
fail here with what to do, not with a nil pointer wherever a section this chart added is read. httpRoute
 is the newest section; a chart that adds sections names its own here (the render tests upgrade from
every released chart's values with --reuse-values).
*/}}
{{- if not (hasKey .Values "httpRoute") }}
{{- include "plantstore.fail" (printf "these values are an older chart's, not chart %s's: `helm upgrade --reuse-values` renders a new chart with the defaults of the chart the release was installed with, which lack the settings this chart added. Upgrade with --reset-then-reuse-values instead (Helm 3.14 or later: this chart's defaults, then the values you set before, then those you give now), or give all your values again with -f and --set, without --reuse-values" .Chart.Version) }}
{{- end }}
{{- $v := .Values }}
{{- $ext := $v.externalRedis }}
{{- /* labels: the chart's own are what its selectors match on */}}
{{- range $key, $_ := $v.commonLabels }}
{{- if has $key (list "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" "app.kubernetes.io/component") }}
{{- include "plantstore.fail" (printf "commonLabels.%s: the chart sets this label itself on every object, and its selectors match on the app.kubernetes.io labels (a pod labelled otherwise falls out of its Deployment, Service and NetworkPolicy), so commonLabels cannot replace it. Remove %s from commonLabels: app.kubernetes.io/name follows nameOverride, app.kubernetes.io/instance the release name; for a label of your own use a key of your own, e.g. example.com/part-of" $key $key) }}
{{- end }}
{{- end }}
{{- /*
security contexts: rendered as given. Bitnami's charts take an `enabled` switch inside theirs
(podSecurityContext.enabled, containerSecurityContext.enabled); here it would reach the API server, which
refuses it, so it is refused now with what to write instead.
*/}}
{{- $contexts := dict "podSecurityContext" $v.podSecurityContext "securityContext" $v.securityContext "redis.podSecurityContext" $v.redis.podSecurityContext "redis.securityContext" $v.redis.securityContext "redis.metrics.containerSecurityContext" (dig "metrics" "containerSecurityContext" dict $v.redis) }}
{{- range $path, $sc := $contexts }}
{{- if and (kindIs "map" $sc) (hasKey $sc "enabled") }}
{{- include "plantstore.fail" (printf "%s.enabled (%v): this chart takes %s as given, as the Kubernetes securityContext it renders, and `enabled` is no field of one: it is another chart's switch (Bitnami's), which the API server would refuse. Remove %s.enabled. To keep the chart's restricted settings set nothing more; to change one set its field (%s.runAsUser: 1001); to leave one to the platform, as OpenShift assigns the user and group, set it to null (%s.runAsUser: null)" $path (get $sc "enabled") $path $path $path $path) }}
{{- end }}
{{- end }}
{{- /* the Gateway route */}}
{{- with $v.httpRoute }}
{{- if and .enabled (not .parentRefs) }}
{{- include "plantstore.fail" "httpRoute.enabled needs httpRoute.parentRefs: the Gateway, or one of its listeners, that the route attaches to, e.g. [{name: shared, namespace: gateway, sectionName: https}]; without one no Gateway serves it. Add one, or set httpRoute.enabled=false" }}
{{- end }}
{{- if and .enabled .timeouts.request .timeouts.backendRequest }}
{{- $attempts := add 1 (int .retry.attempts) }}
{{- $request := include "plantstore.gatewayDurationMs" .timeouts.request | int }}
{{- $backend := include "plantstore.gatewayDurationMs" .timeouts.backendRequest | int }}
{{- if lt $request (mul $backend $attempts) }}
{{- include "plantstore.fail" (printf "httpRoute.timeouts.request (%s) must be at least httpRoute.timeouts.backendRequest (%s) times the attempts (%d: 1 + httpRoute.retry.attempts), or the Gateway gives up before the last attempt has had its time" .timeouts.request .timeouts.backendRequest $attempts) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* the store */}}
{{- if and $v.redis.enabled $ext.addresses }}
{{- include "plantstore.fail" "redis.enabled and externalRedis.addresses exclude each other: set redis.enabled=false to use an external Redis, or clear externalRedis.addresses to deploy the chart's Redis" }}
{{- end }}
{{- if and $v.redis.enabled (or $ext.masterName $ext.cluster $ext.existingSecret $ext.username $ext.tls.enabled $ext.sentinel.existingSecret) }}
{{- include "plantstore.fail" "externalRedis.* is set but redis.enabled is true: set redis.enabled=false and externalRedis.addresses to use an external Redis" }}
{{- end }}
{{- if and (not $v.redis.enabled) (not $ext.addresses) }}
{{- if not $v.allowEmbeddedStore }}
{{- include "plantstore.fail" "no store: redis.enabled is false and externalRedis.addresses is empty. Set redis.enabled=true (the chart's Redis), externalRedis.addresses, or allowEmbeddedStore=true to keep plants in memory only (lost on restart, per pod)" }}
{{- end }}
{{- if or $v.autoscaling.enabled (gt (int $v.replicaCount) 1) }}
{{- include "plantstore.fail" "allowEmbeddedStore: the embedded store lives in each pod's memory, so replicaCount must be 1 and autoscaling.enabled false (replicas would disagree about which plants exist)" }}
{{- end }}
{{- end }}
{{- if and $ext.masterName $ext.cluster }}
{{- include "plantstore.fail" "externalRedis.masterName (Sentinel) and externalRedis.cluster exclude each other" }}
{{- end }}
{{- if and (or $ext.masterName $ext.cluster) (not $ext.addresses) }}
{{- include "plantstore.fail" "externalRedis.masterName and externalRedis.cluster need externalRedis.addresses" }}
{{- end }}
{{- if and (include "plantstore.externalRedis.isCluster" .) (ne (int $v.config.redis.db) 0) }}
{{- include "plantstore.fail" "config.redis.db must be 0 with a Redis Cluster (externalRedis.cluster, or several addresses without masterName)" }}
{{- end }}
{{- if and (gt (include "plantstore.redis.minReplicaAcks" . | int) 0) (not $ext.addresses) (not (include "plantstore.redis.sentinel" .)) }}
{{- include "plantstore.fail" "config.redis.minReplicaAcks needs a Redis with replicas (redis.architecture sentinel, or externalRedis.addresses with Sentinel or Cluster): the chart's standalone Redis has none, so every create would answer 503" }}
{{- end }}
{{- if include "plantstore.redis.sentinel" . }}
{{- $s := $v.redis.sentinel }}
{{- if ge (include "plantstore.redis.minReplicaAcks" . | int) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "config.redis.minReplicaAcks %d needs more than that many Redis servers (redis.sentinel.replicas is %d): one is the master" (include "plantstore.redis.minReplicaAcks" . | int) (int $s.replicas)) }}
{{- end }}
{{- if gt (int $s.quorum) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "redis.sentinel.quorum %d is more than the %d Sentinels (redis.sentinel.replicas)" (int $s.quorum) (int $s.replicas)) }}
{{- end }}
{{- if eq (mod (int $s.replicas) 2) 0 }}
{{- include "plantstore.fail" (printf "redis.sentinel.replicas %d is even: Sentinels elect a leader by majority, so an odd count (3, 5) survives as many failures as the even count above it" (int $s.replicas)) }}
{{- end }}
{{- if ge (int $s.minReplicasToWrite) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "redis.sentinel.minReplicasToWrite %d needs more than that many Redis servers (redis.sentinel.replicas is %d): one is the master" (int $s.minReplicasToWrite) (int $s.replicas)) }}
{{- end }}
{{- if and (gt (int $s.minReplicasToWrite) 0) (ge (mul (int $s.minReplicasMaxLag) 1000) (int $s.downAfterMilliseconds)) }}
{{- include "plantstore.fail" (printf "redis.sentinel.minReplicasMaxLag %ds must be below downAfterMilliseconds (%dms): a master cut off from its replicas must refuse writes before the Sentinels beyond the cut promote a replica" (int $s.minReplicasMaxLag) (int $s.downAfterMilliseconds)) }}
{{- end }}
{{- end }}
{{- if and $ext.existingSecret (not $ext.existingSecretKey) }}
{{- include "plantstore.fail" "externalRedis.existingSecretKey is required with externalRedis.existingSecret: the key of the Redis password in that Secret" }}
{{- end }}
{{- if and $ext.existingSecretKey (not $ext.existingSecret) }}
{{- include "plantstore.fail" "externalRedis.existingSecretKey is set but externalRedis.existingSecret is empty" }}
{{- end }}
{{- if and $ext.sentinel.existingSecret (not $ext.sentinel.existingSecretKey) }}
{{- include "plantstore.fail" "externalRedis.sentinel.existingSecretKey is required with externalRedis.sentinel.existingSecret: the key of the Sentinel password in that Secret" }}
{{- end }}
{{- if and (or $ext.sentinel.existingSecret $ext.sentinel.username) (not $ext.masterName) }}
{{- include "plantstore.fail" "externalRedis.sentinel.* needs externalRedis.masterName (Sentinel mode)" }}
{{- end }}
{{- if and (or $ext.tls.caSecret $ext.tls.serverName) (not $ext.tls.enabled) }}
{{- include "plantstore.fail" "externalRedis.tls.caSecret and externalRedis.tls.serverName need externalRedis.tls.enabled=true" }}
{{- end }}
{{- /* tokens */}}
{{- if and $v.auth.existingSecret $v.auth.tokens }}
{{- include "plantstore.fail" "auth.tokens and auth.existingSecret exclude each other: the tokens file comes from one of them" }}
{{- end }}
{{- if and $v.auth.existingSecret (not $v.auth.existingSecretKey) }}
{{- include "plantstore.fail" "auth.existingSecretKey is required with auth.existingSecret: the key of the tokens file in that Secret" }}
{{- end }}
{{- /* JWT: what the service would refuse at start, or in the tokens file, said here */}}
{{- $jwt := $v.auth.jwt }}
{{- $issuers := list }}
{{- if $jwt.kubernetes.enabled }}{{ $issuers = append $issuers $jwt.kubernetes.issuer }}{{ end }}
{{- range $i, $iss := $jwt.issuers }}
{{- if has $iss.url $issuers }}
{{- include "plantstore.fail" (printf "auth.jwt.issuers[%d]: the issuer %s is configured twice (auth.jwt.kubernetes.issuer or an earlier item): one line an issuer" $i $iss.url) }}
{{- end }}
{{- $issuers = append $issuers $iss.url }}
{{- end }}
{{- if include "plantstore.jwt.enabled" . }}
{{- if gt (include "plantstore.durationMs" $jwt.refreshMinInterval | float64) (include "plantstore.durationMs" $jwt.refreshInterval | float64) }}
{{- include "plantstore.fail" (printf "auth.jwt.refreshMinInterval (%s) must not exceed auth.jwt.refreshInterval (%s): the service refuses to start otherwise" $jwt.refreshMinInterval $jwt.refreshInterval) }}
{{- end }}
{{- if gt (include "plantstore.durationMs" $jwt.leeway | float64) 300000.0 }}
{{- include "plantstore.fail" (printf "auth.jwt.leeway (%s) must be at most 5m: the service refuses to start otherwise" $jwt.leeway) }}
{{- end }}
{{- range list "refreshInterval" "refreshMinInterval" "timeout" }}
{{- if eq (include "plantstore.durationMs" (get $jwt .) | float64) 0.0 }}
{{- include "plantstore.fail" (printf "auth.jwt.%s must be positive: the service refuses to start otherwise" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $v.auth.existingSecret $v.auth.identities }}
{{- include "plantstore.fail" "auth.identities needs a tokens Secret the chart manages, but auth.existingSecret is set: write the identity lines into that Secret's tokens file yourself (issuer=<URL> subject=<sub> name=<client> ..., docs/operations.md \"JWT callers\") and leave auth.identities empty" }}
{{- end }}
{{- range $i, $id := $v.auth.identities }}
{{- $at := printf "auth.identities[%d]" $i }}
{{- if not $id.name }}
{{- include "plantstore.fail" (printf "%s: name is required: the client the identity is mapped to (logs, metrics, rate limits, scopes)" $at) }}
{{- end }}
{{- $at = printf "%s (name %s)" $at $id.name }}
{{- if and $id.serviceAccount $id.subject }}
{{- include "plantstore.fail" (printf "%s: serviceAccount and subject exclude each other: serviceAccount <namespace>/<name> is the subject system:serviceaccount:<namespace>:<name>" $at) }}
{{- end }}
{{- if not (or $id.serviceAccount $id.subject $id.claim) }}
{{- include "plantstore.fail" (printf "%s: needs serviceAccount (<namespace>/<name>) or subject, or a claim: it would otherwise name no one" $at) }}
{{- end }}
{{- if and $id.serviceAccount (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$" $id.serviceAccount)) }}
{{- include "plantstore.fail" (printf "%s: serviceAccount %q must be <namespace>/<name>" $at $id.serviceAccount) }}
{{- end }}
{{- if and $id.burst (not $id.rate) }}
{{- include "plantstore.fail" (printf "%s: burst needs rate: the service would refuse the whole tokens file" $at) }}
{{- end }}
{{- $issuer := $id.issuer | default $jwt.kubernetes.issuer }}
{{- if not (has $issuer $issuers) }}
{{- include "plantstore.fail" (printf "%s: its issuer %s is not configured, so it would match no token: set auth.jwt.kubernetes.enabled=true for the cluster's issuer, or add it to auth.jwt.issuers" $at $issuer) }}
{{- end }}
{{- end }}
{{- /* shutdown: the grace period must cover the delay and the drain */}}
{{- $delay := include "plantstore.durationMs" $v.config.shutdownDelay | float64 }}
{{- $timeout := include "plantstore.durationMs" $v.config.shutdownTimeout | float64 }}
{{- $grace := mulf (int $v.terminationGracePeriodSeconds) 1000.0 }}
{{- if le $grace (addf $delay $timeout) }}
{{- include "plantstore.fail" (printf "terminationGracePeriodSeconds (%ds) must be greater than config.shutdownDelay (%s) + config.shutdownTimeout (%s): otherwise Kubernetes kills the pod before in-flight requests finish" (int $v.terminationGracePeriodSeconds) $v.config.shutdownDelay $v.config.shutdownTimeout) }}
{{- end }}
{{- /* the migration Job: its settle time must fit in its deadline */}}
{{- if include "plantstore.migration.enabled" . }}
{{- $settle := include "plantstore.migration.settle" . }}
{{- if lt (include "plantstore.durationMs" $settle | float64) (include "plantstore.durationMs" (include "plantstore.migration.settleFound" .) | float64) }}
{{- $settle = include "plantstore.migration.settleFound" . }}
{{- end }}
{{- if ge (include "plantstore.durationMs" $settle | float64) (mulf (int $v.migration.activeDeadlineSeconds) 1000.0) }}
{{- include "plantstore.fail" (printf "migration.activeDeadlineSeconds (%ds) must exceed the migration's settle time (%s, migration.settle or terminationGracePeriodSeconds + 5s): otherwise the Job is killed before it can succeed" (int $v.migration.activeDeadlineSeconds) $settle) }}
{{- end }}
{{- end }}
{{- /* the Redis PVCs: their claim template cannot change */}}
{{- if $v.redis.enabled }}
{{- include "plantstore.redis.checkClaimTemplate" . }}
{{- end }}
{{- /* scaling */}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- include "plantstore.fail" "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
OTEL_RESOURCE_ATTRIBUTES: the pod, namespace and node from the downward API (the $(VAR) references
are expanded by the kubelet from the env vars defined before it), the version, and
otel.resourceAttributes.
*/}}
{{- define "plantstore.otelResourceAttributes" -}}
{{- $attrs := list "k8s.pod.name=$(POD_NAME)" "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.node.name=$(NODE_NAME)" (printf "service.version=%s" (.Values.image.tag | default .Chart.AppVersion)) }}
{{- range $k, $v := .Values.otel.resourceAttributes }}
{{- $attrs = append $attrs (printf "%s=%s" $k (toString $v)) }}
{{- end }}
{{- join "," $attrs }}
{{- end }}

{{/*
A Gateway API duration (1h, 5s, 500ms, 1m30s) in milliseconds.
*/}}
{{- define "plantstore.gatewayDurationMs" -}}
{{- $ms := 0 -}}
{{- $units := dict "h" 3600000 "m" 60000 "s" 1000 "ms" 1 -}}
{{- range regexFindAll "[0-9]+(ms|h|m|s)" . -1 -}}
{{- $ms = add $ms (mul (regexReplaceAll "[a-z]+$" . "" | int) (get $units (regexReplaceAll "^[0-9]+" . ""))) -}}
{{- end -}}
{{- $ms -}}
{{- end }}

{{/*
maxmemory of the chart's Redis in bytes: redis.maxmemory when set, else three quarters of the
container's memory limit (values.yaml says why), else 0 (no limit). The limit is a Kubernetes
quantity: a number, with or without a binary (Ki..Ti) or decimal (k..T) suffix.
*/}}
{{- define "plantstore.redis.maxmemory" -}}
{{- $set := toString (.Values.redis.maxmemory | default "") -}}
{{- $limit := toString (dig "limits" "memory" "" (.Values.redis.resources | default dict)) -}}
{{- if ne $set "" -}}
{{ $set }}
{{- else if eq $limit "" -}}
0
{{- else -}}
{{- $quantity := "^([0-9]+(\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$" -}}
{{- if not (regexMatch $quantity $limit) -}}
{{- fail (printf "redis.resources.limits.memory %q: cannot derive redis.maxmemory from it (a number with an optional Ki, Mi, Gi, Ti, k, M, G or T suffix); set redis.maxmemory" $limit) -}}
{{- end -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $bytes := mulf (regexReplaceAll $quantity $limit "${1}" | float64) (get $units (regexReplaceAll $quantity $limit "${3}")) -}}
{{- mulf $bytes 0.75 | floor | int64 -}}
{{- end -}}
{{- end }}

{{/*
redis.conf of the chart's Redis. Durability: the append-only file (AOF) logs every write and is
replayed at start; with appendfsync always (the default) Redis writes and fsyncs it before it answers,
so no acknowledged plant is lost to a crash of Redis or of the node. everysec fsyncs once a second and,
while a slow fsync runs, postpones the write past the answer: up to about two seconds of acknowledged
plants can then be lost. The password is not here: the container writes it to /run/redis/auth.conf (memory-backed
emptyDir) from the Secret at start, so it never appears in a ConfigMap or on a command line.
*/}}
{{- define "plantstore.redis.conf" -}}
bind * -::*
port 6379
protected-mode yes
dir /data
appendonly yes
appendfilename "appendonly.aof"
appenddirname "appendonlydir"
appendfsync {{ .Values.redis.appendfsync }}
aof-use-rdb-preamble yes
maxmemory {{ include "plantstore.redis.maxmemory" . }}
# Plants are data, not a cache: refuse writes rather than evict.
maxmemory-policy noeviction
include /run/redis/auth.conf
{{- if include "plantstore.redis.sentinel" . }}
# Every server may become master: the Sentinels pick among equals.
replica-priority 100
# A replica that must copy the whole dataset (the old master of a handover, a restarted server) gets
# it at once. Redis's default waits 5 seconds for more replicas to share the transfer, and the
# Sentinel leading a failover meanwhile holds back its announcement of the new master until that
# replica has its copy: clients listening to it kept writing to the old master for those 5 seconds.
repl-diskless-sync-delay 0
{{- with .Values.redis.sentinel }}
{{- if .minReplicasToWrite }}
# A master that fewer replicas have heard from within the lag refuses writes from any client: cut off
# from its replicas (a partition), it stops taking writes that the failover beyond the cut would drop.
min-replicas-to-write {{ .minReplicasToWrite }}
min-replicas-max-lag {{ .minReplicasMaxLag }}
{{- end }}
{{- end }}
# replicaof (unless this pod starts as the master) and replica-announce-ip, written at start.
include /run/redis/replication.conf
{{- end }}
{{- end }}

{{/*
find-master.sh HOST: the host of the current master as another pod's Sentinel names it. Where no Sentinel
answers, a server that says it is master is the master: the first pod of a standalone Redis upgraded to
this set, still running its old template without a Sentinel, which holds the plants. Only when no other
server exists (their names do not resolve: a new set, whose pods start one after the other) is it the
first pod's. A server that exists but neither answers (still starting, or not reachable yet) is asked
again for 45 seconds (within the liveness probe's patience); then the script fails, and the container
with it, rather than start a second master beside the one the Sentinels follow.

When the Sentinels still name this pod, it was the master and has been down: it starts as the master
again only if no failover can begin. Once a Sentinel has gone half its down-after without an answer, or
already reports the master down, a quorum of them will promote a replica: a master started meanwhile
would acknowledge writes that the promotion then drops (the replica promoted stopped copying it). So the
script waits for the failover and names the new master. A Sentinel that cannot reach its quorum
(CKQUORUM) cannot fail over and does not hold the start back.
*/}}
{{- define "plantstore.redis.findMaster" -}}
{{- $s := .Values.redis.sentinel -}}
#!/bin/sh
set -u
# The password as the Secret holds it now (its volume follows a rotation; the environment keeps the
# value the container started with).
[ -r /etc/redis-auth/password ] && { REDISCLI_AUTH=$(cat /etc/redis-auth/password); export REDISCLI_AUTH; }
me=$1
end=$(($(date +%s) + 45))
field() { sed -n "/^$1\$/{n;p;}"; }
while :; do
  unanswered=""
  naming_me=""
  failing_over=""
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    answer=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL get-master-addr-by-name {{ $s.masterName }} 2>&1 | head -n 1)
    case $answer in
      *"Name or service not known"* | *"Name does not resolve"* | *"No address associated"*) ;;
      "" | *" "* | ERR* | NOAUTH* | WRONGPASS*) unanswered="$unanswered $host" ;;
      "$me") naming_me="$naming_me $host" ;;
      *) echo "$answer"; exit 0 ;;
    esac
  done
  if [ -n "$naming_me" ]; then
    for host in $naming_me; do
      timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL ckquorum {{ $s.masterName }} 2>&1 | grep -q '^OK' || continue
      state=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL master {{ $s.masterName }} 2>/dev/null)
      flags=$(printf '%s\n' "$state" | field flags)
      since=$(printf '%s\n' "$state" | field last-ok-ping-reply)
      case ",$flags," in
        *,s_down,* | *,o_down,* | *,failover_in_progress,*) failing_over="$failing_over $host($flags)" ;;
        *) [ "${since:-{{ $s.downAfterMilliseconds | int }}}" -lt {{ div ($s.downAfterMilliseconds | int) 2 }} ] || failing_over="$failing_over $host(no answer for ${since:-?}ms)" ;;
      esac
    done
    [ -z "$failing_over" ] && { echo "$me"; exit 0; }
    echo "find-master: the Sentinels still name $me but will fail over:$failing_over; waiting for the new master" >&2
  elif [ -z "$unanswered" ]; then
    echo {{ first (splitList " " (include "plantstore.redis.hosts" .)) }}
    exit 0
  else
    for host in $unanswered; do
      role=$(timeout 3 redis-cli -h "$host" -p 6379 --raw info replication 2>/dev/null | tr -d '\r' | sed -n 's/^role://p')
      [ "$role" = master ] && { echo "$host"; exit 0; }
    done
  fi
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 1
done
echo "find-master: no master named for 45s (Sentinels failing over:${failing_over:- none}; unanswered:${unanswered:- none}): not starting" >&2
exit 1
{{- end }}

{{/*
switchover.sh HOST, the preStop of a server: a master about to stop (a drain, a rollout, a scale-down)
hands over first. It pauses writes (none is acknowledged from then on, so the replica promoted holds
every acknowledged plant), asks another pod's Sentinel to fail over (this pod's is stopping too), again
while the Sentinels are still completing an earlier failover, and ends, writes still paused, once every
Sentinel has the promoted replica on record as the master, at most 20 seconds in all, closing its clients'
connections so that they ask the Sentinels again; clients meanwhile wait or get 503s for a second or two
instead of the down-after window. A replica stops as it is.
*/}}
{{- define "plantstore.redis.switchover" -}}
#!/bin/sh
set -u
# The password as the Secret holds it now (its volume follows a rotation; the environment keeps the
# value the container started with).
[ -r /etc/redis-auth/password ] && { REDISCLI_AUTH=$(cat /etc/redis-auth/password); export REDISCLI_AUTH; }
me=$1
role() { redis-cli -h 127.0.0.1 --raw info replication | tr -d '\r' | sed -n 's/^role://p'; }
[ "$(role)" = master ] || exit 0
start=$(date +%s)
end=$((start + 20))
redis-cli -h 127.0.0.1 CLIENT PAUSE 20000 WRITE >/dev/null
# A Sentinel refuses while an earlier failover is still being completed
# (INPROG): ask again until one accepts.
asked=""
while [ -z "$asked" ] && [ "$(date +%s)" -lt "$end" ]; do
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    [ "$(timeout 3 redis-cli -h "$host" -p 26379 SENTINEL failover {{ .Values.redis.sentinel.masterName }} 2>&1)" = OK ] && { asked=$host; break; }
  done
  [ -n "$asked" ] || sleep 1
done
# Done when every Sentinel that answers has another master on record (the
# one asked switches at the failover's end, the others from its hellos):
# clients asking any of them find the new master. The writes stay paused
# until the pod stops, so none is taken by a master about to stop; the
# Sentinels convert it only after seeing it report the wrong role for a
# while, past the pause, and a REPLICAOF here would start a full sync whose
# first AOF rewrite makes Redis refuse the SIGTERM that follows.
new=""
while [ -n "$asked" ] && [ -z "$new" ] && [ "$(date +%s)" -lt "$end" ]; do
  agreed="" stale=""
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    rec=$(timeout 2 redis-cli -h "$host" -p 26379 --raw SENTINEL master {{ .Values.redis.sentinel.masterName }} 2>/dev/null | tr -d '\r' |
      awk 'NR % 2 == 1 {k = $0; next} k == "ip" {ip = $0} END {print ip}')
    [ -n "$rec" ] || continue
    if [ "$rec" = "$me" ]; then stale=$host; else agreed=$rec; fi
  done
  [ -n "$agreed" ] && [ -z "$stale" ] && new=$agreed
  [ -n "$new" ] || sleep 0.2
done
# Its clients (the API pods' pools) would wait on the paused writes until the
# pod stops: closed now, they ask the Sentinels, which all name the new one.
if [ -n "$new" ]; then
  redis-cli -h 127.0.0.1 CLIENT KILL TYPE normal >/dev/null
else
  redis-cli -h 127.0.0.1 CLIENT UNPAUSE >/dev/null
fi
echo "switchover: $me hands over to ${new:-none (writes unpaused)} after $(($(date +%s) - start))s (failover asked of ${asked:-no Sentinel})"
{{- end }}
