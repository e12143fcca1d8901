//! The route table: one route per `google.api.http` binding (and additional binding) of every method in
//! the descriptor pool, checked against the request messages when the gateway is built.

use std::sync::Arc;

use http::Method;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor,
};

use super::template::{Capture, Template, TemplateError};

/// Why the route table cannot be built: a binding the gateway could not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("the descriptor set cannot be read: {0}")]
    Descriptors(String),
    #[error("the descriptor set lacks the google.api.http extension")]
    NoHttpExtension,
    #[error("{method}: {source}")]
    Template {
        method: String,
        #[source]
        source: TemplateError,
    },
    #[error("{method}: {reason}")]
    Binding { method: String, reason: String },
}

/// What the body of a request fills.
#[derive(Debug, Clone)]
pub(crate) enum BodyRule {
    /// No body (it is ignored); the query string fills the fields the path does not.
    None,
    /// `body: "*"`: the whole request message.
    Whole,
    /// `body: "field"`: that top-level field; the query string fills the rest.
    Field(FieldDescriptor),
}

/// One HTTP binding of a method.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) template: Template,
    pub(crate) rpc: MethodDescriptor,
    pub(crate) body: BodyRule,
    /// `/<package.Service>/<Method>`, the gRPC request path.
    pub(crate) grpc_path: Arc<str>,
    /// `GET /apis/v1/...`, the label of the route.
    pub(crate) label: Arc<str>,
    /// The index of this binding among the method's bindings (0 for the main one).
    pub(crate) binding: usize,
}

impl Route {
    /// Whether the field path (proto names) is bound to a path variable.
    pub(crate) fn is_path_bound(&self, path: &[String]) -> bool {
        self.template.variables().any(|v| v == path)
    }
}

/// What a request path and method found.
pub(crate) enum Lookup<'a> {
    Found(&'a Route, Vec<Capture>),
    /// The path matches, but not with this method; the methods it does match.
    MethodNotAllowed(Vec<Method>),
    NotFound,
}

/// Every route of the API.
#[derive(Debug, Clone)]
pub(crate) struct RouteTable {
    routes: Vec<Route>,
}

impl RouteTable {
    /// The routes of every method of every service in `pool` that has a `google.api.http` option.
    pub(crate) fn from_pool(pool: &DescriptorPool) -> Result<Self, RouteError> {
        let http = pool
            .get_extension_by_name("google.api.http")
            .ok_or(RouteError::NoHttpExtension)?;
        let mut routes = Vec::new();
        for service in pool.services() {
            for rpc in service.methods() {
                let options = rpc.options();
                if !options.has_extension(&http) {
                    continue;
                }
                let rule = options.get_extension(&http);
                let Some(rule) = rule.as_message() else {
                    return Err(binding_error(&rpc, "google.api.http is not a message"));
                };
                add_bindings(&mut routes, &rpc, rule)?;
            }
        }
        Ok(Self { routes })
    }

    pub(crate) fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The route for `method` and the decoded request path (`ends_in_slash`: the path as sent ended in a
    /// slash); the most specific template wins. A path ending in a slash is read as grpc-gateway reads it:
    /// first with an empty last segment that may fill a variable ending a template of this method
    /// (`GET .../clusters/` and `DELETE .../clusters/` ask for the cluster named "", which the service
    /// refuses with KubeRay's 400), else without it (`GET /apis/v1/clusters/` lists).
    pub(crate) fn lookup(&self, method: &Method, path: &[String], ends_in_slash: bool) -> Lookup<'_> {
        if ends_in_slash {
            let mut with_empty = path.to_vec();
            with_empty.push(String::new());
            if let found @ Lookup::Found(..) = self.find(method, &with_empty, Template::matches_trailing) {
                return found;
            }
        }
        self.find(method, path, Template::matches)
    }

