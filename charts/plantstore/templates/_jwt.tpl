{{/* auth.jwt and auth.identities: the issuers file, its volumes, the identity lines of the tokens file. */}}

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
