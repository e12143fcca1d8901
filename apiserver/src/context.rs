//! What one call runs with: who is calling, and a Kubernetes client that acts as them. The authentication
//! layer (`auth`) puts a [`CallContext`] into every authenticated gRPC request (REST requests reach the
//! services as in-process gRPC calls, so they get one the same way); services take it with [`context`].

use std::collections::BTreeMap;

use crate::error::{ApiError, ApiResult};

/// Who is calling, as the Kubernetes API server's TokenReview (or the client certificate) names them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Caller {
    pub username: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    /// Extra attributes of the authenticated user (scopes and the like), passed on when impersonating.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Caller {
    /// The name used in logs and messages.
    pub fn name(&self) -> &str {
        if self.username.is_empty() {
            "<unauthenticated>"
        } else {
            &self.username
        }
    }
}

/// The identity and the Kubernetes client of one call.
#[derive(Clone)]
pub struct CallContext {
    /// `None` when the server runs with `--auth none` and acts as itself.
    pub caller: Option<Caller>,
    /// Acts as the caller (impersonation), or as the server itself with `--auth none`.
    pub kube: kube::Client,
}

impl CallContext {
    /// The caller's name for logs and messages (`kuberay-apiserver` when authentication is off).
    pub fn who(&self) -> &str {
        self.caller.as_ref().map_or("kuberay-apiserver", Caller::name)
    }
}

/// The context the authentication layer attached to `request`.
pub fn context<T>(request: &tonic::Request<T>) -> ApiResult<CallContext> {
    request
        .extensions()
        .get::<CallContext>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the request reached a service without authentication".into()))
}
