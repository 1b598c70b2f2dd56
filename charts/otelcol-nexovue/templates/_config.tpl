{{/* The agent's collector config: files/agent.yaml (files/agent-to-gateway.yaml
with the gateway tier), copies of distributions/otelcol-nexovue/, with
 - k8s_attributes after memory_limiter and service_name's kubernetes naming on;
 - the values: samples per second, off-CPU, debuginfod, the queue's bound,
   the nexovue exporter's endpoint, limit and routing, the view (the queue's
   bound and the endpoint stay overridable by the environment, as in the
   shipped configs: the values are the defaults of their ${env:...});
 - agent.config merged over it. */}}
{{- define "otelcol-nexovue.agentConfig" -}}
{{- $v := .Values -}}
{{- $cfg := .Files.Get (ternary "files/agent-to-gateway.yaml" "files/agent.yaml" $v.gateway.enabled) | fromYaml -}}
{{- $procs := $cfg.processors -}}
{{- $_ := set $procs "k8s_attributes" (.Files.Get "files/k8s-attributes.yaml" | fromYaml) -}}
{{- $_ := set $procs.service_name "kubernetes" (dict "enabled" true "use_labels" true) -}}
{{- $profiles := $cfg.service.pipelines.profiles -}}
{{- $withK8s := list -}}
{{- range $profiles.processors -}}
{{- $withK8s = append $withK8s . -}}
{{- if eq . "memory_limiter" -}}{{- $withK8s = append $withK8s "k8s_attributes" -}}{{- end -}}
{{- end -}}
{{- $_ := set $profiles "processors" $withK8s -}}
{{- $recv := $cfg.receivers.profiling -}}
{{- $_ := set $recv "samples_per_second" $v.agent.samplesPerSecond -}}
{{- if $v.agent.offCPU.enabled -}}
{{- $_ := set $recv "off_cpu_threshold" $v.agent.offCPU.threshold -}}
{{- end -}}
{{- with $v.agent.debuginfodURLs -}}
{{- $_ := set $procs.symbolize "debuginfod" (dict "urls" .) -}}
{{- end -}}
{{- $_ := set $cfg.extensions.queue_storage "max_size_mib" (printf "${env:NEXOVUE_QUEUE_MAX_MIB:-%d}" ($v.agent.queue.maxSizeMiB | int)) -}}
{{- if not $v.gateway.enabled -}}
{{- include "otelcol-nexovue.applyNexovueExporter" (dict "ctx" . "cfg" $cfg) -}}
{{- end -}}
{{- if $v.agent.view.enabled -}}
{{- $view := dict "endpoint" $v.agent.view.endpoint -}}
{{- if $v.agent.view.bearerToken.existingSecret -}}
{{- $_ := set $cfg.extensions "bearertokenauth/view" (dict "token" "${env:NEXOVUE_VIEW_TOKEN}") -}}
{{- $_ := set $cfg.service "extensions" (append $cfg.service.extensions "bearertokenauth/view") -}}
{{- $_ := set $view "auth" (dict "authenticator" "bearertokenauth/view") -}}
{{- else if not (hasPrefix "127.0.0.1:" $v.agent.view.endpoint) -}}
{{- fail (printf "agent.view.endpoint %q is not on 127.0.0.1: set agent.view.bearerToken.existingSecret too (the view serves every process's profiles)" $v.agent.view.endpoint) -}}
{{- end -}}
{{- $_ := set $cfg.exporters "profileview" $view -}}
{{- $_ := set $profiles "exporters" (append $profiles.exporters "profileview") -}}
{{- end -}}
{{- $cfg = mergeOverwrite $cfg (deepCopy $v.agent.config) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The gateway's collector config: files/gateway.yaml with the nexovue
exporter's settings from the values and gateway.config merged over it. */}}
{{- define "otelcol-nexovue.gatewayConfig" -}}
{{- if .Values.nexovue.routing.rules -}}
{{- fail "nexovue.routing.rules cannot be used with gateway.enabled: routing gives each key a sending queue of its own, and the gateway has none (it acknowledges only what nexovue accepted); route on the agents (gateway.enabled=false), or install one gateway release per key" -}}
{{- end -}}
{{- $cfg := .Files.Get "files/gateway.yaml" | fromYaml -}}
{{- include "otelcol-nexovue.applyNexovueExporter" (dict "ctx" . "cfg" $cfg) -}}
{{- $cfg = mergeOverwrite $cfg (deepCopy .Values.gateway.config) -}}
{{- toYaml $cfg -}}
{{- end -}}
