//! The `ray start` command line KubeRay generates from a group's `rayStartParams`, its `resources` and
//! `labels` fields and the Ray container's resource limits. The exact text matters: it is both the
//! container's argument and the `KUBERAY_GEN_RAY_START_CMD` variable that users' own commands run.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;

use crate::{
    consts::{DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_METRICS_PORT},
    quantity::Quantity,
};

pub type Params = BTreeMap<String, String>;

/// Options that take `=true`/`=false` explicitly; every other boolean is a bare switch.
const EXPLICIT_BOOLEAN_OPTIONS: [&str; 3] = ["log-color", "include-dashboard", "include-log-monitor"];

/// Container resources that Ray knows under another name.
const CUSTOM_ACCELERATORS: [(&str, &str); 2] = [
    ("aws.amazon.com/neuroncore", "neuron_cores"),
    ("google.com/tpu", "TPU"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    Head,
    Worker,
}

impl NodeType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Head => "head",
            Self::Worker => "worker",
        }
    }
}

/// Whether a container resource name is a GPU: `*gpu`, or an NVIDIA MIG slice `nvidia.com/mig-<n>g.<m>gb`.
pub fn is_gpu_resource(name: &str) -> bool {
    if name.ends_with("gpu") {
        return true;
    }
    let Some(rest) = name.strip_suffix("gb") else {
        return false;
    };
    rest.match_indices("nvidia.com/mig-").any(|(at, prefix)| {
        let slice = &rest[at + prefix.len()..];
        slice.split_once("g.").is_some_and(|(count, memory)| {
            !count.is_empty()
                && !memory.is_empty()
                && count.bytes().all(|b| b.is_ascii_digit())
                && memory.bytes().all(|b| b.is_ascii_digit())
        })
    })
}

/// The group's `resources` field replaces `--num-cpus`, `--memory`, `--num-gpus` and `--resources`.
pub fn apply_group_resources(params: &mut Params, resources: Option<&BTreeMap<String, String>>) {
    let Some(resources) = resources.filter(|r| !r.is_empty()) else {
        return;
    };
    let mut custom = BTreeMap::new();
    for (name, text) in resources {
        let Some(quantity) = Quantity::parse(text) else {
            continue;
        };
        let lower = name.to_lowercase();
        if lower == "cpu" {
            params.insert("num-cpus".into(), quantity.ceil().to_string());
        } else if lower == "memory" {
            params.insert("memory".into(), quantity.ceil().to_string());
        } else if is_gpu_resource(&lower) {
            params.insert("num-gpus".into(), quantity.ceil().to_string());
        } else {
            custom.insert(name.clone(), quantity.as_f64());
        }
    }
    if !custom.is_empty() {
        params.insert("resources".into(), format!("'{}'", json_float_map(&custom)));
    }
}

/// The group's `labels` field becomes `--labels=k1=v1,k2=v2` (sorted).
pub fn apply_group_labels(params: &mut Params, labels: Option<&BTreeMap<String, String>>) {
    let Some(labels) = labels.filter(|l| !l.is_empty()) else {
        return;
    };
    let joined = labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    params.insert("labels".into(), joined);
}

/// Defaults KubeRay always adds: the head's address for workers, a reachable dashboard on the head, the
/// metrics and dashboard-agent ports the probes and Services expect, and `--block` so the container lives
/// as long as Ray does.
pub fn set_missing(params: &mut Params, node: NodeType, head_port: &str, fqdn: &str) {
    match node {
        NodeType::Worker => {
            params
                .entry("address".into())
                .or_insert_with(|| format!("{fqdn}:{head_port}"));
        }
        NodeType::Head => {
            params
                .entry("dashboard-host".into())
                .or_insert_with(|| "0.0.0.0".into());
        }
    }
    params
        .entry("metrics-export-port".into())
        .or_insert_with(|| DEFAULT_METRICS_PORT.to_string());
    params.insert("block".into(), "true".into());
    params
        .entry("dashboard-agent-listen-port".into())
        .or_insert_with(|| DEFAULT_DASHBOARD_AGENT_LISTEN_PORT.to_string());
}

