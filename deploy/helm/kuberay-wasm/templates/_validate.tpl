{{/*
Checks of values that values.schema.json cannot express; each failure says what to change. Included by the
Deployment, so `helm install` and `helm template` stop before anything is created.
*/}}
{{- define "kuberay-wasm.validate" -}}
{{- $settings := include "kuberay-wasm.settings" . | fromJson -}}
{{- $leaderKey := ternary "leaderElection.enabled" "leaderElectionEnabled" (kindIs "invalid" .Values.leaderElectionEnabled) -}}
{{- $replicas := int .Values.replicas -}}
{{- if and (gt $replicas 1) (not $settings.leaderElection) -}}
{{- fail (printf "replicas is %d with %s false: every replica would reconcile and write each object as many times; enable leader election or set replicas to 1" $replicas $leaderKey) -}}
{{- end -}}
{{- if and (eq $replicas 0) $settings.leaderElection -}}
{{- fail (printf "replicas is 0 with %s true: there is nothing to elect; set replicas >= 1, or disable leader election to scale the operator to zero" $leaderKey) -}}
{{- end -}}
{{- if regexMatch "(^|/)kuberay/operator$" .Values.image.repository -}}
{{- fail (printf "image.repository is %s, KubeRay's operator image, which cannot run this chart's Deployment (its arguments are kuberay-wasm's): set image.repository and image.tag to the kuberay-wasm image (deploy/image/Containerfile), or leave image out of the values for the chart's default" .Values.image.repository) -}}
{{- end -}}
{{- with .Values.batchScheduler -}}
{{- if and .enabled .name -}}
{{- fail (printf "batchScheduler: enabled (deprecated, Volcano) and name (%q) are both set, which KubeRay's operator refuses too: set name only" .name) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.configuration .Values.configuration.enabled -}}
{{- fail "configuration.enabled asks the chart to render KubeRay's Configuration file, which this chart does not do yet (the operator reads one given with --config, see docs/operator.md): leave it false; the values it would carry (leaderElectionEnabled, reconcileConcurrency, kubeClient, watchNamespace, featureGates, ...) are taken as flags, and for the defaults for Ray Pods (defaultContainerEnvs, defaultPodAnnotations, defaultPodLabels, head and worker sidecars) mount your own Configuration and pass --config" -}}
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
{{- range $settings.watchNamespaces -}}
{{- if not (and (kindIs "string" .) (le (len .) 63) (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .)) -}}
{{- fail (printf "%s: %q is not a namespace name (a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)" $settings.watchKey .) -}}
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