    fn find(
        &self,
        method: &Method,
        path: &[String],
        matches: fn(&Template, &[String]) -> Option<Vec<Capture>>,
    ) -> Lookup<'_> {
        let mut found: Option<(&Route, Vec<Capture>)> = None;
        let mut allowed = Vec::new();
        for route in &self.routes {
            let Some(captures) = matches(&route.template, path) else {
                continue;
            };
            if route.method != *method {
                if !allowed.contains(&route.method) {
                    allowed.push(route.method.clone());
                }
                continue;
            }
            let better = found
                .as_ref()
                .is_none_or(|(best, _)| route.template.specificity() < best.template.specificity());
            if better {
                found = Some((route, captures));
            }
        }
        match found {
            Some((route, captures)) => Lookup::Found(route, captures),
            None if allowed.is_empty() => Lookup::NotFound,
            None => Lookup::MethodNotAllowed(allowed),
        }
    }
}

fn binding_error(rpc: &MethodDescriptor, reason: impl Into<String>) -> RouteError {
    RouteError::Binding {
        method: rpc.full_name().to_string(),
        reason: reason.into(),
    }
}

/// Adds the routes of `rule` and its additional bindings.
fn add_bindings(
    routes: &mut Vec<Route>,
    rpc: &MethodDescriptor,
    rule: &DynamicMessage,
) -> Result<(), RouteError> {
    if rpc.is_client_streaming() || rpc.is_server_streaming() {
        return Err(binding_error(rpc, "streaming methods cannot have HTTP bindings"));
    }
    routes.push(route(rpc, rule, 0)?);
    let extra = rule.get_field_by_name("additional_bindings");
    for (i, binding) in extra.iter().flat_map(|v| v.as_list()).flatten().enumerate() {
        let binding = binding
            .as_message()
            .ok_or_else(|| binding_error(rpc, "an additional binding is not a message"))?;
        routes.push(route(rpc, binding, i + 1)?);
    }
    Ok(())
}

/// Reads one HttpRule (its pattern and body) into a route, checking it against the request message.
fn route(rpc: &MethodDescriptor, rule: &DynamicMessage, binding: usize) -> Result<Route, RouteError> {
    let (method, source) = pattern(rpc, rule)?;
    let template = Template::parse(&source).map_err(|source| RouteError::Template {
        method: rpc.full_name().to_string(),
        source,
    })?;
    let input = rpc.input();
    for variable in template.variables() {
        resolve_path_field(&input, variable).map_err(|reason| binding_error(rpc, reason))?;
    }
    let body = body_rule(rpc, rule)?;
    if let BodyRule::Field(field) = &body
        && template.variables().any(|v| v.len() == 1 && v[0] == field.name())
    {
        return Err(binding_error(rpc, "the body field is also a path variable"));
    }
    let grpc_path: Arc<str> = format!("/{}/{}", rpc.parent_service().full_name(), rpc.name()).into();
    let label = format!("{method} {}", template.source()).into();
    Ok(Route {
        method,
        template,
        rpc: rpc.clone(),
        body,
        grpc_path,
        label,
        binding,
    })
}

