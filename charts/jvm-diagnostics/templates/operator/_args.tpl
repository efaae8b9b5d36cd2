{{/*
The operator's flags (see `java -jar jvmdiag-operator.jar --help`), derived from values.
*/}}
{{- define "jvm-diagnostics.operator.args" -}}
- --namespace={{ include "jvm-diagnostics.namespace" . }}
- --metrics-bind=0.0.0.0:{{ .Values.operator.metricsPort }}
- --probe-bind=0.0.0.0:{{ .Values.operator.probePort }}
{{- if .Values.operator.leaderElection.enabled }}
- --leader-election-namespace={{ include "jvm-diagnostics.namespace" . }}
- --leader-election-lease={{ include "jvm-diagnostics.operator.fullname" . }}
{{- else }}
- --no-leader-election
{{- end }}
- --agent-image={{ include "jvm-diagnostics.image" (dict "image" .Values.agent.image "global" .Values.global "appVersion" .Chart.AppVersion) }}
- --max-rollouts-per-minute={{ .Values.operator.maxRolloutsPerMinute }}
- --cache-sync-timeout={{ .Values.operator.cacheSyncTimeout }}
- --operator-deployment={{ include "jvm-diagnostics.operator.fullname" . }}
{{- $logFormat := .Values.operator.logFormat | default .Values.global.logFormat | default "logfmt" }}
- --log-format={{ eq $logFormat "text" | ternary "logfmt" $logFormat }}
- --log-level={{ .Values.operator.logLevel | default .Values.global.logLevel | default "info" }}
{{- range .Values.operator.allowedJvmOptions }}
- --allow-jvm-option={{ . }}
{{- end }}
{{- with .Values.operator.watchNamespaces }}
- --watch-namespaces={{ join "," . }}
{{- end }}
{{- if .Values.webhook.enabled }}
- --webhook-bind=0.0.0.0:{{ .Values.webhook.port }}
- --webhook-service={{ include "jvm-diagnostics.operator.fullname" . }}
- --webhook-config={{ include "jvm-diagnostics.webhook.fullname" . }}
- --webhook-secret={{ include "jvm-diagnostics.webhook.fullname" . }}-tls
{{- with .Values.webhook.rateLimitPerPeer }}
- --webhook-pod-limit={{ if .pods.perSecond }}{{ .pods.perSecond }}/{{ .pods.burst }}{{ else }}0{{ end }}
- --webhook-validation-limit={{ if .validation.perSecond }}{{ .validation.perSecond }}/{{ .validation.burst }}{{ else }}0{{ end }}
{{- end }}
{{- if .Values.certManager.enabled }}
{{- /* cert-manager writes the Secret and its cainjector the caBundle: the operator only reads them. */}}
- --no-manage-webhook-config
{{- end }}
{{- else }}
- --no-webhook
{{- end }}
{{- end }}
