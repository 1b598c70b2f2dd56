{{/* Mutual TLS between the agents and the gateway tier (gateway.enabled
and tls.enabled). Each side reads its certificate, key and the CA of the
other side from one Secret (tls.crt, tls.key, ca.crt: cert-manager's and
kubernetes.io/tls names) mounted at tlsDir, where the shipped configs read
them by default. */}}

{{- define "otelcol-nexovue.tlsDir" -}}/etc/otelcol-nexovue/tls{{- end -}}

{{/* "true" when the agents and the gateway talk mutual TLS. */}}
{{- define "otelcol-nexovue.tlsOn" -}}
{{- if and .Values.gateway.enabled .Values.tls.enabled -}}true{{- end -}}
{{- end -}}

{{/* Where the certificates come from: certManager, existing (the user's
Secrets) or generated (by the chart, kept across upgrades). */}}
{{- define "otelcol-nexovue.tlsMode" -}}
{{- $e := .Values.tls.existingSecrets -}}
{{- if .Values.tls.certManager.enabled -}}
certManager
{{- else if or $e.gateway $e.agent -}}
{{- if not (and $e.gateway $e.agent) -}}
{{- fail "tls.existingSecrets: set both gateway and agent (each a Secret with tls.crt, tls.key and ca.crt), or neither (the chart then generates them)" -}}
{{- end -}}
existing
{{- else -}}
generated
{{- end -}}
{{- end -}}

{{- define "otelcol-nexovue.gatewayTLSSecret" -}}
{{- if eq (include "otelcol-nexovue.tlsMode" .) "existing" -}}
{{ .Values.tls.existingSecrets.gateway }}
{{- else -}}
{{ include "otelcol-nexovue.fullname" . }}-gateway-tls
{{- end -}}
{{- end -}}

{{- define "otelcol-nexovue.agentTLSSecret" -}}
{{- if eq (include "otelcol-nexovue.tlsMode" .) "existing" -}}
{{ .Values.tls.existingSecrets.agent }}
{{- else -}}
{{ include "otelcol-nexovue.fullname" . }}-agent-tls
{{- end -}}
{{- end -}}

{{/* The Secret holding the chart's CA (its key signs the leaf
certificates; it is mounted in no pod). */}}
{{- define "otelcol-nexovue.caTLSSecret" -}}{{ include "otelcol-nexovue.fullname" . }}-tls-ca{{- end -}}

{{/* The gateway certificate's DNS names: both Services' names, short and
qualified (the agents dial the headless one's <svc>.<ns>.svc). */}}
{{- define "otelcol-nexovue.gatewayDNSNames" -}}
{{- $names := list -}}
{{- range list (include "otelcol-nexovue.gatewayHeadlessName" .) (include "otelcol-nexovue.gatewayName" .) -}}
{{- $names = concat $names (list . (printf "%s.%s" . $.Release.Namespace) (printf "%s.%s.svc" . $.Release.Namespace) (printf "%s.%s.svc.%s" . $.Release.Namespace $.Values.tls.clusterDomain)) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* (dict "ctx" $ "secret" name): the pod's volume of its TLS Secret. */}}
{{- define "otelcol-nexovue.tlsVolume" -}}
- name: tls
  secret:
    secretName: {{ .secret }}
    defaultMode: 0440
{{- end -}}

{{/* The container's mount of it, read-only. No checksum annotation covers
it: the collector re-reads the files (configtls reload_interval) and the
kubelet updates them in place, so a renewal restarts no pod. */}}
{{- define "otelcol-nexovue.tlsMount" -}}
- name: tls
  mountPath: {{ include "otelcol-nexovue.tlsDir" . }}
  readOnly: true
{{- end -}}

{{/* The environment of an agent or gateway container with TLS turned off:
plaintext, no client authentication (the collector warns at start). */}}
{{- define "otelcol-nexovue.tlsOffEnv" -}}
{{- if and .Values.gateway.enabled (not .Values.tls.enabled) }}
# tls.enabled is false: plaintext and no client authentication between
# the agents and the gateway (not recommended).
- name: NEXOVUE_GATEWAY_INSECURE
  value: "true"
{{- end }}
{{- end -}}
