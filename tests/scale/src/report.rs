//! Results of the runs and their Markdown tables.

use std::fmt::Write as _;

use serde::Serialize;

use crate::{audit::RequestCounts, operator::Flavor};

/// The figures of one operator on one workload.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub operator: String,
    pub workload: String,
    pub n: usize,
    pub startup_s: f64,
    pub first_create_to_done_s: f64,
    pub per_minute: f64,
    pub failed: usize,
    pub cpu_bringup_s: f64,
    /// CPU of the control plane (API server, etcd, controller-manager, simulated kubelet) over the same
    /// window: what the operator's requests and the objects it creates cost the cluster.
    pub control_plane_cpu_bringup_s: f64,
    pub cpu_steady_s: f64,
    pub steady_s: f64,
    pub peak_rss_mib: f64,
    pub requests_bringup: Option<RequestCounts>,
    /// The few seconds between the bring-up and the steady-state window.
    pub requests_settle: Option<RequestCounts>,
    pub requests_steady: Option<RequestCounts>,
    pub reconciles: f64,
    pub reconcile_p50_ms: Option<f64>,
    pub reconcile_p90_ms: Option<f64>,
    pub reconcile_p99_ms: Option<f64>,
    pub namespace_delete_s: f64,
}

impl RunResult {
    fn per_min(&self, count: u64) -> f64 {
        if self.steady_s > 0.0 {
            count as f64 * 60.0 / self.steady_s
        } else {
            f64::NAN
        }
    }
}

type Row = (&'static str, fn(&RunResult) -> Option<f64>);

fn verb(r: &RunResult, verb: &str) -> Option<f64> {
    r.requests_bringup
        .as_ref()
        .map(|c| c.by_verb.get(verb).copied().unwrap_or(0) as f64)
}

const RAYCLUSTER_ROWS: &[Row] = &[
    ("start-up to /readyz (s)", |r| Some(r.startup_s)),
    ("first create → all `ready` (s)", |r| {
        Some(r.first_create_to_done_s)
    }),
    ("CPU, start-up and bring-up (s)", |r| Some(r.cpu_bringup_s)),
    ("CPU per minute in steady state (s)", |r| {
        Some(r.cpu_steady_s * 60.0 / r.steady_s)
    }),
    ("control-plane CPU, start-up and bring-up (s)", |r| {
        Some(r.control_plane_cpu_bringup_s)
    }),
    ("peak RSS (MiB)", |r| Some(r.peak_rss_mib)),
    ("API writes per cluster, bring-up and the 5 s after", |r| {
        let writes = r.requests_bringup.as_ref()?.writes + r.requests_settle.as_ref()?.writes;
        Some(writes as f64 / r.n as f64)
    }),
    ("API requests, start-up and bring-up", |r| {
        r.requests_bringup.as_ref().map(|c| c.total as f64)
    }),
    ("· of which writes", |r| {
        r.requests_bringup.as_ref().map(|c| c.writes as f64)
    }),
    ("· get", |r| verb(r, "get")),
    ("· list", |r| verb(r, "list")),
    ("· watch", |r| verb(r, "watch")),
    ("· create", |r| verb(r, "create")),
    ("· update", |r| verb(r, "update")),
    ("· patch", |r| verb(r, "patch")),
    ("· delete", |r| verb(r, "delete")),
    ("API writes in the 5 s after all `ready`", |r| {
        r.requests_settle.as_ref().map(|c| c.writes as f64)
    }),
    ("API requests per minute in steady state", |r| {
        r.requests_steady.as_ref().map(|c| r.per_min(c.total))
    }),
    ("API writes in steady state", |r| {
        r.requests_steady.as_ref().map(|c| c.writes as f64)
    }),
    ("reconciles (histogram count)", |r| Some(r.reconciles)),
    ("reconcile p50 (ms)", |r| r.reconcile_p50_ms),
    ("reconcile p90 (ms)", |r| r.reconcile_p90_ms),
    ("reconcile p99 (ms)", |r| r.reconcile_p99_ms),
    ("namespace deletion until gone, operator running (s)", |r| {
        Some(r.namespace_delete_s)
    }),
];

const RAYJOB_ROWS: &[Row] = &[
    ("first create → all `Complete` (s)", |r| {
        Some(r.first_create_to_done_s)
    }),
    ("RayJobs completed per minute", |r| Some(r.per_minute)),
    ("RayJobs failed", |r| Some(r.failed as f64)),
    ("CPU, start-up and run (s)", |r| Some(r.cpu_bringup_s)),
    ("peak RSS (MiB)", |r| Some(r.peak_rss_mib)),
    ("API requests, start-up and run", |r| {
        r.requests_bringup.as_ref().map(|c| c.total as f64)
    }),
    ("· of which writes", |r| {
        r.requests_bringup.as_ref().map(|c| c.writes as f64)
    }),
    ("· create", |r| verb(r, "create")),
    ("· get", |r| verb(r, "get")),
    ("reconciles (histogram count)", |r| Some(r.reconciles)),
    ("reconcile p50 (ms)", |r| r.reconcile_p50_ms),
    ("reconcile p90 (ms)", |r| r.reconcile_p90_ms),
    ("reconcile p99 (ms)", |r| r.reconcile_p99_ms),
];

fn fmt(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() && v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.is_finite() => format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
        _ => "–".to_string(),
    }
}

fn ratio(ours: Option<f64>, theirs: Option<f64>) -> String {
    match (ours, theirs) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}", a / b),
        _ => "–".to_string(),
    }
}

/// One Markdown table: a row per figure, a column per operator and the ratios ours/KubeRay.
pub fn table(title: &str, results: &[RunResult], rayjobs: bool) -> String {
    let by = |f: Flavor| results.iter().find(|r| r.operator == f.key());
    let (c1, c8, ours) = (
        by(Flavor::KubeRayDefault),
        by(Flavor::KubeRayC8),
        by(Flavor::Ours),
    );
    let mut out = format!(
        "### {title}\n\n| | {} | {} | {} | ours/KubeRay (default) | ours/KubeRay (c8) |\n|---|---:|---:|---:|---:|---:|\n",
        Flavor::KubeRayDefault.title(),
        Flavor::KubeRayC8.title(),
        Flavor::Ours.title()
    );
    let rows = if rayjobs { RAYJOB_ROWS } else { RAYCLUSTER_ROWS };
    for (name, get) in rows {
        let (a, b, o) = (c1.and_then(get), c8.and_then(get), ours.and_then(get));
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} |",
            fmt(a),
            fmt(b),
            fmt(o),
            ratio(o, a),
            ratio(o, b)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_ratios_guard_against_zero() {
        assert_eq!(fmt(Some(1.5)), "1.5");
        assert_eq!(fmt(Some(1234.4)), "1234");
        assert_eq!(fmt(Some(2.0)), "2");
        assert_eq!(fmt(None), "–");
        assert_eq!(ratio(Some(1.0), Some(0.0)), "–");
        assert_eq!(ratio(Some(1.0), Some(4.0)), "0.25");
    }
}