/// Fills `--num-cpus` (CPU limit, else request), `--memory` (memory limit), `--num-gpus` and custom
/// accelerators (from limits) unless the user set them, then renders the command.
pub fn command(node: NodeType, params: &mut Params, resources: Option<&ResourceRequirements>) -> String {
    let limits = resources.and_then(|r| r.limits.as_ref());
    let requests = resources.and_then(|r| r.requests.as_ref());
    let quantity =
        |list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         name: &str| {
            list.and_then(|l| l.get(name))
                .map(|q| Quantity::parse_or_zero(&q.0))
                .filter(|q| !q.is_zero())
        };
    if !params.contains_key("num-cpus")
        && let Some(cpu) = quantity(limits, "cpu").or_else(|| quantity(requests, "cpu"))
    {
        params.insert("num-cpus".into(), cpu.ceil().to_string());
    }
    if !params.contains_key("memory")
        && let Some(memory) = quantity(limits, "memory")
    {
        params.insert("memory".into(), memory.ceil().to_string());
    }
    if let Some(limits) = limits.filter(|l| !l.is_empty()) {
        add_accelerators(params, limits);
    }
    let flags = render(params);
    match node {
        NodeType::Head => format!("ray start --head {flags}"),
        NodeType::Worker => format!("ray start {flags}"),
    }
}

fn add_accelerators(
    params: &mut Params,
    limits: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) {
    // KubeRay gives up on accelerators entirely when `--resources` is not valid JSON.
    let Some(mut custom) = parse_resources(params.get("resources").map(String::as_str)) else {
        return;
    };
    let mut accelerator_added = CUSTOM_ACCELERATORS
        .iter()
        .any(|(_, ray_name)| custom.contains_key(*ray_name));
    for (name, text) in limits {
        let quantity = Quantity::parse_or_zero(&text.0);
        if !params.contains_key("num-gpus") && is_gpu_resource(name) && !quantity.is_zero() {
            params.insert("num-gpus".into(), quantity.ceil().to_string());
        }
        if !accelerator_added
            && let Some((_, ray_name)) = CUSTOM_ACCELERATORS.iter().find(|(k, _)| k == name)
            && !quantity.is_zero()
        {
            if !custom.contains_key(*ray_name) {
                custom.insert((*ray_name).to_string(), quantity.as_f64());
                params.insert("resources".into(), format!("'{}'", json_float_map(&custom)));
            }
            accelerator_added = true;
        }
    }
}

/// `--resources` as a map; the value may be wrapped in quotes or backticks.
fn parse_resources(text: Option<&str>) -> Option<BTreeMap<String, f64>> {
    match text {
        None => Some(BTreeMap::new()),
        Some(text) => serde_json::from_str(text.trim_matches(['\'', '"', '`', ' '])).ok(),
    }
}

/// Flags sorted by name, each surrounded by spaces as KubeRay writes them.
pub fn render(params: &Params) -> String {
    let mut flags = String::new();
    for (option, value) in params {
        let lower = value.to_lowercase();
        if (lower == "true" || lower == "false") && !EXPLICIT_BOOLEAN_OPTIONS.contains(&option.as_str()) {
            if lower == "true" {
                flags.push_str(&format!(" --{option} "));
            }
        } else {
            flags.push_str(&format!(" --{option}={value} "));
        }
    }
    flags
}

