//! Pod Security Standards (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>) read off
//! any pod-shaped part of an object: each setting the `baseline` or `restricted` profile forbids becomes a
//! [`Finding`] with a signature that names the setting and its value, not where it stands, so that a
//! setting the plugin copied from the user's request (another object, another place) is recognised there.
//! Whether a finding is allowed is decided in `admission::security`: against the namespace's level when
//! the user asked for it, against the plugin's profile when the plugin invented it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{each, str_at, strings_at};
use crate::policy::Profile;

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

/// The annotation prefix of a container's AppArmor profile (deprecated by `appArmorProfile`, still honoured).
const APPARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The lowest profile that forbids a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Baseline,
    Restricted,
}

/// A setting a Pod Security profile forbids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    /// The setting and its value (`capability:SYS_PTRACE`, `seccomp:Unconfined`), where it stands left out.
    pub signature: String,
    /// For people: where and what (`container ray-head runs without seccomp`).
    pub message: String,
    /// The capability, for findings an administrator may allow with `extraCapabilities`.
    pub capability: Option<String>,
}

impl Finding {
    fn new(level: Level, signature: String, message: String) -> Self {
        Self {
            level,
            signature,
            message,
            capability: None,
        }
    }
}

/// Whether `profile` (with `extra` capabilities added) allows `finding`.
pub fn allows(profile: Profile, finding: &Finding, extra: &BTreeSet<String>) -> bool {
    if finding.capability.as_ref().is_some_and(|cap| extra.contains(cap)) {
        return true;
    }
    match profile {
        Profile::Privileged => true,
        Profile::Baseline => finding.level == Level::Restricted,
        Profile::Restricted => false,
    }
}

fn is_true(value: &Value, pointer: &str) -> bool {
    value.pointer(pointer).and_then(Value::as_bool) == Some(true)
}

/// Whether `value` is a pod spec: an object with a list of containers.
pub fn is_pod_spec(value: &Value) -> bool {
    value.get("containers").is_some_and(Value::is_array)
}

/// Every container of a pod spec (init and ephemeral ones included), with its name.
pub fn containers(spec: &Value) -> impl Iterator<Item = (&str, &Value)> {
    ["containers", "initContainers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |key| spec.get(key).and_then(Value::as_array).into_iter().flatten())
        .map(|c| (str_at(c, "/name").unwrap_or("?"), c))
}

/// Every finding of a pod spec, under both profiles.
pub fn pod_findings(spec: &Value, out: &mut Vec<Finding>) {
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if is_true(spec, &format!("/{host}")) {
            out.push(Finding::new(
                Level::Baseline,
                host.into(),
                format!("the pod uses {host}"),
            ));
        }
    }
    volumes(spec, out);
    let sysctls = spec
        .pointer("/securityContext/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for name in sysctls.filter_map(|s| str_at(s, "/name")) {
        if !SAFE_SYSCTLS.contains(&name) {
            out.push(Finding::new(
                Level::Baseline,
                format!("sysctl:{name}"),
                format!("the pod sets sysctl {name}"),
            ));
        }
    }
    let pod = spec.get("securityContext");
    shared_context(pod, "the pod", out);
    if pod.and_then(|c| c.get("runAsUser")).and_then(Value::as_i64) == Some(0) {
        out.push(Finding::new(
            Level::Restricted,
            "run-as-user:0".into(),
            "the pod runs as user 0".into(),
        ));
    }
    for (name, container) in containers(spec) {
        container_findings(container, pod, &format!("container {name}"), out);
    }
}

fn volumes(spec: &Value, out: &mut Vec<Finding>) {
    for volume in each(spec, "/volumes") {
        let name = str_at(volume, "/name").unwrap_or("?");
        if let Some(path) = volume.get("hostPath") {
            let path = str_at(path, "/path").unwrap_or_default();
            out.push(Finding::new(
                Level::Baseline,
                format!("host-path:{path}"),
                format!("volume {name} is a hostPath volume ({path:?})"),
            ));
            continue;
        }
        let other = volume.as_object().and_then(|o| {
            o.keys()
                .find(|k| *k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()))
        });
        if let Some(kind) = other {
            out.push(Finding::new(
                Level::Restricted,
                format!("volume-type:{kind}"),
                format!("volume {name} is of type {kind}"),
            ));
        }
    }
}

