{{/*
The settings the templates act on, as JSON: the chart's values, with KubeRay's (its kuberay-operator chart, v1.7)
where they name the same thing. A KubeRay value that is set decides when ours is at its default; set to something
else than ours when ours is not at its default, rendering fails naming both. Fields:
  leaderElection   bool    leaderElection.enabled, or leaderElectionEnabled
  routing          string  routing, or useKubernetesProxy (true: proxy, false: direct)
  rbac             bool    rbac.create, or rbacEnable
  watchNamespaces  list    watchNamespaces, or watchNamespace; with singleNamespaceInstall and neither, the
                           release namespace
  watchKey         string  the value the list came from, for messages
  operatorRoles    string  cluster (a ClusterRole), namespaced (a Role per watched namespace) or none (no rights
                           for the Ray kinds: rbac off, or KubeRay's crNamespacedRbacEnable false with
                           singleNamespaceInstall)
  userRoles        bool    the editor and viewer ClusterRoles of the Ray kinds (KubeRay's: with RBAC, unless
                           singleNamespaceInstall)
  pluginResources  bool    pluginResources.enabled; empty: on, unless singleNamespaceInstall (they need cluster-wide
                           rights)
  logArgs          list    the operator's log arguments: --log-format, or --log-stdout-encoder from KubeRay's
                           logging.stdoutEncoder
*/}}
{{- define "kuberay-wasm.settings" -}}
{{- $v := .Values -}}
{{- $single := $v.singleNamespaceInstall -}}

{{- $leader := $v.leaderElection.enabled -}}
{{- if not (kindIs "invalid" $v.leaderElectionEnabled) -}}
{{- if and $v.leaderElectionEnabled (not $v.leaderElection.enabled) -}}
{{- fail "leaderElectionEnabled (KubeRay's name) is true and leaderElection.enabled is false: they name the same setting; set one of them" -}}
{{- end -}}
{{- $leader = $v.leaderElectionEnabled -}}
{{- end -}}

{{- $routing := $v.routing -}}
{{- if not (kindIs "invalid" $v.useKubernetesProxy) -}}
{{- $kuberay := ternary "proxy" "direct" (eq (toString $v.useKubernetesProxy) "true") -}}
{{- if and (ne $routing "direct") (ne $routing $kuberay) -}}
{{- fail (printf "useKubernetesProxy (KubeRay's name) is %v and routing is %s: they name the same setting (useKubernetesProxy: true is routing: proxy); set one of them" $v.useKubernetesProxy $routing) -}}
{{- end -}}
{{- $routing = $kuberay -}}
{{- end -}}

{{- $rbac := $v.rbac.create -}}
{{- if not (kindIs "invalid" $v.rbacEnable) -}}
{{- if and $v.rbacEnable (not $v.rbac.create) -}}
{{- fail "rbacEnable (KubeRay's name) is true and rbac.create is false: they name the same setting; set one of them" -}}
{{- end -}}
{{- $rbac = $v.rbacEnable -}}
{{- end -}}

{{- $watch := $v.watchNamespaces | default list -}}
{{- $watchKey := "watchNamespaces" -}}
{{- with $v.watchNamespace -}}
{{- if not (kindIs "slice" .) -}}
{{- fail (printf "watchNamespace (KubeRay's name for watchNamespaces) must be a list of namespaces, not %v" .) -}}
{{- end -}}
{{- if and $watch (ne (toJson (sortAlpha $watch)) (toJson (sortAlpha .))) -}}
{{- fail (printf "watchNamespace (KubeRay's name) is %v and watchNamespaces is %v: they name the same setting; set one of them" . $watch) -}}
{{- end -}}
{{- $watch = . -}}
{{- $watchKey = "watchNamespace" -}}
{{- end -}}
{{- if and $single (not $watch) -}}
{{- $watch = list $.Release.Namespace -}}
{{- $watchKey = "singleNamespaceInstall" -}}
{{- end -}}

