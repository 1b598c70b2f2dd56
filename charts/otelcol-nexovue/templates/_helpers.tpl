{{/* The chart's name, or nameOverride. */}}
{{- define "otelcol-nexovue.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name prefix: fullnameOverride, else the release's name
(with the chart's name appended unless it holds it already). 54 characters
at most: "-gateway-headless" is appended to it. */}}
{{- define "otelcol-nexovue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 46 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "otelcol-nexovue.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 46 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 46 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "otelcol-nexovue.agentName" -}}{{ include "otelcol-nexovue.fullname" . }}-agent{{- end -}}
{{- define "otelcol-nexovue.gatewayName" -}}{{ include "otelcol-nexovue.fullname" . }}-gateway{{- end -}}
{{- define "otelcol-nexovue.gatewayHeadlessName" -}}{{ include "otelcol-nexovue.fullname" . }}-gateway-headless{{- end -}}

{{/* The labels every object carries; the component's are added by
"otelcol-nexovue.componentLabels". */}}
{{- define "otelcol-nexovue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "otelcol-nexovue.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: otelcol-nexovue
{{- end -}}

{{/* (dict "ctx" $ "component" "agent"): a component's selector labels. */}}
{{- define "otelcol-nexovue.selectorLabels" -}}
app.kubernetes.io/name: {{ include "otelcol-nexovue.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "otelcol-nexovue.componentLabels" -}}
{{ include "otelcol-nexovue.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "otelcol-nexovue.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* The Secret holding the ingest key: the chart's when nexovue.key is set,
else nexovue.existingSecret. */}}
{{- define "otelcol-nexovue.keySecretName" -}}
{{- if .Values.nexovue.key -}}
{{ include "otelcol-nexovue.fullname" . }}-ingest-key
{{- else -}}
{{ required "nexovue.existingSecret (or nexovue.key) is required: the Secret holding the ingest key" .Values.nexovue.existingSecret }}
{{- end -}}
{{- end -}}

{{- define "otelcol-nexovue.keySecretKey" -}}
{{- if .Values.nexovue.key -}}key{{- else -}}{{ .Values.nexovue.existingSecretKey }}{{- end -}}
{{- end -}}

{{/* Where the team keys of the routing rules are mounted. */}}
{{- define "otelcol-nexovue.teamKeysDir" -}}/etc/nexovue/keys{{- end -}}

{{/* The nexovue exporter's settings from the values: endpoint, the key's
limit, routing rules reading each team's key from its mounted file. */}}
{{- define "otelcol-nexovue.applyNexovueExporter" -}}
{{- $exp := .cfg.exporters.nexovue -}}
{{- $_ := set $exp "endpoint" (printf "${env:NEXOVUE_ENDPOINT:-%s}" .ctx.Values.nexovue.endpoint) -}}
{{- $_ := set $exp "rate_limit" (dict "samples_per_second" .ctx.Values.nexovue.samplesPerSecond) -}}
{{- with .ctx.Values.nexovue.routing.rules -}}
{{- $rules := list -}}
{{- range . -}}
{{- $r := dict "name" .name "attribute" (default "k8s.namespace.name" .attribute) "key_file" (printf "%s/%s" (include "otelcol-nexovue.teamKeysDir" $.ctx) .name) -}}
{{- if .values -}}{{- $_ := set $r "values" .values -}}{{- end -}}
{{- if .pattern -}}{{- $_ := set $r "pattern" .pattern -}}{{- end -}}
{{- $rules = append $rules $r -}}
{{- end -}}
{{- $_ := set $exp "routing" (dict "rules" $rules) -}}
{{- end -}}
{{- end -}}

{{/* The projected volume of the team keys (one file per rule, named after
it), or nothing without rules. */}}
{{- define "otelcol-nexovue.teamKeysVolume" -}}
{{- with .Values.nexovue.routing.rules }}
- name: team-keys
  projected:
    defaultMode: 0440
    sources:
      {{- range . }}
      - secret:
          name: {{ .existingSecret }}
          items:
            - key: {{ default "key" .existingSecretKey }}
              path: {{ .name }}
      {{- end }}
{{- end }}
{{- end -}}

{{- define "otelcol-nexovue.teamKeysMount" -}}
{{- if .Values.nexovue.routing.rules }}
- name: team-keys
  mountPath: {{ include "otelcol-nexovue.teamKeysDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* (dict "ctx" $ "names" (list ...)): a digest of the Secrets a pod reads,
so that a change of one rolls the pods (checksum/secrets). A Secret the
chart creates counts by a digest of its content; an existing one by its
resourceVersion, looked up at install or upgrade (helm template has no
cluster: it then counts as "unknown"). No key is ever written here. */}}
{{- define "otelcol-nexovue.secretsChecksum" -}}
{{- $parts := list -}}
{{- range .names -}}
{{- if and $.ctx.Values.nexovue.key (eq . (printf "%s-ingest-key" (include "otelcol-nexovue.fullname" $.ctx))) -}}
{{- $parts = append $parts (printf "%s=%s" . (sha256sum $.ctx.Values.nexovue.key)) -}}
{{- else -}}
{{- $s := lookup "v1" "Secret" $.ctx.Release.Namespace . -}}
{{- $parts = append $parts (printf "%s=%s" . (dig "metadata" "resourceVersion" "unknown" $s)) -}}
{{- end -}}
{{- end -}}
{{- $parts | join "\n" | sha256sum -}}
{{- end -}}

{{/* The names of the ingest and team key Secrets. */}}
{{- define "otelcol-nexovue.keySecretNames" -}}
{{- $names := list (include "otelcol-nexovue.keySecretName" .) -}}
{{- range .Values.nexovue.routing.rules -}}{{- $names = append $names .existingSecret -}}{{- end -}}
{{- $names | uniq | join "," -}}
{{- end -}}

{{/* The collector's arguments: its config and the profiles feature gate. */}}
{{- define "otelcol-nexovue.collectorArgs" -}}
- --config=/etc/otelcol/config.yaml
- --feature-gates=service.profilesSupport
{{- end -}}
