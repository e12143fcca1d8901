{{/* The chart's name, or nameOverride (KubeRay's value): the app.kubernetes.io/name label and the full name's base. */}}
{{- define "kuberay-wasm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the names of the Deployment, ServiceAccount and roles. */}}
{{- define "kuberay-wasm.fullname" -}}
{{- $name := include "kuberay-wasm.name" . -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the operator's Pods. */}}
{{- define "kuberay-wasm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kuberay-wasm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object of the release. */}}
{{- define "kuberay-wasm.labels" -}}
{{ include "kuberay-wasm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kuberay-wasm.serviceAccountName" -}}
{{- default (include "kuberay-wasm.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/*
The rules of a manifest in files/ (links to the kustomize manifests, the one source of them): of its ClusterRoles, or
with "kind" and "name" of that one object (a Role).
*/}}
{{- define "kuberay-wasm.rulesOf" -}}
{{- $kind := .kind | default "ClusterRole" -}}
{{- $name := .name -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $object := fromYaml $doc -}}
{{- if and (eq (get $object "kind") $kind) (or (not $name) (eq $object.metadata.name $name)) -}}
{{- toYaml $object.rules -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The operator's rules in the release's routing mode: direct's, and the proxy subresources in proxy mode; the
PodGroups of the batch scheduler it is started with, where that scheduler has them (Volcano, scheduler-plugins). */}}
{{- define "kuberay-wasm.rules" -}}
{{ include "kuberay-wasm.rulesOf" (dict "root" . "file" "files/rbac.yaml") }}
{{- if eq (include "kuberay-wasm.settings" . | fromJson).routing "proxy" }}
{{ include "kuberay-wasm.rulesOf" (dict "root" . "file" "files/rbac-proxy.yaml") }}
{{- end -}}
{{- $scheduler := include "kuberay-wasm.batchScheduler" . -}}
{{- if has $scheduler (list "volcano" "scheduler-plugins") }}
{{ include "kuberay-wasm.rulesOf" (dict "root" . "file" (printf "files/rbac-%s.yaml" $scheduler)) }}
{{- end -}}
{{- end -}}

{{/* The batch scheduler the operator runs with, as KubeRay reads its values: `enabled` (deprecated) is Volcano,
else `name` (empty: none). */}}
{{- define "kuberay-wasm.batchScheduler" -}}
{{- with .Values.batchScheduler -}}
{{- if .enabled -}}volcano{{- else -}}{{ .name | default "" }}{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where the operator reads plugins: the administrator's volume, or the ones shipped in the image. */}}
{{- define "kuberay-wasm.pluginDir" -}}
{{- if .Values.plugins.volume -}}
/var/lib/kuberay-wasm/plugins
{{- else -}}
/opt/kuberay-wasm/plugins
{{- end -}}
{{- end -}}

{{/* Where the registry CA of pluginResources.registryCA is mounted (its key ca.crt), for --plugin-registry-ca. */}}
{{- define "kuberay-wasm.registryCADir" -}}
/etc/kuberay-wasm-registry-ca
{{- end -}}
