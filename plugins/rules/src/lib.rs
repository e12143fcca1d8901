//! KubeRay's rules that every kuberay-wasm plugin (RayCluster, RayJob, RayService, RayCronJob) and, where
//! they apply, the host share. Each rule lives here once, with one behaviour:
//!
//! - [`consts`]: values that are part of KubeRay's observable contract without being API fields (the
//!   version it reports, `app.kubernetes.io/*` values, ports and port names, the cluster domain, event
//!   actions, shared environment variable names);
//! - [`names`]: how KubeRay names what it creates (`CheckName`, `CheckLabel`, the head and serve Services,
//!   Pod `generateName`s, `<base>-<5 random>` suffixes) and the DNS-1035 check;
//! - [`labels`]: label selectors of a cluster's Pods;
//! - [`cluster_spec`]: KubeRay's `ValidateRayClusterSpec`, for RayClusters and the cluster specs of RayJobs
//!   and RayServices alike, under the feature gates;
//! - [`version`]: Ray version comparisons as KubeRay parses versions;
//! - [`ports`]: the ports of a cluster's head Service;
//! - [`syntax`]: Kubernetes' name and label syntaxes KubeRay validates, with Kubernetes' messages;
//! - [`env`]: container environment variables, added without overriding the user's;
//! - [`auth`]: token authentication of the containers that talk to Ray (`authOptions`);
//! - [`hash`]: the spec hashes KubeRay stores on Pods and RayClusters;
//! - [`quantity`]: resource quantities with Go's arithmetic and canonical strings;
//! - [`batch_scheduler`]: what KubeRay's batch-scheduler integrations write (schedulerName, labels,
//!   annotations, PodGroups);
//! - [`time`]: the host's clock in whole seconds, as Kubernetes stores it;
//! - [`report`]: a write followed by a Normal or Warning event, the way KubeRay reports what it did.
//!
//! Field names, labels, annotations, finalizers and condition types are in `kuberay_crds::constants`.

#![forbid(unsafe_code)]

pub mod auth;
pub mod batch_scheduler;
pub mod cluster_spec;
pub mod config;
pub mod consts;
pub mod env;
pub mod hash;
pub mod labels;
pub mod names;
pub mod operator_env;
pub mod ports;
pub mod quantity;
pub mod report;
pub mod resources;
pub mod syntax;
pub mod time;
pub mod tls;
pub mod version;
