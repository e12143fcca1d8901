{{/*
Checks of values that values.schema.json cannot express; each failure says what to change. Included by the
Deployment, so `helm install` and `helm template` stop before anything is created.
*/}}
{{- define "kuberay-wasm.validate" -}}
{{- $replicas := int .Values.replicas -}}
{{- if and (gt $replicas 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas is %d with leaderElection.enabled false: every replica would reconcile and write each object as many times; enable leader election or set replicas to 1" $replicas) -}}
{{- end -}}
{{- if and (eq $replicas 0) .Values.leaderElection.enabled -}}
{{- fail "replicas is 0 with leaderElection.enabled true: there is nothing to elect; set replicas >= 1, or disable leader election to scale the operator to zero" -}}
{{- end -}}
{{- with .Values.plugins.volume -}}
{{- if not (kindIs "map" .) -}}
{{- fail (printf "plugins.volume must be a Kubernetes volume source such as {persistentVolumeClaim: {claimName: NAME}}, not %v" .) -}}
{{- end -}}
{{- if ne (len .) 1 -}}
{{- fail (printf "plugins.volume must be one Kubernetes volume source (e.g. {persistentVolumeClaim: {claimName: NAME}}), it has %d keys: %s" (len .) (keys . | sortAlpha | join ", ")) -}}
{{- end -}}
{{- range $source, $spec := . -}}
{{- if or (eq $source "name") (not (kindIs "map" $spec)) -}}
{{- fail (printf "plugins.volume must be a Kubernetes volume source such as {persistentVolumeClaim: {claimName: NAME}}: %q is not one (its value must be an object, and the volume's name is set by the chart)" $source) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .Values.watchNamespaces -}}
{{- if not (and (kindIs "string" .) (le (len .) 63) (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .)) -}}
{{- fail (printf "watchNamespaces: %q is not a namespace name (a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)" .) -}}
{{- end -}}
{{- end -}}
{{- with .Values.pluginResources.registryCA -}}
{{- if ne (len .) 1 -}}
{{- fail "pluginResources.registryCA must name one ConfigMap or one Secret holding the CA as ca.crt: {configMap: NAME} or {secret: NAME}, not both" -}}
{{- end -}}
{{- end -}}
{{- if .Values.policy -}}
{{- if not (kindIs "string" .Values.policy) -}}
{{- fail "policy must be the policy file's YAML as a string (policy: |, then the file indented)" -}}
{{- end -}}
{{- if hasKey (fromYaml .Values.policy) "Error" -}}
{{- fail (printf "policy is not valid YAML: %s" (get (fromYaml .Values.policy) "Error")) -}}
{{- end -}}
{{- end -}}
{{- end -}}
