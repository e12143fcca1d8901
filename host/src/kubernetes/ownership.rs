//! Ownership rules of a plugin's writes: what a plugin creates or applies gets one controller owner
//! reference, to the object being reconciled; no foreign owner references, no finalizers but the plugin's
//! declared one on its own object, no adoption of objects the reconciled object does not control, and deletes
//! only of what it controls. The rules live in the SDK (`kuberay_plugin_sdk::ownership`) so that the SDK's
//! `FakeHost` applies the very same code and plugin tests meet the refusals the operator gives.

pub(crate) use kuberay_plugin_sdk::ownership::{Writer, controlled_by, owner_reference};
