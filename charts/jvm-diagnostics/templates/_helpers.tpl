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

{{/*
The generated rule groups (.rules, the file's text) with the prometheusRule options (.pr)
applied: alerts in .pr.disabled dropped (and groups left empty), then on every alerting rule
the labels additionalRuleLabels, the runbook_url rebuilt as <runbookUrl>/<its file name>, the
annotations additionalRuleAnnotations, and the per-alert overrides' for and severity, each
winning over what comes before it. Recording rules are left as they are. A name in disabled
or overrides that is no default alert fails the render, naming it: a typo would otherwise
leave the alert as it was without a word. The values are strings after fromYaml/toYaml, so
the {{ $labels.x }} in annotations stay as they are.
*/}}
{{- define "jvm-diagnostics.prometheusRule.groups" -}}
{{- $pr := .pr }}
{{- $spec := fromYaml .rules }}
{{- if hasKey $spec "Error" }}
{{- fail (printf "files/monitoring/prometheus-rules.yaml does not parse: %s" $spec.Error) }}
{{- end }}
{{- $known := dict }}
{{- range $g := $spec.groups }}{{ range $r := $g.rules }}{{ with $r.alert }}{{ $_ := set $known . true }}{{ end }}{{ end }}{{ end }}
{{- range $opt := list "disabled" "overrides" }}
{{- range $name, $_ := (index $pr $opt | default dict) }}
{{- if not (hasKey $known $name) }}
{{- fail (printf "prometheusRule.%s.%s: no default alert has that name (they are: %s)" $opt $name (keys $known | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- end }}
{{- $disabled := $pr.disabled | default dict }}
{{- $overrides := $pr.overrides | default dict }}
{{- $groups := list }}
{{- range $g := $spec.groups }}
{{- $kept := list }}
{{- range $r := $g.rules }}
{{- if not $r.alert }}
{{- $kept = append $kept $r }}
{{- else if not (index $disabled $r.alert) }}
{{- $labels := dict }}
{{- range $k, $v := ($r.labels | default dict) }}{{ $_ := set $labels $k (toString $v) }}{{ end }}
{{- range $k, $v := ($pr.additionalRuleLabels | default dict) }}{{ $_ := set $labels $k (toString $v) }}{{ end }}
{{- $annotations := dict }}
{{- range $k, $v := ($r.annotations | default dict) }}{{ $_ := set $annotations $k (toString $v) }}{{ end }}
{{- if and $pr.runbookUrl $annotations.runbook_url }}
{{- $_ := set $annotations "runbook_url" (printf "%s/%s" (trimSuffix "/" $pr.runbookUrl) (base $annotations.runbook_url)) }}
{{- end }}
{{- range $k, $v := ($pr.additionalRuleAnnotations | default dict) }}{{ $_ := set $annotations $k (toString $v) }}{{ end }}
{{- with (index $overrides $r.alert) }}
{{- with .for }}{{ $_ := set $r "for" . }}{{ end }}
{{- with .severity }}{{ $_ := set $labels "severity" . }}{{ end }}
{{- end }}
{{- if $labels }}{{ $_ := set $r "labels" $labels }}{{ end }}
{{- if $annotations }}{{ $_ := set $r "annotations" $annotations }}{{ end }}
{{- $kept = append $kept $r }}
{{- end }}
{{- end }}
{{- if $kept }}
{{- $groups = append $groups (set (omit $g "rules") "rules" $kept) }}
{{- end }}
{{- end }}
{{- toYaml (dict "groups" $groups) }}
{{- end }}

{{/*
A generated dashboard (.json, its text, from .path) with its cluster label renamed to .label
(dashboards.clusterLabel): the generator (monitoring/grafana/panels.py, CLUSTER) writes the
label exactly as cluster=~"$cluster" in every selector and as label_values(jvmdiag_jvm_info,
cluster) in the Cluster variable; both forms are replaced, as text (so the JSON stays byte for
byte the generated one otherwise). A dashboard without that variable fails the render: the
generator and this template no longer agree.
*/}}
{{- define "jvm-diagnostics.dashboards.clusterLabel" -}}
{{- $var := "label_values(jvmdiag_jvm_info, cluster)" }}
{{- if not (contains $var .json) }}
{{- fail (printf "%s has no cluster variable (%s): dashboards.clusterLabel cannot rename its label; templates/_helpers.tpl (jvm-diagnostics.dashboards.clusterLabel) is to follow monitoring/grafana/panels.py" .path $var) }}
{{- end }}
{{- if eq .label "cluster" }}
{{- .json }}
{{- else }}
{{- .json | replace $var (printf "label_values(jvmdiag_jvm_info, %s)" .label) | replace "cluster=~\\\"$cluster\\\"" (printf "%s=~\\\"$cluster\\\"" .label) }}
{{- end }}
{{- end }}

{{/*
Milliseconds of a Prometheus duration as the schema admits it (e.g. 1m30s, 500ms).
*/}}
{{- define "jvm-diagnostics.durationMs" -}}
{{- $ms := 0 }}
{{- $unit := dict "y" 31536000000 "w" 604800000 "d" 86400000 "h" 3600000 "m" 60000 "s" 1000 }}
{{- range $part := regexFindAll "[0-9]+(ms|[ywdhms])" . -1 }}
{{- if hasSuffix "ms" $part }}
{{- $ms = add $ms (trimSuffix "ms" $part | int64) }}
{{- else }}
{{- $u := substr (sub (len $part) 1 | int) (len $part) $part }}
{{- $ms = add $ms (mul (trimSuffix $u $part | int64) (index $unit $u)) }}
{{- end }}
{{- end }}
{{- $ms }}
{{- end }}

{{/*
The Prometheus Operator rejects a monitor whose scrapeTimeout is longer than its interval
(the monitor is then skipped, with only a line in the operator's log): refused here, naming
the values, when both are set.
*/}}
{{- define "jvm-diagnostics.monitor.checkTimeout" -}}
{{- if and .m.interval .m.scrapeTimeout }}
{{- if gt (include "jvm-diagnostics.durationMs" .m.scrapeTimeout | int64) (include "jvm-diagnostics.durationMs" .m.interval | int64) }}
{{- fail (printf "%s.scrapeTimeout (%s) is longer than %s.interval (%s): the Prometheus Operator rejects such a monitor" .name .m.scrapeTimeout .name .m.interval) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The agent's two listeners (.: agent values): the probe port is not the metrics port, and
arguments given whole (agent.args) open the probe listener the kubelet's probes go to, or the
agent would be restarted for ever.
*/}}
{{- define "jvm-diagnostics.agent.checkPorts" -}}
{{- if eq (int .probePort) (int .port) }}
{{- fail (printf "agent.probePort (%d) must differ from agent.port: the probes have a listener of their own" (int .probePort)) }}
{{- end }}
{{- if .args }}
{{- $found := false }}
{{- range .args }}{{ if hasPrefix "--probe-listen" (toString .) }}{{ $found = true }}{{ end }}{{ end }}
{{- if not $found }}
{{- fail (printf "agent.args replaces the agent's arguments: include --probe-listen=0.0.0.0:%d (agent.probePort), where the kubelet's probes go" (int .probePort)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
agent.metricsAuth: the name of the scraper's ServiceAccount and token Secret the chart creates,
and the endpoint lines that make a ServiceMonitor/PodMonitor send that token (or the one in
the Secret scrapeSecret names) as "Authorization: Bearer" (.: the root context).
*/}}
{{- define "jvm-diagnostics.agent.scraperName" -}}
{{- printf "%s-metrics-scraper" (include "jvm-diagnostics.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "jvm-diagnostics.agent.monitorAuthorization" -}}
{{- $ma := .Values.agent.metricsAuth }}
{{- if and .Values.agent.enabled $ma.enabled }}
# agent.metricsAuth: the agent wants a token allowed to get /metrics
authorization:
  type: Bearer
  credentials:
    name: {{ $ma.scrapeSecret.name | default (include "jvm-diagnostics.agent.scraperName" .) }}
    key: {{ $ma.scrapeSecret.key }}
{{- end }}
{{- end }}