{{- $operatorRoles := "cluster" -}}
{{- if not $rbac -}}
{{- $operatorRoles = "none" -}}
{{- else if and $single (not $v.crNamespacedRbacEnable) -}}
{{- $operatorRoles = "none" -}}
{{- else if $watch -}}
{{- $operatorRoles = "namespaced" -}}
{{- end -}}

{{- $plugins := not $single -}}
{{- if not (kindIs "invalid" $v.pluginResources.enabled) -}}
{{- $plugins = $v.pluginResources.enabled -}}
{{- if and $plugins $single $rbac -}}
{{- fail "singleNamespaceInstall (KubeRay's value) installs no cluster-wide RBAC, and pluginResources.enabled needs a ClusterRole (ReconcilePlugin resources are cluster-scoped) and a Role in default: leave pluginResources.enabled empty or false with singleNamespaceInstall, or use watchNamespaces instead of singleNamespaceInstall" -}}
{{- end -}}
{{- end -}}

{{- $logArgs := list (printf "--log-format=%s" $v.logFormat) -}}
{{- with $v.logging -}}
{{- if or .baseDir .fileName -}}
{{- fail (printf "logging.baseDir (%q) and logging.fileName (%q) ask for a log file, which kuberay-wasm does not write: it logs to stderr only (collect the container's logs); leave both empty" (toString .baseDir) (toString .fileName)) -}}
{{- end -}}
{{- with .stdoutEncoder -}}
{{- $format := ternary "text" "json" (eq . "console") -}}
{{- if and (eq $v.logFormat "text") (ne $format "text") -}}
{{- fail (printf "logging.stdoutEncoder (KubeRay's value) is %s and logFormat is %s: they name the same setting (console is text); set one of them" . $v.logFormat) -}}
{{- end -}}
{{- $logArgs = list (printf "--log-stdout-encoder=%s" .) -}}
{{- end -}}
{{- end -}}

{{- toJson (dict
  "leaderElection" $leader
  "routing" $routing
  "rbac" $rbac
  "watchNamespaces" $watch
  "watchKey" $watchKey
  "operatorRoles" $operatorRoles
  "userRoles" (and $rbac (not $single))
  "pluginResources" $plugins
  "logArgs" $logArgs) -}}
{{- end -}}

{{/*
Two maps of the same meaning, ours and KubeRay's (dict "ours" MAP "oursKey" NAME "kuberay" MAP "kuberayKey" NAME),
merged as YAML; a key both set to different values fails naming both values.
*/}}
{{- define "kuberay-wasm.mergedMaps" -}}
{{- $out := deepCopy (.ours | default dict) -}}
{{- range $key, $value := (.kuberay | default dict) -}}
{{- if and (hasKey $out $key) (ne (toJson (get $out $key)) (toJson $value)) -}}
{{- fail (printf "%s (KubeRay's value) and %s both set %q, to different values (%v and %v): set it in one of them" $.kuberayKey $.oursKey $key $value (get $out $key)) -}}
{{- end -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- if $out -}}
{{- toYaml $out -}}
{{- end -}}
{{- end -}}

{{/*
The chart's `base` object with a user's `override` (dict "base" MAP "override" MAP) laid over it, as JSON: the
user's fields replace ours, objects are merged field by field (so a field the user does not set keeps ours, and a
`false` replaces our `true`, unlike sprig's mergeOverwrite).
*/}}
{{- define "kuberay-wasm.overlaid" -}}
{{- $out := deepCopy .base -}}
{{- range $key, $value := (.override | default dict) -}}
{{- $ours := get $out $key -}}
{{- if and (kindIs "map" $value) (kindIs "map" $ours) -}}
{{- $_ := set $out $key (include "kuberay-wasm.overlaid" (dict "base" $ours "override" $value) | fromJson) -}}
{{- else -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
