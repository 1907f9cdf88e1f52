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

{{/*
With localAgent.inProcess: the ServiceAccount the included agent chart (alias "agent") creates,
named by that chart's own helper, so both charts agree on it. Fails when the agent would not run
in the release namespace (the agent chart renders into it).
*/}}
{{- define "mirrorhub-hub.inProcessAgentServiceAccount" -}}
{{- if and .Values.localAgent.namespace (ne .Values.localAgent.namespace .Release.Namespace) }}
{{- fail (printf "localAgent.inProcess runs the agent in the release namespace (%s), where the included agent chart renders its ServiceAccount, RBAC and Lease; leave localAgent.namespace empty (it is %q)" .Release.Namespace .Values.localAgent.namespace) }}
{{- end }}
{{- include "mirrorhub-agent.serviceAccountName" (dict "Values" .Values.agent "Release" .Release "Chart" (dict "Name" "agent")) }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is pinned. */}}
{{- define "mirrorhub-hub.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Where the signing key is mounted (read-only; the root filesystem is read-only too). */}}
{{- define "mirrorhub-hub.signingKeyDir" -}}
/etc/mirrorhub/signing
{{- end }}

{{/* signing.existingSecret, required: the hub signs nothing without its key. */}}
{{- define "mirrorhub-hub.signingSecret" -}}
{{- if not .Values.signing.existingSecret }}
{{- fail (printf "signing.existingSecret is required: the name of a Secret in namespace %s whose key private.pem holds the hub's Ed25519 private key (PKCS#8 PEM). Create it with `openssl genpkey -algorithm ed25519 -out hub-signing.pem && kubectl -n %s create secret generic mirrorhub-hub-signing --from-file=private.pem=hub-signing.pem`, then --set signing.existingSecret=mirrorhub-hub-signing; agents need the public key (`openssl pkey -in hub-signing.pem -pubout`) in their hubPublicKeys" .Release.Namespace .Release.Namespace) }}
{{- end }}
{{- .Values.signing.existingSecret }}
{{- end }}

{{/*
The validations on the hub's Secret writes in an agent namespace: payload Secrets only. The
agent chart has the same list for the hub's identity in every follower (hubAccess); Helm cannot
share a template between charts, so test/src/charts.test.ts keeps the two equal. Needs the
variables `target`, `who` and `source`.
*/}}
{{- define "mirrorhub-hub.payloadValidations" -}}
validations:
  # CREATE and UPDATE: a payload Secret is Opaque...
  - expression: request.operation == "DELETE" || object.?type.orValue("Opaque") == "Opaque"
    reason: Forbidden
    messageExpression: >-
      "PayloadsOnly (payload.type): " + variables.target + ": " + variables.who +
      " may write only payload Secrets here, of type Opaque, not " +
      object.?type.orValue("Opaque") + variables.source
  # ...labelled mirrorhub.io/payload=true...
  - expression: >-
      request.operation == "DELETE" ||
      object.metadata.?labels[?"mirrorhub.io/payload"] == optional.of("true")
    reason: Forbidden
    messageExpression: >-
      "PayloadsOnly (payload.label): " + variables.target + ": " + variables.who +
      " may write only payload Secrets here, labelled mirrorhub.io/payload=true" + variables.source
  # UPDATE and DELETE: ...and only a Secret that is a payload already.
  - expression: >-
      request.operation == "CREATE" ||
      oldObject.metadata.?labels[?"mirrorhub.io/payload"] == optional.of("true")
    reason: Forbidden
    messageExpression: >-
      "PayloadsOnly (payload.existing): " + variables.target + ": " + variables.who +
      " may change or delete only payload Secrets (labelled mirrorhub.io/payload=true), and this one is not" +
      variables.source
{{- end }}

{{/*
Argo CD health checks: the data of argocd-cm, one key per mirrorhub kind, each holding
argocd/health.lua (the one copy of the script; test/src/argo-health.test.ts runs it with
gopher-lua, as Argo CD does). Printed by NOTES.txt when argocd.healthChecks is true.
*/}}
{{- define "mirrorhub-hub.argocdHealth" -}}
{{- $lua := .Files.Get "argocd/health.lua" }}
{{- range list "SecretMirror" "ClusterSecretMirror" "MirrorCluster" "VaultConnection" "ClusterVaultConnection" }}
resource.customizations.health.mirrorhub.io_{{ . }}: |
{{ $lua | trimSuffix "\n" | indent 2 }}
{{- end }}
{{- end }}