/// A JSON object of numbers written as Go's `encoding/json` writes a `map[string]float64`.
fn json_float_map(map: &BTreeMap<String, f64>) -> String {
    let entries: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", serde_json::Value::String(k.clone()), go_float(*v)))
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// Go's shortest float formatting: plain decimals, exponent form outside `[1e-6, 1e21)`.
fn go_float(value: f64) -> String {
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
            _ => text,
        }
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    use super::*;

    fn limits(pairs: &[(&str, &str)]) -> ResourceRequirements {
        ResourceRequirements {
            limits: Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), Q((*v).to_string())))
                    .collect(),
            ),
            ..ResourceRequirements::default()
        }
    }

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn accelerators_come_from_limits_like_kuberay() {
        type Case<'a> = (NodeType, Params, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case<'_>; 8] = [
            (
                NodeType::Worker,
                params(&[]),
                &[("nvidia.com/gpu", "1")],
                "ray start  --num-gpus=1 ",
            ),
            (
                NodeType::Worker,
                params(&[]),
                &[("nvidia.com/mig-2g.32gb", "1")],
                "ray start  --num-gpus=1 ",
            ),
            (
                NodeType::Worker,
                params(&[]),
                &[("google.com/tpu", "4")],
                r#"ray start  --resources='{"TPU":4}' "#,
            ),
            (
                NodeType::Head,
                params(&[]),
                &[
                    ("google.com/tpu", "8"),
                    ("aws.amazon.com/neuroncore", "4"),
                    ("nvidia.com/gpu", "1"),
                ],
                r#"ray start --head  --num-gpus=1  --resources='{"neuron_cores":4}' "#,
            ),
            (
                NodeType::Head,
                params(&[("resources", r#""{"custom_resource":2}""#)]),
                &[("aws.amazon.com/neuroncore", "4")],
                r#"ray start --head  --resources='{"custom_resource":2,"neuron_cores":4}' "#,
            ),
            (
                NodeType::Head,
                params(&[("resources", r#"'{"custom_resource":2,"TPU":4}'"#)]),
                &[("google.com/tpu", "8")],
                r#"ray start --head  --resources='{"custom_resource":2,"TPU":4}' "#,
            ),
            (
                NodeType::Head,
                params(&[("resources", "{")]),
                &[("aws.amazon.com/neuroncore", "4")],
                "ray start --head  --resources={ ",
            ),
            (
                NodeType::Head,
                params(&[("include-log-monitor", "false")]),
                &[],
                "ray start --head  --include-log-monitor=false ",
            ),
        ];
        for (node, mut p, l, expected) in cases {
            assert_eq!(command(node, &mut p, Some(&limits(l))), expected);
        }
    }

    #[test]
    fn cpu_and_memory_fall_back_from_limits_to_requests() {
        let mut p = params(&[]);
        let resources = ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), Q("2".into())),
                ("memory".to_string(), Q("1Gi".into())),
            ])),
            ..ResourceRequirements::default()
        };
        // Memory comes only from the limit; CPU falls back to the request.
        assert_eq!(
            command(NodeType::Worker, &mut p, Some(&resources)),
            "ray start  --num-cpus=2 "
        );
    }

    #[test]
    fn defaults_booleans_and_sorting() {
        let mut p = params(&[
            ("num-cpus", "0"),
            ("disable-usage-stats", "true"),
            ("include-dashboard", "false"),
        ]);
        set_missing(&mut p, NodeType::Head, "6379", "x");
        assert_eq!(
            render(&p),
            " --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  --disable-usage-stats  \
             --include-dashboard=false  --metrics-export-port=8080  --num-cpus=0 "
        );
        let mut w = params(&[("no-monitor", "false")]);
        set_missing(
            &mut w,
            NodeType::Worker,
            "6380",
            "c-head-svc.ns.svc.cluster.local",
        );
        assert_eq!(w["address"], "c-head-svc.ns.svc.cluster.local:6380");
        assert!(!render(&w).contains("no-monitor"));
    }

    #[test]
    fn group_fields_override_params() {
        let mut p = params(&[]);
        let resources = BTreeMap::from([
            ("CPU".to_string(), "1500m".to_string()),
            ("memory".to_string(), "1Gi".to_string()),
            ("nvidia.com/gpu".to_string(), "2".to_string()),
            ("custom".to_string(), "0.5".to_string()),
            ("bad".to_string(), "x".to_string()),
        ]);
        apply_group_resources(&mut p, Some(&resources));
        apply_group_labels(
            &mut p,
            Some(&BTreeMap::from([
                ("zone".to_string(), "a".to_string()),
                ("gpu".to_string(), "t4".to_string()),
            ])),
        );
        assert_eq!(p["num-cpus"], "2");
        assert_eq!(p["memory"], "1073741824");
        assert_eq!(p["num-gpus"], "2");
        assert_eq!(p["resources"], r#"'{"custom":0.5}'"#);
        assert_eq!(p["labels"], "gpu=t4,zone=a");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-7), "1e-7");
        assert_eq!(go_float(4.0), "4");
    }
}
