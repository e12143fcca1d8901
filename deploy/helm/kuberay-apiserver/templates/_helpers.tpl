{{/* The chart's name: the app.kubernetes.io/component label of the Pods, as KubeRay's chart labels them. */}}
{{- define "kuberay-apiserver.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the Service is `<fullname>-service`, as KubeRay's chart names it. */}}
{{- define "kuberay-apiserver.fullname" -}}
{{- $name := include "kuberay-apiserver.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the Pods (KubeRay's). */}}
{{- define "kuberay-apiserver.selectorLabels" -}}
app.kubernetes.io/component: {{ include "kuberay-apiserver.name" . }}
app.kubernetes.io/name: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object of the release. */}}
{{- define "kuberay-apiserver.labels" -}}
{{ include "kuberay-apiserver.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The rules of the ClusterRole in a file of files/ (links to apiserver/deploy, the one source of them). */}}
{{- define "kuberay-apiserver.rulesOf" -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $object := fromYaml $doc -}}
{{- if eq (get $object "kind") "ClusterRole" -}}
{{- toYaml $object.rules -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* `base` with `override` merged over it, key by key (maps recursively), as JSON. */}}
{{- define "kuberay-apiserver.overlaid" -}}
{{- $out := deepCopy .base -}}
{{- range $key, $value := (.override | default dict) -}}
{{- $ours := get $out $key -}}
{{- if and (kindIs "map" $value) (kindIs "map" $ours) -}}
{{- $_ := set $out $key (include "kuberay-apiserver.overlaid" (dict "base" $ours "override" $value) | fromJson) -}}
{{- else -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The container port named `name` (an error without one). */}}
{{- define "kuberay-apiserver.port" -}}
{{- $found := "" -}}
{{- range .root.Values.containerPort -}}
{{- if eq .name $.name -}}{{- $found = .containerPort -}}{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "containerPort: the server needs a port named %q" .name) -}}
{{- end -}}
{{- $found -}}
{{- end -}}

{{/* Values this chart cannot honour, refused with the reason. */}}
{{- define "kuberay-apiserver.validate" -}}
{{- if and .Values.singleNamespaceInstall (ne .Values.auth "none") -}}
{{- fail "singleNamespaceInstall: with auth: kubernetes the server reviews tokens and impersonates callers, which are cluster-wide rights; set auth: none (no authentication, KubeRay's behaviour) or leave singleNamespaceInstall off" -}}
{{- end -}}
{{- end -}}
