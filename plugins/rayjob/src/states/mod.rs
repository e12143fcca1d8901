//! One module per `jobDeploymentStatus`: each looks at the RayJob in that state, acts, and moves the status
//! on. A state either asks for the status to be recorded ([`Step::Record`]: KubeRay's fall-through to the
//! status update, after the retry check) or ends the reconcile without recording anything
//! ([`Step::Stop`]), as KubeRay's early returns do.

pub mod initializing;
pub mod new;
pub mod running;
pub mod suspend;
pub mod waiting;

use kuberay_plugin_sdk::Outcome;

pub enum Step {
    /// Record the status computed so far.
    Record,
    /// Stop here; the status stays as it is.
    Stop(Outcome),
}