/// The HTTP method and path template of a rule.
fn pattern(rpc: &MethodDescriptor, rule: &DynamicMessage) -> Result<(Method, String), RouteError> {
    let text = |name: &str| {
        rule.get_field_by_name(name)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    for (name, method) in [
        ("get", Method::GET),
        ("put", Method::PUT),
        ("post", Method::POST),
        ("delete", Method::DELETE),
        ("patch", Method::PATCH),
    ] {
        if rule.has_field_by_name(name) {
            return Ok((method, text(name)));
        }
    }
    if rule.has_field_by_name("custom") {
        let custom = rule.get_field_by_name("custom");
        let custom = custom.as_ref().and_then(|v| v.as_message());
        let field = |name: &str| {
            custom
                .and_then(|m| m.get_field_by_name(name))
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let method = Method::from_bytes(field("kind").as_bytes())
            .map_err(|_| binding_error(rpc, format!("custom method {:?} is not valid", field("kind"))))?;
        return Ok((method, field("path")));
    }
    Err(binding_error(
        rpc,
        "the HTTP binding has no pattern (get, post, ...)",
    ))
}

fn body_rule(rpc: &MethodDescriptor, rule: &DynamicMessage) -> Result<BodyRule, RouteError> {
    let body = rule
        .get_field_by_name("body")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match body.as_str() {
        "" => Ok(BodyRule::None),
        "*" => Ok(BodyRule::Whole),
        name => rpc
            .input()
            .get_field_by_name(name)
            .map(BodyRule::Field)
            .ok_or_else(|| binding_error(rpc, format!("body field {name:?} is not a field of the request"))),
    }
}

/// The fields a path variable names, from `message` down; the last must be a singular scalar.
pub(crate) fn resolve_path_field(
    message: &MessageDescriptor,
    path: &[String],
) -> Result<Vec<FieldDescriptor>, String> {
    let mut fields = Vec::new();
    let mut current = message.clone();
    for (i, name) in path.iter().enumerate() {
        let field = current.get_field_by_name(name).ok_or_else(|| {
            format!(
                "path variable {:?}: {name:?} is not a field of {}",
                path.join("."),
                current.full_name()
            )
        })?;
        if field.is_list() || field.is_map() {
            return Err(format!(
                "path variable {:?}: {name:?} is repeated",
                path.join(".")
            ));
        }
        let last = i + 1 == path.len();
        match (field.kind(), last) {
            (Kind::Message(inner), false) => current = inner,
            (Kind::Message(_), true) => {
                return Err(format!(
                    "path variable {:?} names a message, not a scalar",
                    path.join(".")
                ));
            }
            (_, false) => {
                return Err(format!(
                    "path variable {:?}: {name:?} is not a message",
                    path.join(".")
                ));
            }
            (_, true) => {}
        }
        fields.push(field);
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::FILE_DESCRIPTOR_SET;

    fn table() -> RouteTable {
        RouteTable::from_pool(&DescriptorPool::decode(FILE_DESCRIPTOR_SET).unwrap()).unwrap()
    }

    fn found(table: &RouteTable, method: Method, path: &str) -> (String, Vec<(String, String)>) {
        let segments = super::super::template::split_path(path).unwrap();
        let trailing = super::super::template::ends_in_slash(path);
        match table.lookup(&method, &segments, trailing) {
            Lookup::Found(route, captures) => (
                route.rpc.name().to_string(),
                captures.into_iter().map(|(f, v)| (f.join("."), v)).collect(),
            ),
            Lookup::MethodNotAllowed(m) => panic!("{method} {path}: method not allowed, allowed {m:?}"),
            Lookup::NotFound => panic!("{method} {path}: not found"),
        }
    }

    #[test]
    fn every_binding_of_the_api_is_a_route() {
        let table = table();
        // 5 cluster, 5 compute template, 5 job, 6 job submission, 6 service RPCs.
        assert_eq!(table.routes().len(), 27);
        let labels: Vec<&str> = table.routes().iter().map(|r| &*r.label).collect();
        assert!(
            labels.contains(&"GET /apis/v1/namespaces/{namespace}/clusters/{name}"),
            "{labels:?}"
        );
        assert!(
            labels.contains(&"PUT /apis/v1/namespaces/{namespace}/services/{name}"),
            "{labels:?}"
        );
        let create = table
            .routes()
            .iter()
            .find(|r| r.rpc.name() == "CreateCluster")
            .unwrap();
        assert!(matches!(&create.body, BodyRule::Field(f) if f.name() == "cluster"));
        assert_eq!(&*create.grpc_path, "/proto.ClusterService/CreateCluster");
    }

    #[test]
    fn job_submission_routes_are_told_apart() {
        let table = table();
        let base = "/apis/v1/namespaces/ns/jobsubmissions";
        let (rpc, captures) = found(&table, Method::GET, &format!("{base}/c1/log/s1"));
        assert_eq!(rpc, "GetJobLog");
        assert_eq!(
            captures,
            [("namespace", "ns"), ("clustername", "c1"), ("submissionid", "s1")]
                .map(|(f, v)| (f.to_string(), v.to_string()))
        );
        assert_eq!(
            found(&table, Method::GET, &format!("{base}/c1/s1")).0,
            "GetJobDetails"
        );
        // A submission named "log" is still a submission.
        let (rpc, captures) = found(&table, Method::GET, &format!("{base}/c1/log"));
        assert_eq!((rpc.as_str(), captures[2].1.as_str()), ("GetJobDetails", "log"));
        assert_eq!(
            found(&table, Method::POST, &format!("{base}/c1/s1")).0,
            "StopRayJob"
        );
        assert_eq!(
            found(&table, Method::DELETE, &format!("{base}/c1/s1")).0,
            "DeleteRayJob"
        );
        assert_eq!(
            found(&table, Method::GET, &format!("{base}/c1")).0,
            "ListJobDetails"
        );
        assert_eq!(
            found(&table, Method::POST, &format!("{base}/c1")).0,
            "SubmitRayJob"
        );
    }

    #[test]
    fn unknown_paths_and_wrong_methods() {
        let table = table();
        let lookup = |method: Method, path: &str| {
            let segments = super::super::template::split_path(path).unwrap();
            let trailing = super::super::template::ends_in_slash(path);
            match table.lookup(&method, &segments, trailing) {
                Lookup::Found(route, _) => format!("found {}", route.rpc.name()),
                Lookup::MethodNotAllowed(mut m) => {
                    m.sort_by(|a, b| a.as_str().cmp(b.as_str()));
                    format!("405 {m:?}")
                }
                Lookup::NotFound => "404".to_string(),
            }
        };
        assert_eq!(lookup(Method::GET, "/apis/v1/nothing"), "404");
        assert_eq!(lookup(Method::GET, "/apis/v1/namespaces//clusters"), "404");
        assert_eq!(lookup(Method::GET, "/apis/v1/clusters/"), "found ListAllClusters");
        // As KubeRay's gateway: the empty segment after a trailing slash names the object "" (the service
        // answers 400), for the methods that have such a route; the others ignore the slash.
        let base = "/apis/v1/namespaces/ns";
        for (kind, get, delete, list, create) in [
            (
                "clusters",
                "GetCluster",
                "DeleteCluster",
                "ListCluster",
                "CreateCluster",
            ),
            (
                "compute_templates",
                "GetComputeTemplate",
                "DeleteComputeTemplate",
                "ListComputeTemplates",
                "CreateComputeTemplate",
            ),
            ("jobs", "GetRayJob", "DeleteRayJob", "ListRayJobs", "CreateRayJob"),
            (
                "services",
                "GetRayService",
                "DeleteRayService",
                "ListRayServices",
                "CreateRayService",
            ),
        ] {
            let path = format!("{base}/{kind}/");
            assert_eq!(lookup(Method::GET, &path), format!("found {get}"));
            assert_eq!(lookup(Method::DELETE, &path), format!("found {delete}"));
            assert_eq!(lookup(Method::POST, &path), format!("found {create}"));
            assert_eq!(
                lookup(Method::GET, &format!("{base}/{kind}")),
                format!("found {list}")
            );
        }
        assert_eq!(lookup(Method::GET, "/apis/v1/namespaces//clusters/"), "404");
        assert_eq!(
            lookup(Method::PATCH, "/apis/v1/namespaces/ns/clusters/c"),
            "405 [DELETE, GET]"
        );
        assert_eq!(lookup(Method::PUT, "/apis/v1/clusters"), "405 [GET]");
    }

    #[test]
    fn bad_bindings_fail_at_start() {
        let pool = DescriptorPool::decode(FILE_DESCRIPTOR_SET).unwrap();
        let get_cluster = pool
            .get_service_by_name("proto.ClusterService")
            .unwrap()
            .methods()
            .nth(1)
            .unwrap();
        assert_eq!(get_cluster.name(), "GetCluster");
        let http = pool.get_extension_by_name("google.api.http").unwrap();
        let mut rule = DynamicMessage::new(http.kind().as_message().unwrap().clone());
        rule.set_field_by_name("get", prost_reflect::Value::String("/v1/{nmae}".into()));
        let err = route(&get_cluster, &rule, 0).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"nmae\" is not a field of proto.GetClusterRequest"),
            "{err}"
        );
        rule.set_field_by_name("get", prost_reflect::Value::String("/v1/{name}".into()));
        rule.set_field_by_name("body", prost_reflect::Value::String("nobody".into()));
        let err = route(&get_cluster, &rule, 0).unwrap_err();
        assert!(err.to_string().contains("body field \"nobody\""), "{err}");
        rule.set_field_by_name("body", prost_reflect::Value::String(String::new()));
        rule.set_field_by_name("get", prost_reflect::Value::String("/v1/{name=a/*}".into()));
        assert!(matches!(
            route(&get_cluster, &rule, 0),
            Err(RouteError::Template { .. })
        ));
    }
}