/// A container (or a container-shaped part, such as a RayCluster's `autoscalerOptions`): its own settings,
/// and those it inherits from the pod's security context (`pod`), if any.
pub fn container_findings(container: &Value, pod: Option<&Value>, who: &str, out: &mut Vec<Finding>) {
    let context = container.get("securityContext");
    let at = |p: &str| context.and_then(|c| c.pointer(p));
    if context.is_some_and(|c| is_true(c, "/privileged")) {
        out.push(Finding::new(
            Level::Baseline,
            "privileged".into(),
            format!("{who} is privileged"),
        ));
    }
    let added: Vec<&str> = context
        .into_iter()
        .flat_map(|c| strings_at(c, "/capabilities/add"))
        .collect();
    for cap in &added {
        let (level, signature) = if BASELINE_CAPABILITIES.contains(cap) {
            if *cap == "NET_BIND_SERVICE" {
                continue;
            }
            (Level::Restricted, format!("restricted-capability:{cap}"))
        } else {
            (Level::Baseline, format!("capability:{cap}"))
        };
        out.push(Finding {
            capability: Some((*cap).to_string()),
            ..Finding::new(level, signature, format!("{who} adds capability {cap}"))
        });
    }
    for port in each(container, "/ports") {
        let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host_port != 0 {
            out.push(Finding::new(
                Level::Baseline,
                format!("host-port:{host_port}"),
                format!("{who} uses hostPort {host_port}"),
            ));
        }
    }
    if let Some(mount) = at("/procMount")
        .and_then(Value::as_str)
        .filter(|m| *m != "Default")
    {
        out.push(Finding::new(
            Level::Baseline,
            format!("proc-mount:{mount}"),
            format!("{who} sets procMount {mount}"),
        ));
    }
    shared_context(context, who, out);
    restricted_container(context, pod, who, out);
}

