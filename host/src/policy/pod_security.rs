//! Pod Security Standards (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>) on a pod
//! spec a plugin wants created: the `baseline` and `restricted` profiles, as the API server's Pod Security
//! Admission would check them, but applied to what a plugin writes, whatever the namespace's labels say.

use std::collections::BTreeSet;

use serde_json::Value;

use super::file::{ContentRules, Profile};

/// Capabilities the baseline profile lets a container add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls the baseline profile allows.
const SAFE_SYSCTLS: [&str; 10] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Volume types the restricted profile allows.
const RESTRICTED_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn is_true(value: &Value, pointer: &str) -> bool {
    value.pointer(pointer).and_then(Value::as_bool) == Some(true)
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// Every container of a pod spec (init and ephemeral ones included), with its name.
pub(crate) fn containers(spec: &Value) -> impl Iterator<Item = (&str, &Value)> {
    ["containers", "initContainers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |key| items(spec, key))
        .map(|c| (str_at(c, "/name").unwrap_or("?"), c))
}

/// Checks `spec` (a PodSpec) against the profile of `rules`.
pub(crate) fn check(spec: &Value, rules: &ContentRules) -> Result<(), String> {
    match rules.pod_security {
        Profile::Privileged => Ok(()),
        Profile::Baseline => baseline(spec, &rules.extra_capabilities),
        Profile::Restricted => {
            baseline(spec, &rules.extra_capabilities)?;
            restricted(spec, &rules.extra_capabilities)
        }
    }
}

fn baseline(spec: &Value, extra: &BTreeSet<String>) -> Result<(), String> {
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if is_true(spec, &format!("/{host}")) {
            return Err(format!(
                "{host} is not allowed (Pod Security Standards: baseline)"
            ));
        }
    }
    if let Some(volume) = items(spec, "volumes").find(|v| v.get("hostPath").is_some()) {
        return Err(format!(
            "hostPath volume {} is not allowed (baseline)",
            str_at(volume, "/name").unwrap_or("?")
        ));
    }
    if let Some(bad) = spec
        .pointer("/securityContext/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| str_at(s, "/name"))
        .find(|n| !SAFE_SYSCTLS.contains(n))
    {
        return Err(format!("sysctl {bad} is not allowed (baseline)"));
    }
    security_context(spec.get("securityContext"), "the pod")?;
    for (name, container) in containers(spec) {
        let context = container.get("securityContext");
        if context.is_some_and(|c| is_true(c, "/privileged")) {
            return Err(format!("container {name} is privileged (baseline)"));
        }
        if let Some(cap) = context
            .into_iter()
            .flat_map(|c| items_at(c, "/capabilities/add"))
            .find(|cap| !BASELINE_CAPABILITIES.contains(cap) && !extra.contains(*cap))
        {
            return Err(format!("container {name} adds capability {cap} (baseline)"));
        }
        if let Some(port) =
            items(container, "ports").find(|p| p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) != 0)
        {
            return Err(format!(
                "container {name} uses hostPort {} (baseline)",
                port["hostPort"]
            ));
        }
        if context
            .and_then(|c| str_at(c, "/procMount"))
            .is_some_and(|m| m != "Default")
        {
            return Err(format!("container {name} sets procMount (baseline)"));
        }
        security_context(context, &format!("container {name}"))?;
    }
    Ok(())
}

fn items_at<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The parts of a pod or container securityContext the baseline profile restricts in both places.
fn security_context(context: Option<&Value>, who: &str) -> Result<(), String> {
    let Some(context) = context else { return Ok(()) };
    if str_at(context, "/seccompProfile/type") == Some("Unconfined") {
        return Err(format!("{who} runs without seccomp (baseline)"));
    }
    if str_at(context, "/appArmorProfile/type") == Some("Unconfined") {
        return Err(format!("{who} runs without AppArmor (baseline)"));
    }
    if is_true(context, "/windowsOptions/hostProcess") {
        return Err(format!("{who} is a Windows host process (baseline)"));
    }
    if let Some(selinux) = context.get("seLinuxOptions") {
        let kind = str_at(selinux, "/type").unwrap_or("");
        if !SELINUX_TYPES.contains(&kind) || selinux.get("user").is_some() || selinux.get("role").is_some() {
            return Err(format!("{who} sets SELinux options (baseline)"));
        }
    }
    Ok(())
}

fn restricted(spec: &Value, extra: &BTreeSet<String>) -> Result<(), String> {
    if let Some(volume) = items(spec, "volumes").find(|v| {
        v.as_object().is_some_and(|o| {
            o.keys()
                .any(|k| k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()))
        })
    }) {
        return Err(format!(
            "volume {} is of a type the restricted profile does not allow",
            str_at(volume, "/name").unwrap_or("?")
        ));
    }
    let pod = spec.get("securityContext");
    let pod_non_root = pod.is_some_and(|c| is_true(c, "/runAsNonRoot"));
    let pod_seccomp = pod.and_then(|c| str_at(c, "/seccompProfile/type"));
    if pod.and_then(|c| c.pointer("/runAsUser")).and_then(Value::as_i64) == Some(0) {
        return Err("the pod runs as user 0 (restricted)".into());
    }
    for (name, container) in containers(spec) {
        let context = container.get("securityContext");
        let at = |p: &str| context.and_then(|c| c.pointer(p));
        if at("/allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false) {
            return Err(format!(
                "container {name} must set allowPrivilegeEscalation: false (restricted)"
            ));
        }
        let non_root = at("/runAsNonRoot")
            .and_then(Value::as_bool)
            .unwrap_or(pod_non_root);
        if !non_root || at("/runAsUser").and_then(Value::as_i64) == Some(0) {
            return Err(format!("container {name} must run as non-root (restricted)"));
        }
        let seccomp = at("/seccompProfile/type").and_then(Value::as_str).or(pod_seccomp);
        if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            return Err(format!(
                "container {name} needs a RuntimeDefault or Localhost seccomp profile (restricted)"
            ));
        }
        let context = context.cloned().unwrap_or(Value::Null);
        if !items_at(&context, "/capabilities/drop").any(|c| c == "ALL") {
            return Err(format!(
                "container {name} must drop ALL capabilities (restricted)"
            ));
        }
        if let Some(cap) =
            items_at(&context, "/capabilities/add").find(|c| *c != "NET_BIND_SERVICE" && !extra.contains(*c))
        {
            return Err(format!("container {name} adds capability {cap} (restricted)"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(profile: Profile) -> ContentRules {
        ContentRules {
            pod_security: profile,
            ..ContentRules::default()
        }
    }

    fn pod(extra: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "ray", "image": "ray"}]});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        spec
    }

    #[test]
    fn baseline_refuses_host_access_privilege_and_capabilities() {
        let baseline = rules(Profile::Baseline);
        assert!(check(&pod(json!({})), &baseline).is_ok());
        let ok_caps =
            json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}]});
        assert!(check(&pod(ok_caps), &baseline).is_ok());
        for (extra, needle) in [
            (json!({"hostNetwork": true}), "hostNetwork"),
            (json!({"hostPID": true}), "hostPID"),
            (json!({"hostIPC": true}), "hostIPC"),
            (
                json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
                "hostPath",
            ),
            (
                json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]}),
                "privileged",
            ),
            (
                json!({"initContainers": [{"name": "i", "securityContext": {"privileged": true}}]}),
                "privileged",
            ),
            (
                json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}),
                "SYS_ADMIN",
            ),
            (
                json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
                "hostPort",
            ),
            (
                json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
                "seccomp",
            ),
            (
                json!({"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|x"}]}}),
                "sysctl",
            ),
        ] {
            let e = check(&pod(extra.clone()), &baseline).err().unwrap_or_default();
            assert!(e.contains(needle), "{extra}: {e:?}");
            assert!(check(&pod(extra), &rules(Profile::Privileged)).is_ok());
        }
    }

    #[test]
    fn extra_capabilities_are_allowed_when_the_policy_lists_them() {
        let mut baseline = rules(Profile::Baseline);
        let ptrace = json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}}]});
        assert!(check(&pod(ptrace.clone()), &baseline).is_err());
        baseline.extra_capabilities.insert("SYS_PTRACE".into());
        assert!(check(&pod(ptrace), &baseline).is_ok());
    }

    #[test]
    fn restricted_needs_non_root_no_escalation_dropped_capabilities_and_seccomp() {
        let restricted = rules(Profile::Restricted);
        let good = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        });
        assert!(check(&good, &restricted).is_ok());
        assert!(check(&pod(json!({})), &restricted).is_err());
        let mut nfs = good.clone();
        nfs["volumes"] = json!([{"name": "v", "nfs": {"server": "x", "path": "/"}}]);
        assert!(check(&nfs, &restricted).is_err());
        let mut root = good;
        root["securityContext"]["runAsUser"] = json!(0);
        assert!(check(&root, &restricted).is_err());
    }
}
