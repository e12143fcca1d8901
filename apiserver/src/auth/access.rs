//! Asking the API server whether the caller may do something the server does on their behalf without
//! going through the API server: reaching a Ray head directly (a SubjectAccessReview for the same verb on
//! `services/proxy` that the API server would check if the request went through its proxy).

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::{Api, api::PostParams};

use crate::{
    context::Caller,
    error::{ApiError, ApiResult},
};

/// A request on a namespaced resource, as RBAC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl Attributes<'_> {
    /// `services/proxy`, `rayclusters.ray.io`, ...
    fn resource_text(&self) -> String {
        let mut text = self.resource.to_string();
        if !self.subresource.is_empty() {
            text = format!("{text}/{}", self.subresource);
        }
        text
    }

    /// The API server's wording of a refusal, so both routing modes fail alike.
    fn refusal(&self, user: &str, reason: &str) -> String {
        let mut message = format!(
            "{resource} {name:?} is forbidden: User {user:?} cannot {verb} resource {resource_text:?} in API group \
             {group:?} in the namespace {namespace:?}",
            resource = self.resource,
            name = self.name,
            verb = self.verb,
            resource_text = self.resource_text(),
            group = self.group,
            namespace = self.namespace,
        );
        if !reason.is_empty() {
            message.push_str(": ");
            message.push_str(reason);
        }
        message
    }
}

/// Makes SubjectAccessReviews with the server's own client (which needs `create` on them).
pub struct AccessReviewer {
    server: kube::Client,
}

impl AccessReviewer {
    pub fn new(server: kube::Client) -> Self {
        Self { server }
    }

    /// Ok if `caller` may do `attributes`; PermissionDenied with the authorizer's reason if not.
    pub async fn check(&self, caller: &Caller, attributes: &Attributes<'_>) -> ApiResult<()> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(caller.username.clone()),
                uid: caller.uid.clone(),
                groups: Some(caller.groups.clone()),
                extra: (!caller.extra.is_empty()).then(|| caller.extra.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(attributes.verb.into()),
                    group: Some(attributes.group.into()),
                    resource: Some(attributes.resource.into()),
                    subresource: Some(attributes.subresource.into()),
                    namespace: Some(attributes.namespace.into()),
                    name: Some(attributes.name.into()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.server.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| match ApiError::kube("checking the caller's access", e) {
                ApiError::PermissionDenied(m) => ApiError::Unavailable(format!(
                    "this server may not check access (its ServiceAccount needs create on subjectaccessreviews): {m}"
                )),
                other => other,
            })?;
        let status = answer.status.unwrap_or_default();
        if status.allowed && status.denied != Some(true) {
            return Ok(());
        }
        let reason = status.reason.unwrap_or_default();
        Err(ApiError::PermissionDenied(
            attributes.refusal(&caller.username, &reason),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_like_the_api_servers() {
        let attributes = Attributes {
            verb: "create",
            group: "",
            resource: "services",
            subresource: "proxy",
            namespace: "team-a",
            name: "c-head-svc",
        };
        assert_eq!(
            attributes.refusal("alice", ""),
            "services \"c-head-svc\" is forbidden: User \"alice\" cannot create resource \"services/proxy\" in API \
             group \"\" in the namespace \"team-a\""
        );
    }
}
