{{/*
Names and labels. Release "pyhpa" gives the kustomize kit's names (pyhpa-controller, pyhpa-preview, pyhpa).
*/}}
{{- define "pyhpa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pyhpa.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The controller's objects: Deployment, ServiceAccount, PodDisruptionBudget, ClusterRole and Lease. */}}
{{- define "pyhpa.controller" -}}
{{- printf "%s-controller" (include "pyhpa.fullname" .) }}
{{- end }}

{{- define "pyhpa.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pyhpa.controller" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the name of an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pyhpa.leaseName" -}}
{{- default (include "pyhpa.controller" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/* Helm's standard labels (tests/test_helm_chart.py ignores exactly these four when it compares with the kit). */}}
{{- define "pyhpa.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The controller pods' selector: unique per release (the kit's app.kubernetes.io/name: pyhpa-controller). */}}
{{- define "pyhpa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyhpa.controller" . }}
{{- end }}

{{- define "pyhpa.sharded" -}}
{{- if eq (toString .Values.shards) "auto" }}true{{ end }}
{{- end }}

{{/* Whether the controller uses Leases: --shards auto, or --shards 1 with --leader-elect. */}}
{{- define "pyhpa.leases" -}}
{{- if or (include "pyhpa.sharded" .) .Values.leaderElection.enabled }}true{{ end }}
{{- end }}

{{/* The namespaces whose autoscalers the controller serves with rbac.scope namespaces, comma-separated (checked:
at least one, at most pyhpa run's 100). */}}
{{- define "pyhpa.watchNamespaces" -}}
{{- if eq .Values.rbac.scope "namespaces" }}
{{- if not .Values.rbac.namespaces }}
{{- fail "rbac.scope namespaces needs the namespaces to serve in rbac.namespaces (none given)" }}
{{- end }}
{{- join "," .Values.rbac.namespaces }}
{{- else if .Values.rbac.namespaces }}
{{- fail "rbac.namespaces is only for rbac.scope namespaces (rbac.scope is cluster)" }}
{{- end }}
{{- end }}

{{/* `pyhpa run`'s arguments: the kit's, in its order, then what the values add. */}}
{{- define "pyhpa.args" -}}
{{- $c := .Values.controller }}
{{- $le := .Values.leaderElection }}
{{- $args := list "run" "--workers" (toString $c.workers) "--sync-period" (toString $c.syncPeriod) "--health-port" (toString .Values.metrics.port) }}
{{- if include "pyhpa.sharded" . }}
{{- $args = concat $args (list "--shards" "auto") }}
{{- else }}
{{- $args = concat $args (list "--shards" "1" (ternary "--leader-elect" "--no-leader-elect" $le.enabled)) }}
{{- end }}
{{- if include "pyhpa.leases" . }}
{{- $args = concat $args (list "--leader-elect-resource-namespace" "$(POD_NAMESPACE)" "--leader-elect-resource-name" (include "pyhpa.leaseName" .)) }}
{{- range $flag, $key := dict "--leader-elect-lease-duration" "leaseDuration" "--leader-elect-renew-deadline" "renewDeadline" "--leader-elect-retry-period" "retryPeriod" }}
{{- if and (hasKey $le $key) (not (kindIs "invalid" (get $le $key))) }}
{{- $args = concat $args (list $flag (toString (get $le $key))) }}
{{- end }}
{{- end }}
{{- end }}
{{- $args = concat $args (list "--memory-store" $c.memoryStore) }}
{{- with include "pyhpa.watchNamespaces" . }}
{{- range splitList "," . }}
{{- $args = concat $args (list "--namespace" .) }}
{{- end }}
{{- end }}
{{- with $c.logLevel }}{{ $args = concat $args (list "--log-level" .) }}{{ end }}
{{- with $c.logFormat }}{{ $args = concat $args (list "--log-format" .) }}{{ end }}
{{- with $c.prometheusUrl }}{{ $args = concat $args (list "--prometheus-url" .) }}{{ end }}
{{- range $c.extraArgs }}{{ $args = append $args (toString .) }}{{ end }}
{{- toYaml $args }}
{{- end }}
