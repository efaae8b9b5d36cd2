{{/*
Shared names and labels. Every helper is prefixed with the chart name.
*/}}

{{/* Chart name, overridable with nameOverride. */}}
{{- define "jvm-diagnostics.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, at most 63 characters (DNS label). The release name is used
alone when it already contains the chart name.
*/}}
{{- define "jvm-diagnostics.fullname" -}}
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

{{/* Namespace everything is installed into. */}}
{{- define "jvm-diagnostics.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* chart label value: name-version */}}
{{- define "jvm-diagnostics.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "jvm-diagnostics.labels" -}}
helm.sh/chart: {{ include "jvm-diagnostics.chart" . }}
{{ include "jvm-diagnostics.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jvm-diagnostics
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels (immutable: never add anything that changes between upgrades). */}}
{{- define "jvm-diagnostics.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jvm-diagnostics.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Component names and labels: operator and agent. */}}
{{- define "jvm-diagnostics.operator.fullname" -}}
{{- printf "%s-operator" (include "jvm-diagnostics.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "jvm-diagnostics.agent.fullname" -}}
{{- printf "%s-agent" (include "jvm-diagnostics.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "jvm-diagnostics.webhook.fullname" -}}
{{- printf "%s-webhook" (include "jvm-diagnostics.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jvm-diagnostics.operator.selectorLabels" -}}
{{ include "jvm-diagnostics.selectorLabels" . }}
app.kubernetes.io/component: operator
{{- end }}
{{- define "jvm-diagnostics.agent.selectorLabels" -}}
{{ include "jvm-diagnostics.selectorLabels" . }}
app.kubernetes.io/component: agent
{{- end }}

{{/*
The label whose value Prometheus takes as the scrape `job` (the monitors' jobLabel): fixed
values, so the agent-down alert's selector (monitoring/mixin/config.py agentSelector)
holds whatever the release name, nameOverride or fullnameOverride.
*/}}
{{- define "jvm-diagnostics.jobLabelKey" -}}jvm.diagnostics.dev/scrape-job{{- end }}

{{/* ServiceAccount names. */}}
{{- define "jvm-diagnostics.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "jvm-diagnostics.operator.fullname" .) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}
{{- define "jvm-diagnostics.agent.serviceAccountName" -}}
{{- if .Values.agent.serviceAccount.create }}
{{- default (include "jvm-diagnostics.agent.fullname" .) .Values.agent.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.agent.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* image reference: repository:tag, the tag defaulting to the chart's appVersion; a digest wins. */}}
{{- define "jvm-diagnostics.image" -}}
{{- $registry := .global.imageRegistry | default "" -}}
{{- $repo := .image.repository -}}
{{- if $registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo }}{{ end -}}
{{- if .image.digest -}}
{{ $repo }}@{{ .image.digest }}
{{- else -}}
{{ $repo }}:{{ .image.tag | default .appVersion }}
{{- end -}}
{{- end }}

{{/* Labels that kube-prometheus-stack selects monitors and rules by (release: <its release>). */}}
{{- define "jvm-diagnostics.monitorLabels" -}}
{{- $l := dict -}}
{{- with .additionalLabels }}{{ $l = merge $l . }}{{ end -}}
{{- with .release }}{{ $_ := set $l "release" . }}{{ end -}}
{{- with $l }}{{ toYaml . }}{{ end -}}
{{- end }}

{{/*
cert-manager refuses renewBefore >= duration, and the operator re-issues (and so fights
cert-manager over) a serving certificate with less than 120 days (2880h) left. Checked when
both are whole hours (the chart's form); other forms are left to cert-manager.
*/}}
{{- define "jvm-diagnostics.certManager.checkDurations" -}}
{{- if and (regexMatch "^[0-9]+h$" .duration) (regexMatch "^[0-9]+h$" .renewBefore) }}
{{- $d := trimSuffix "h" .duration | int }}
{{- $r := trimSuffix "h" .renewBefore | int }}
{{- if ge $r $d }}
{{- fail (printf "certManager.renewBefore (%s) must be shorter than certManager.duration (%s): cert-manager refuses the Certificate otherwise" .renewBefore .duration) }}
{{- end }}
{{- if lt $r 2880 }}
{{- fail (printf "certManager.renewBefore (%s) must be at least 2880h (120 days): the operator re-issues a certificate with less left and would fight cert-manager; raise it (and certManager.duration above it)" .renewBefore) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
What the ServiceMonitor and the PodMonitors share, from serviceMonitor or podMonitor (.m):
the namespace the object is created in, its annotations, and the endpoint's scrape settings
(an empty interval or scrapeTimeout leaves Prometheus' own) and relabelings.
*/}}
{{- define "jvm-diagnostics.monitorNamespace" -}}
{{- .m.namespace | default (include "jvm-diagnostics.namespace" .root) }}
{{- end }}
{{- define "jvm-diagnostics.monitorAnnotations" -}}
{{- with .annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- define "jvm-diagnostics.monitorEndpoint" -}}
{{- with .interval }}
interval: {{ . }}
{{- end }}
{{- with .scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
# honorLabels: the agent's namespace/pod/container labels name the JVM's pod, not the agent's;
# containers cannot forge them (docs/untrusted-input.md, "What reaches /metrics").
honorLabels: true
{{- with .relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
