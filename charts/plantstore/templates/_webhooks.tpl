{{/*
"true" when the pods deliver webhooks: subscribers listed in the values or an existing Secret of them.
*/}}
{{- define "plantstore.webhooks.enabled" -}}
{{- if or .Values.webhooks.subscribers .Values.webhooks.existingSecret }}true{{ end }}
{{- end }}
