//! RBAC rules as sets of single permissions (one API group, resource, verb and resource name each), so that
//! rules written differently but granting the same are equal, and the sources of the rules of each mode.

use std::{
    collections::BTreeSet,
    fmt,
    path::{Path, PathBuf},
};

use serde_json::Value;

use crate::{Error, Result, manifests};

/// One permission: `verb` on `resource` (`pods`, `rayclusters/status`) of `group` (`""` for the core group),
/// on every object or only the one named `name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Permission {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource, with its subresource after a `/`.
    pub resource: String,
    /// The verb.
    pub verb: String,
    /// The one object it is limited to, if any.
    pub name: Option<String>,
}

impl Permission {
    /// `verb` on `resource` of `group`, on every object.
    pub fn new(group: &str, resource: &str, verb: &str) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
            verb: verb.into(),
            name: None,
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)?;
        match &self.name {
            Some(name) => write!(f, " ({name})"),
            None => Ok(()),
        }
    }
}

/// A set of permissions.
pub type Permissions = BTreeSet<Permission>;

/// The permissions of a `rules` list (of a Role or ClusterRole).
pub fn expand(rules: &Value) -> Result<Permissions> {
    let rules = rules
        .as_array()
        .ok_or_else(|| Error::Parse(format!("rules is not a list: {rules}")))?;
    let mut permissions = Permissions::new();
    for rule in rules {
        let names = strings(&rule["resourceNames"]);
        let names: Vec<Option<String>> = if names.is_empty() {
            vec![None]
        } else {
            names.into_iter().map(Some).collect()
        };
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    for name in &names {
                        permissions.insert(Permission {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(permissions)
}

fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The permissions of every object of `kind` (`ClusterRole`, `Role`) in `objects` whose namespace is
/// `namespace` (`None`: any), together.
pub fn granted_by(objects: &[Value], kind: &str, namespace: Option<&str>) -> Result<Permissions> {
    let mut permissions = Permissions::new();
    for object in manifests::of_kind(objects, kind) {
        if namespace.is_none_or(|ns| manifests::namespace(object) == ns) {
            permissions.extend(expand(&object["rules"])?);
        }
    }
    Ok(permissions)
}

/// What every authenticated user may do (`system:basic-user`): review its own access and identity.
pub fn authenticated() -> Permissions {
    [
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
        ("authentication.k8s.io", "selfsubjectreviews"),
    ]
    .into_iter()
    .map(|(group, resource)| Permission::new(group, resource, "create"))
    .collect()
}

/// The checkout this crate belongs to.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The one source of the operator's rules (the kustomize manifests, which the chart reads too).
#[derive(Debug, Clone)]
pub struct Sources {
    /// What the operator needs in a watched namespace with direct routing (`base/rbac.yaml`).
    pub direct: Permissions,
    /// What proxy routing adds (`overlays/proxy/rbac-proxy.yaml`).
    pub proxy: Permissions,
    /// Leader election in the operator's namespace (`base/leader-election.yaml`).
    pub leader_election: Permissions,
    /// What serving `ReconcilePlugin` resources needs everywhere, whatever the watched namespaces (the
    /// ClusterRole of `base/rbac-plugins.yaml`).
    pub plugins: Permissions,
    /// Events about those resources, in [`EVENTS_OF_CLUSTER_SCOPED`] (a Role of `base/rbac-plugins.yaml`).
    pub plugin_events: Permissions,
    /// Their pull Secrets, in the operator's namespace (the other Role of `base/rbac-plugins.yaml`).
    pub pull_secrets: Permissions,
    /// What a batch scheduler with PodGroups adds (`components/<scheduler>/rbac-<scheduler>.yaml`), by its
    /// `--batch-scheduler` name: `volcano` and `scheduler-plugins`.
    pub batch_schedulers: std::collections::BTreeMap<&'static str, Permissions>,
}

/// The namespace Events about cluster-scoped objects are recorded in (kube's event recorder's choice).
pub const EVENTS_OF_CLUSTER_SCOPED: &str = "default";

impl Sources {
    /// Reads them from `deploy/kustomize/`.
    pub fn read() -> Result<Self> {
        let dir = repo_root().join("deploy/kustomize");
        let read = |file: &str| -> Result<Vec<Value>> {
            let path = dir.join(file);
            let text =
                std::fs::read_to_string(&path).map_err(Error::io(format!("reading {}", path.display())))?;
            manifests::parse(&text)
        };
        let plugins = read("base/rbac-plugins.yaml")?;
        Ok(Self {
            direct: granted_by(&read("base/rbac.yaml")?, "ClusterRole", None)?,
            proxy: granted_by(&read("overlays/proxy/rbac-proxy.yaml")?, "ClusterRole", None)?,
            leader_election: granted_by(&read("base/leader-election.yaml")?, "Role", None)?,
            plugins: granted_by(&plugins, "ClusterRole", None)?,
            plugin_events: granted_by(&plugins, "Role", Some(EVENTS_OF_CLUSTER_SCOPED))?,
            pull_secrets: granted_by(&plugins, "Role", Some("kuberay-system"))?,
            batch_schedulers: ["volcano", "scheduler-plugins"]
                .into_iter()
                .map(|s| {
                    let file = format!("components/{s}/rbac-{s}.yaml");
                    Ok((s, granted_by(&read(&file)?, "ClusterRole", None)?))
                })
                .collect::<Result<_>>()?,
        })
    }

    /// What the operator's namespace grants it: leader election and pull Secrets.
    pub fn own_namespace(&self) -> Permissions {
        self.leader_election.union(&self.pull_secrets).cloned().collect()
    }

    /// What the operator needs in a watched namespace in the routing mode (`proxy` or not).
    pub fn watched(&self, proxy: bool) -> Permissions {
        let mut permissions = self.direct.clone();
        if proxy {
            permissions.extend(self.proxy.iter().cloned());
        }
        permissions
    }
}
