{{/* The NetworkPolicies' pieces (templates/networkpolicy.yaml). */}}

{{/* A URL's port: the one it names, else its scheme's (https 443, http 80). */}}
{{- define "otelcol-nexovue.urlPort" -}}
{{- $u := urlParse . -}}
{{- if and (contains ":" $u.host) (not (hasSuffix "]" $u.host)) -}}
{{- $u.host | splitList ":" | last -}}
{{- else -}}
{{- ternary "80" "443" (eq $u.scheme "http") -}}
{{- end -}}
{{- end -}}

{{/* A list of CIDRs as an egress rule's "to" (nothing for none: any). */}}
{{- define "otelcol-nexovue.ipBlocks" -}}
{{- with . -}}
to:
  {{- range . }}
  - ipBlock:
      cidr: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Egress to nexovue, on nexovue.endpoint's port. */}}
{{- define "otelcol-nexovue.nexovueEgress" -}}
- ports:
    - port: {{ include "otelcol-nexovue.urlPort" .Values.nexovue.endpoint }}
      protocol: TCP
  {{- include "otelcol-nexovue.ipBlocks" .Values.networkPolicy.nexovueCIDRs | nindent 2 }}
{{- end -}}

{{/* Egress to DNS, UDP and TCP, wherever the pods' resolver is (a
cluster DNS Service, NodeLocal DNSCache's link-local address). */}}
{{- define "otelcol-nexovue.dnsEgress" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end -}}

{{/* The API server as the agents' egress sees it (after the kubernetes
Service's ClusterIP is translated): YAML with cidrs, ports and source (what
they come from). networkPolicy.apiServer.cidrs when set; else the
addresses and port of the EndpointSlice default/kubernetes (or of the
Endpoints, on a cluster without it), looked up at install and upgrade;
else (helm template, no right to read them) any address on
networkPolicy.apiServer.ports. */}}
{{- define "otelcol-nexovue.apiServerEgress" -}}
{{- $v := .Values.networkPolicy.apiServer -}}
{{- $cidrs := list -}}
{{- $ports := list -}}
{{- $source := "networkPolicy.apiServer.cidrs" -}}
{{- if $v.cidrs -}}
{{- $cidrs = $v.cidrs -}}
{{- else -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- $source = "the EndpointSlice default/kubernetes at install" -}}
{{- range $slice.endpoints | default list -}}
{{- range .addresses -}}{{- $cidrs = append $cidrs . -}}{{- end -}}
{{- end -}}
{{- range $slice.ports | default list -}}{{- $ports = append $ports (.port | int) -}}{{- end -}}
{{- if not $cidrs -}}
{{- $ep := lookup "v1" "Endpoints" "default" "kubernetes" -}}
{{- $source = "the Endpoints default/kubernetes at install" -}}
{{- range $ep.subsets | default list -}}
{{- range .addresses | default list -}}{{- $cidrs = append $cidrs .ip -}}{{- end -}}
{{- range .ports | default list -}}{{- $ports = append $ports (.port | int) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $withPrefix := list -}}
{{- range $cidrs -}}{{- $withPrefix = append $withPrefix (printf "%s/%s" . (ternary "128" "32" (contains ":" .))) -}}{{- end -}}
{{- $cidrs = $withPrefix -}}
{{- if not $cidrs -}}
{{- $source = "any address on its ports (networkPolicy.apiServer.cidrs narrows it)" -}}
{{- end -}}
{{- end -}}
{{- if not (and $cidrs $ports) -}}{{- $ports = $v.ports -}}{{- end -}}
source: {{ $source | quote }}
cidrs: {{ toJson $cidrs }}
ports: {{ $ports | uniq | toJson }}
{{- end -}}
