//! The operator's side of admission. The rules every write of a plugin is judged by live in the
//! `kuberay-admission` crate (its module docs list the stages, in order), shared with the in-memory hosts of
//! `kuberay-wasm plugin run`, `CheckedHost` and the SDK's `FakeHost`; here are the two things only the
//! operator does: answering the rules' lookups from its Kubernetes bridge (`cluster.rs`) and writing what
//! they admitted to the API server (`commit.rs`: the leader fence, the request with the plugin's field
//! manager, `api_writes_total`, the last applied intent and the read-your-writes overlay).

mod cluster;
mod commit;

pub(crate) use commit::Commit;
pub(crate) use kuberay_admission::{Admitted, Cluster, Decision, Intent, Primary, ToSend};

use crate::kubernetes::KubeBridge;

/// The admission of one reconcile's writes, judged against `C`: the operator's Kubernetes bridge unless
/// said otherwise.
pub(crate) type Admission<C = KubeBridge> = kuberay_admission::Admission<C>;
