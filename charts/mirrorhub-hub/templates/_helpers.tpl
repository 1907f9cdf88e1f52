{{/*
Names. A release whose name contains the chart name ("mirrorhub-hub-prod") is used as it is; a
release whose name is part of it ("mirrorhub", "hub") yields plain "mirrorhub-hub"; any other
release name is prefixed: "<release>-mirrorhub-hub". Truncated to 63 characters.
*/}}
{{- define "mirrorhub-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mirrorhub-hub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else if contains .Release.Name $name }}
{{- $name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mirrorhub-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that never change for the life of a release: the Deployment's selector. */}}
{{- define "mirrorhub-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mirrorhub-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Standard labels on every object. */}}
{{- define "mirrorhub-hub.labels" -}}
helm.sh/chart: {{ include "mirrorhub-hub.chart" . }}
{{ include "mirrorhub-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: hub
app.kubernetes.io/part-of: mirrorhub
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mirrorhub-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mirrorhub-hub.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace the hub writes MirrorDeliveries and payload Secrets to for its own cluster. */}}
{{- define "mirrorhub-hub.localAgentNamespace" -}}
{{- default .Release.Namespace .Values.localAgent.namespace }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is pinned. */}}
{{- define "mirrorhub-hub.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}
