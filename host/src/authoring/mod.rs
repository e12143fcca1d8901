//! The plugin authoring kit, behind `kuberay-wasm plugin`:
//!
//! - [`new`]: `plugin new NAME --kind GROUP/VERSION/KIND`, a plugin project that builds outside this
//!   repository (the SDK by git), with a reconcile to start from, its unit test on `FakeHost`, its policy
//!   entry, a CRD and a README; the templates are in `template/`;
//! - [`run`]: `plugin run PLUGIN.wasm --object OBJ.yaml`, one reconcile offline against an in-memory cluster,
//!   every host call judged by the operator's own rules (the grant and budgets in the sandbox, then
//!   `admission`), reported with what was refused and why and what it wrote, as a diff;
//! - [`CheckedHost`]: the same judgement for a plugin compiled natively, as the host of its unit tests.

pub mod new;
pub mod run;

pub use run::CheckedHost;

/// The resource name of a kind (its plural, lower case), as Kubernetes would guess it: `widgets`,
/// `policies`, `classes`.
pub(crate) fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") || lower.ends_with("sh") {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}
