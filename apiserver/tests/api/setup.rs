//! The environment of `support::env`, once every `ray.io/v1` kind is served: right after the CRDs are
//! established the API server may still answer 429 "storage is (re)initializing" for some kinds, which a
//! call through the server would report as 503.

use std::time::Duration;

use kube::{Api, Client, api::ListParams};
use kuberay_crds::{RayCluster, RayCronJob, RayJob, RayService};
use kuberay_testenv::TestEnv;
use tokio::sync::OnceCell;

pub async fn env() -> &'static TestEnv {
    static SERVED: OnceCell<()> = OnceCell::const_new();
    let env = crate::support::env().await;
    SERVED
        .get_or_init(|| async {
            let admin = env.client().await.unwrap();
            served::<RayCluster>(&admin).await;
            served::<RayJob>(&admin).await;
            served::<RayService>(&admin).await;
            served::<RayCronJob>(&admin).await;
        })
        .await;
    env
}

async fn served<K>(client: &Client)
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    for _ in 0..200 {
        match api.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(status)) if status.code == 429 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            _ => return,
        }
    }
    panic!("{} is not served", K::kind(&()));
}
