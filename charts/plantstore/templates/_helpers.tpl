{{/*
Names, labels and the small pieces the templates share. Every helper takes the root context unless it
says otherwise. The rest is beside it: _redis.tpl (the chart's Redis: redis.conf, its scripts, its
claim template), _store.tpl (how the service reaches its store), _jwt.tpl (auth.jwt, auth.identities),
_validate.tpl (the checks the schema cannot express), _webhooks.tpl.
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

{{/* Selector labels of a component's pods (immutable: never add to them). Call with (list $ component). */}}
{{- define "plantstore.componentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "plantstore.name" (index . 0) }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Selector labels of the API pods. */}}
{{- define "plantstore.selectorLabels" }}{{ include "plantstore.componentSelectorLabels" (list . "api") }}{{ end }}

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

{{- define "plantstore.admin.selectorLabels" }}{{ include "plantstore.componentSelectorLabels" (list . "admin") }}{{ end }}

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

{{/* The standalone server's ClusterIP Service, the address its clients connect to. */}}
{{- define "plantstore.redis.masterName" -}}
{{- include "plantstore.suffixedName" (list . "-redis-master") }}
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

{{- define "plantstore.redis.selectorLabels" }}{{ include "plantstore.componentSelectorLabels" (list . "redis") }}{{ end }}

{{/*
The Redis pods' ServiceAccount: their own, not the namespace's default, and without a token (Redis calls no
API). Named as the StatefulSet.
*/}}
{{- define "plantstore.redis.serviceAccountName" -}}
{{- include "plantstore.suffixedName" (list . "-redis" 52) }}
{{- end }}

{{/* The `helm test` pod's ServiceAccount: its own, without a token, a plain object of the release. */}}
{{- define "plantstore.tests.serviceAccountName" -}}
{{- include "plantstore.suffixedName" (list . "-test") }}
{{- end }}

{{- define "plantstore.redis.roll.fullname" -}}
{{- include "plantstore.suffixedName" (list . "-redis-roll") }}
{{- end }}

{{- define "plantstore.redis.roll.selectorLabels" }}{{ include "plantstore.componentSelectorLabels" (list . "redis-roll") }}{{ end }}

{{/*
The hook Job of templates/secrets-job.yaml: rendered when the chart generates a Secret. The arguments
of `plantstore ensure-secrets` name each Secret to keep, for nindent.
*/}}
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

{{- define "plantstore.migration.selectorLabels" }}{{ include "plantstore.componentSelectorLabels" (list . "migrate") }}{{ end }}

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