/// The restricted profile's requirements of a container: each missing one is a finding.
fn restricted_container(context: Option<&Value>, pod: Option<&Value>, who: &str, out: &mut Vec<Finding>) {
    let at = |p: &str| context.and_then(|c| c.pointer(p));
    let pod_at = |p: &str| pod.and_then(|c| c.pointer(p));
    let mut require = |missing: bool, signature: &str, what: &str| {
        if missing {
            out.push(Finding::new(
                Level::Restricted,
                signature.into(),
                format!("{who} {what}"),
            ));
        }
    };
    require(
        at("/allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false),
        "allow-privilege-escalation",
        "does not set allowPrivilegeEscalation: false",
    );
    let non_root = at("/runAsNonRoot")
        .or_else(|| pod_at("/runAsNonRoot"))
        .and_then(Value::as_bool);
    require(
        non_root != Some(true),
        "run-as-non-root",
        "does not set runAsNonRoot: true",
    );
    require(
        at("/runAsUser").and_then(Value::as_i64) == Some(0),
        "run-as-user:0",
        "runs as user 0",
    );
    let seccomp = at("/seccompProfile/type")
        .or_else(|| pod_at("/seccompProfile/type"))
        .and_then(Value::as_str);
    require(
        !matches!(seccomp, Some("RuntimeDefault" | "Localhost")),
        "seccomp-unset",
        "has no RuntimeDefault or Localhost seccomp profile",
    );
    let dropped = context.is_some_and(|c| strings_at(c, "/capabilities/drop").any(|c| c == "ALL"));
    require(!dropped, "capabilities-kept", "does not drop ALL capabilities");
}

/// What the baseline profile forbids in both a pod's and a container's security context.
fn shared_context(context: Option<&Value>, who: &str, out: &mut Vec<Finding>) {
    let Some(context) = context else { return };
    if str_at(context, "/seccompProfile/type") == Some("Unconfined") {
        out.push(Finding::new(
            Level::Baseline,
            "seccomp:Unconfined".into(),
            format!("{who} runs without seccomp"),
        ));
    }
    if str_at(context, "/appArmorProfile/type") == Some("Unconfined") {
        out.push(Finding::new(
            Level::Baseline,
            "apparmor:unconfined".into(),
            format!("{who} runs without AppArmor"),
        ));
    }
    if is_true(context, "/windowsOptions/hostProcess") {
        out.push(Finding::new(
            Level::Baseline,
            "windows-host-process".into(),
            format!("{who} is a Windows host process"),
        ));
    }
    if let Some(selinux) = context.get("seLinuxOptions") {
        let kind = str_at(selinux, "/type").unwrap_or("");
        let user = str_at(selinux, "/user");
        let role = str_at(selinux, "/role");
        if !SELINUX_TYPES.contains(&kind) || user.is_some() || role.is_some() {
            out.push(Finding::new(
                Level::Baseline,
                format!(
                    "selinux:{kind}:{}:{}",
                    user.unwrap_or_default(),
                    role.unwrap_or_default()
                ),
                format!("{who} sets SELinux options"),
            ));
        }
    }
}

/// The AppArmor (and legacy seccomp) annotations of an `annotations` map: `unconfined` is a baseline finding.
pub fn annotation_findings(annotations: &serde_json::Map<String, Value>, out: &mut Vec<Finding>) {
    for (key, value) in annotations {
        let value = value.as_str().unwrap_or_default();
        if let Some(container) = key.strip_prefix(APPARMOR_ANNOTATION) {
            let allowed = value.is_empty() || value == "runtime/default" || value.starts_with("localhost/");
            if !allowed {
                out.push(Finding::new(
                    Level::Baseline,
                    format!("apparmor:{}", value.to_ascii_lowercase()),
                    format!("container {container} runs with AppArmor profile {value:?} (annotation)"),
                ));
            }
        } else if (key == "seccomp.security.alpha.kubernetes.io/pod"
            || key.starts_with("container.seccomp.security.alpha.kubernetes.io/"))
            && value.eq_ignore_ascii_case("unconfined")
        {
            out.push(Finding::new(
                Level::Baseline,
                "seccomp:Unconfined".into(),
                format!("annotation {key} turns seccomp off"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn findings(spec: Value) -> Vec<Finding> {
        let mut out = Vec::new();
        pod_findings(&spec, &mut out);
        out
    }

    fn pod(extra: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "ray", "image": "ray"}]});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        spec
    }

    fn baseline(spec: Value) -> Vec<String> {
        findings(spec)
            .into_iter()
            .filter(|f| !allows(Profile::Baseline, f, &BTreeSet::new()))
            .map(|f| f.signature)
            .collect()
    }

    #[test]
    fn baseline_findings_name_the_setting_and_its_value() {
        assert!(baseline(pod(json!({}))).is_empty());
        let ok_caps =
            json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}]});
        assert!(baseline(pod(ok_caps)).is_empty());
        for (extra, signature) in [
            (json!({"hostNetwork": true}), "hostNetwork"),
            (json!({"hostPID": true}), "hostPID"),
            (json!({"hostIPC": true}), "hostIPC"),
            (
                json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
                "host-path:/",
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
                "capability:SYS_ADMIN",
            ),
            (
                json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
                "host-port:80",
            ),
            (
                json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
                "seccomp:Unconfined",
            ),
            (
                json!({"containers": [{"name": "c", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}),
                "apparmor:unconfined",
            ),
            (
                json!({"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|x"}]}}),
                "sysctl:kernel.core_pattern",
            ),
        ] {
            assert_eq!(baseline(pod(extra.clone())), [signature], "{extra}");
            let all = findings(pod(extra));
            assert!(
                all.iter()
                    .all(|f| allows(Profile::Privileged, f, &BTreeSet::new()))
            );
        }
    }

    #[test]
    fn extra_capabilities_allow_exactly_their_capability() {
        let ptrace = pod(
            json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}}]}),
        );
        let found = findings(ptrace);
        let cap = found
            .iter()
            .find(|f| f.signature == "capability:SYS_PTRACE")
            .unwrap();
        assert!(!allows(Profile::Baseline, cap, &BTreeSet::new()));
        assert!(allows(Profile::Baseline, cap, &["SYS_PTRACE".to_string()].into()));
        assert!(!allows(Profile::Baseline, cap, &["SYS_ADMIN".to_string()].into()));
    }

    #[test]
    fn restricted_needs_non_root_no_escalation_dropped_capabilities_and_seccomp() {
        let good = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        });
        assert_eq!(findings(good.clone()), []);
        let bare: Vec<String> = findings(pod(json!({})))
            .into_iter()
            .map(|f| f.signature)
            .collect();
        assert_eq!(
            bare,
            [
                "allow-privilege-escalation",
                "run-as-non-root",
                "seccomp-unset",
                "capabilities-kept"
            ]
        );
        let mut nfs = good.clone();
        nfs["volumes"] = json!([{"name": "v", "nfs": {"server": "x", "path": "/"}}]);
        assert_eq!(findings(nfs)[0].signature, "volume-type:nfs");
        let mut root = good;
        root["securityContext"]["runAsUser"] = json!(0);
        let found = findings(root);
        assert_eq!(found[0].signature, "run-as-user:0");
        assert!(allows(Profile::Baseline, &found[0], &BTreeSet::new()));
        assert!(!allows(Profile::Restricted, &found[0], &BTreeSet::new()));
    }

    #[test]
    fn apparmor_and_legacy_seccomp_annotations_are_findings() {
        let mut out = Vec::new();
        let annotations = json!({
            "container.apparmor.security.beta.kubernetes.io/ray-head": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/ok": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/local": "localhost/x",
            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
            "unrelated": "unconfined",
        });
        annotation_findings(annotations.as_object().unwrap(), &mut out);
        let signatures: Vec<&str> = out.iter().map(|f| f.signature.as_str()).collect();
        assert_eq!(signatures, ["apparmor:unconfined", "seccomp:Unconfined"]);
    }
}
