{{/*
Names. A release whose name contains the chart name ("mirrorhub-agent-prod") is used as it is; a
release whose name is part of it ("mirrorhub", "hub") yields plain "mirrorhub-agent"; any other
release name is prefixed: "<release>-mirrorhub-agent". Truncated to 63 characters.
*/}}
{{- define "mirrorhub-agent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mirrorhub-agent.fullname" -}}
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

{{- define "mirrorhub-agent.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that never change for the life of a release: the Deployment's selector. */}}
{{- define "mirrorhub-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mirrorhub-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Standard labels on every object. */}}
{{- define "mirrorhub-agent.labels" -}}
helm.sh/chart: {{ include "mirrorhub-agent.chart" . }}
{{ include "mirrorhub-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: agent
app.kubernetes.io/part-of: mirrorhub
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mirrorhub-agent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mirrorhub-agent.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is pinned. */}}
{{- define "mirrorhub-agent.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
A list of strings as a CEL list literal: JSON string literals are CEL string literals (toJson
writes only the escapes \" \\ \n \t \b \f \r \uXXXX, which CEL reads the same way).
*/}}
{{- define "mirrorhub-agent.celStrings" -}}
{{- toJson (default (list) .) }}
{{- end }}

{{/*
Fails unless every item of .list is a valid RE2 regular expression, naming the value (.path).
A valid pattern p makes "p|^$" valid, and its ^$ branch matches ""; an invalid one makes
regexMatch fail, which it reports as no match. An unbalanced ")" is refused too, so a pattern
cannot escape the ^(?:...)$ it is anchored with.
*/}}
{{- define "mirrorhub-agent.checkRegexes" -}}
{{- range $i, $p := .list }}
{{- if not (regexMatch (printf "%s|^$" $p) "") }}
{{- fail (printf "%s[%d] %q is not a valid RE2 regular expression (it is matched against whole namespace names, anchored as ^(?:%s)$)" $.path $i $p $p) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The agent's username, as the API server sees its ServiceAccount token. */}}
{{- define "mirrorhub-agent.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "mirrorhub-agent.serviceAccountName" .) }}
{{- end }}

{{/*
The hub's PEM public keys (hubPublicKeys), one block after another: MIRRORHUB_HUB_PUBLIC_KEYS.
Required: without them the agent trusts no delivery.
*/}}
{{- define "mirrorhub-agent.hubPublicKeys" -}}
{{- if not .Values.hubPublicKeys }}
{{- fail "hubPublicKeys is required: the hub's Ed25519 public key in PEM (-----BEGIN PUBLIC KEY-----), the agent acts only on deliveries signed with it. Get it from the hub's signing key with `openssl pkey -in hub-signing.pem -pubout > hub-signing.pub` and pass it with --set-file 'hubPublicKeys[0]=hub-signing.pub' (docs/helm.md)" }}
{{- end }}
{{- $keys := list }}
{{- range .Values.hubPublicKeys }}
{{- $keys = append $keys (trim .) }}
{{- end }}
{{- join "\n" $keys }}
{{- end }}

{{/*
CEL: whether the label or annotation key in the variable named by the argument is refused by
policy.metadata (used in the admission policy for labels and for annotations alike).
*/}}
{{- define "mirrorhub-agent.celKeyDenied" -}}
!{{ . }}.startsWith("mirrorhub.io/") && !({{ . }} in variables.allowedKeys) && {{ . }}.contains("/") &&
variables.deniedDomains.exists(d, {{ . }}.substring(0, {{ . }}.indexOf("/")) == d ||
{{ . }}.substring(0, {{ . }}.indexOf("/")).endsWith("." + d))
{{- end }}

{{/*
CEL: whether the label or annotation key in the variable named by .key is another controller's
ownership mark (policy.metadata.foreignOwnership) that the write adds or changes: a key the old
object already carried with that value (another tool's own, kept by the agent's patch) is not
the agent's doing. .map and .old name the variables of the new and the old keys.
*/}}
{{- define "mirrorhub-agent.celForeignAdded" -}}
!{{ .key }}.startsWith("mirrorhub.io/") &&
({{ .key }} in variables.foreignKeys || variables.foreignPrefixes.exists(p, {{ .key }}.startsWith(p))) &&
variables.{{ .old }}[?{{ .key }}] != optional.of(variables.{{ .map }}[{{ .key }}])
{{- end }}

{{/*
The validations on the hub's Secret writes in an agent namespace: payload Secrets only. The hub
chart has the same list for the hub's ServiceAccount in its own cluster (Helm cannot share a
template between charts; test/src/charts.test.ts keeps the two equal). Needs the variables
`target`, `who` and `source`.
*/}}
{{- define "mirrorhub-agent.payloadValidations" -}}
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
