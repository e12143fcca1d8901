//! The table of the operator's permissions in `docs/install.md` ("Permissions") is the rules' sources, so the
//! list the installed ServiceAccount is checked against (`install.rs`) is the documented one.

use std::collections::BTreeMap;

use kuberay_deploy_tests::{
    Permission,
    rules::{Permissions, Sources, repo_root},
};

const HEADER: &str = "| API group | Resources | Verbs | Mode |";

/// The permissions `docs/install.md` documents: in direct mode, what proxy mode adds, what ReconcilePlugin
/// resources need cluster-wide, and what each batch scheduler adds (mode `` `--batch-scheduler=NAME` ``).
fn documented() -> (
    Permissions,
    Permissions,
    Permissions,
    BTreeMap<String, Permissions>,
) {
    let page = std::fs::read_to_string(repo_root().join("docs/install.md")).unwrap();
    let table = page
        .split_once(HEADER)
        .expect("the permission table of docs/install.md")
        .1;
    let (mut both, mut proxy_only, mut plugins) =
        (Permissions::new(), Permissions::new(), Permissions::new());
    let mut schedulers: BTreeMap<String, Permissions> = BTreeMap::new();
    let mut previous: Vec<String> = Vec::new();
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let [group, resources, verbs, mode] = cells[..] else {
            panic!("row {row:?}")
        };
        let group = if group == "core" {
            String::new()
        } else {
            group.replace('`', "")
        };
        let named: Vec<String> = resources
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect();
        let resources = match resources.strip_prefix("the same") {
            Some(_) => previous.iter().map(|r| format!("{r}{}", named[0])).collect(),
            None => named,
        };
        let scheduler = mode
            .trim_matches('`')
            .strip_prefix("--batch-scheduler=")
            .map(str::to_string);
        let target = match (mode, scheduler) {
            (_, Some(name)) => schedulers.entry(name).or_default(),
            ("proxy only", None) => &mut proxy_only,
            ("plugin resources", None) => &mut plugins,
            _ => &mut both,
        };
        for resource in &resources {
            for verb in verbs.split(',').map(str::trim) {
                target.insert(Permission::new(&group, resource, verb));
            }
        }
        if !resources.iter().any(|r| r.contains('/')) {
            previous = resources;
        }
    }
    (both, proxy_only, plugins, schedulers)
}

#[test]
fn the_install_guide_documents_exactly_the_rules_of_each_mode() {
    let sources = Sources::read().unwrap();
    let (direct, proxy, plugins, schedulers) = documented();
    assert_eq!(direct, sources.direct, "direct routing");
    assert_eq!(proxy, sources.proxy, "what proxy routing adds");
    assert_eq!(plugins, sources.plugins, "what ReconcilePlugin resources need");
    let shipped: BTreeMap<String, Permissions> = sources
        .batch_schedulers
        .iter()
        .map(|(name, rules)| (name.to_string(), rules.clone()))
        .collect();
    assert_eq!(schedulers, shipped, "what the batch schedulers add");
}
