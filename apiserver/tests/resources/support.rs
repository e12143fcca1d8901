//! What every test needs: the environment with the CRDs, a namespace, the services, and requests carrying
//! a call context.

use std::collections::HashMap;

use kube::Client;
use kuberay_apiserver::{
    api,
    context::CallContext,
    resources::ResourceManager,
    services::{ClusterServer, ComputeTemplateServer, RayJobServer, RayServeServer},
};
use kuberay_crds::{RayCluster, RayJob, RayService};
use kuberay_testenv::TestEnv;

/// The shared environment with the CRDs installed and served.
pub async fn env() -> &'static TestEnv {
    let env = match TestEnv::shared().await {
        Ok(env) => env,
        Err(e) => panic!("test environment unavailable: {e}"),
    };
    env.install_crds().await.unwrap();
    let client = env.client().await.unwrap();
    served::<RayCluster>(&client).await;
    served::<RayJob>(&client).await;
    served::<RayService>(&client).await;
    env
}

/// Waits until lists of `K` are served: right after a CRD is Established the API server may still answer
/// 429 "storage is (re)initializing".
async fn served<K>(client: &Client)
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: kube::Api<K> = kube::Api::all(client.clone());
    for _ in 0..100 {
        match api.list(&kube::api::ListParams::default().limit(1)).await {
            Err(kube::Error::Api(status)) if status.code == 429 => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            _ => return,
        }
    }
}

/// The four services, as one user's API.
pub struct Api {
    pub kube: Client,
    pub clusters: ClusterServer,
    pub templates: ComputeTemplateServer,
    pub jobs: RayJobServer,
    pub serve: RayServeServer,
}

impl Api {
    pub fn new(kube: Client) -> Self {
        let resources = ResourceManager::default();
        Self {
            kube,
            clusters: ClusterServer::new(resources.clone()),
            templates: ComputeTemplateServer::new(resources.clone()),
            jobs: RayJobServer::new(resources.clone()),
            serve: RayServeServer::new(resources),
        }
    }

    /// A request as the authentication layer hands it on.
    pub fn call<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.extensions_mut().insert(CallContext {
            caller: None,
            kube: self.kube.clone(),
        });
        request
    }
}

pub fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Asserts a refusal with `code` whose message mentions `needle`.
#[track_caller]
pub fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: tonic::Code, needle: &str) {
    match result {
        Err(status) => {
            assert_eq!(status.code(), code, "{status:?}");
            assert!(
                status.message().contains(needle),
                "{:?} does not mention {needle:?}",
                status.message()
            );
        }
        Ok(value) => panic!("expected {code:?}, got {value:?}"),
    }
}

pub fn template(name: &str, cpu: u32, gpu: u32) -> api::ComputeTemplate {
    api::ComputeTemplate {
        name: name.into(),
        cpu,
        memory: 2,
        gpu,
        tolerations: if gpu > 0 {
            vec![api::PodToleration {
                key: "nvidia.com/gpu".into(),
                operator: "Exists".into(),
                value: String::new(),
                effect: "NoSchedule".into(),
            }]
        } else {
            vec![]
        },
        ..Default::default()
    }
}

pub async fn create_template(
    api: &Api,
    namespace: &str,
    template: api::ComputeTemplate,
) -> api::ComputeTemplate {
    use kuberay_apiserver::api::compute_template_service_server::ComputeTemplateService;
    let request = api::CreateComputeTemplateRequest {
        compute_template: Some(template),
        namespace: namespace.into(),
    };
    api.templates
        .create_compute_template(api.call(request))
        .await
        .unwrap()
        .into_inner()
}

/// A cluster spec with a head on `head` and one worker group on `worker`, with volumes, variables and a
/// security context.
pub fn cluster_spec(head: &str, worker: &str) -> api::ClusterSpec {
    let mut code = api::Volume {
        name: "code".into(),
        mount_path: "/home/ray/code".into(),
        source: "code".into(),
        read_only: true,
        items: map(&[("main.py", "main.py")]),
        ..Default::default()
    };
    code.set_volume_type(api::volume::VolumeType::Configmap);
    let mut scratch = api::Volume {
        name: "scratch".into(),
        mount_path: "/scratch".into(),
        storage: "1Gi".into(),
        ..Default::default()
    };
    scratch.set_volume_type(api::volume::VolumeType::EmptyDir);
    api::ClusterSpec {
        head_group_spec: Some(api::HeadGroupSpec {
            compute_template: head.into(),
            ray_start_params: map(&[("dashboard-host", "0.0.0.0")]),
            volumes: vec![code, scratch],
            environment: Some(api::EnvironmentVariables {
                values: map(&[("RAY_LOG_LEVEL", "debug")]),
                ..Default::default()
            }),
            annotations: map(&[("example.com/owner", "tests")]),
            labels: map(&[("team", "tests")]),
            image_pull_policy: "Always".into(),
            security_context: Some(api::SecurityContext {
                capabilities: Some(api::Capabilities {
                    add: vec!["SYS_PTRACE".into()],
                    drop: vec![],
                }),
                privileged: None,
            }),
            ..Default::default()
        }),
        worker_group_spec: vec![api::WorkerGroupSpec {
            group_name: "workers".into(),
            compute_template: worker.into(),
            replicas: 1,
            min_replicas: 1,
            max_replicas: 3,
            ray_start_params: map(&[("num-cpus", "2")]),
            environment: Some(api::EnvironmentVariables::default()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn cluster(name: &str, spec: api::ClusterSpec) -> api::Cluster {
    api::Cluster {
        name: name.into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        cluster_spec: Some(spec),
        annotations: map(&[("example.com/purpose", "tests")]),
        ..Default::default()
    }
}
