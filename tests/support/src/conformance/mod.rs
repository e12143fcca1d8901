//! Checks of a Ray head's HTTP behaviour that clients rely on: the Jobs API (submit, duplicate submission,
//! status, logs, list, stop, delete, unknown ids), the health endpoint and the Serve API's `api_type`
//! handling. The same checks run against real Ray heads and the fake one, which keeps the fake honest.
//! [`sdk_client`] runs the plugin SDK's typed client, the one the RayJob plugin uses, through the same
//! heads.

mod sdk_client;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use self::sdk_client::sdk_jobs_client;
use crate::{
    error::{Error, Result},
    proxy_http::ProxyHttp,
};

macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Error::Other(format!($($msg)+)));
        }
    };
}

/// Runs every check against the dashboard behind `dashboard`; `tag` makes submission ids unique.
pub async fn jobs_api(dashboard: &ProxyHttp, tag: &str) -> Result<()> {
    let health = dashboard.get("/api/gcs_healthz").await?;
    check!(
        health.status == 200 && health.body.trim() == "success",
        "gcs_healthz answered {health:?}"
    );

    let unknown = format!("{tag}-unknown");
    let reply = dashboard.get(&format!("/api/jobs/{unknown}")).await?;
    check!(reply.status == 404, "GET of an unknown job answered {reply:?}");
    check!(
        reply.body.contains(&format!("Job {unknown} does not exist")),
        "unexpected 404 text {:?}",
        reply.body
    );
    let reply = dashboard.post(&format!("/api/jobs/{unknown}/stop"), None).await?;
    check!(reply.status == 404, "stop of an unknown job answered {reply:?}");

    // A job that succeeds, submitted twice with the same id.
    let ok_id = format!("{tag}-ok");
    let submit = json!({
        "entrypoint": format!("python -c \"print('hello from {ok_id}')\""),
        "submission_id": ok_id,
        "metadata": {"owner": "conformance"},
        "runtime_env": {"env_vars": {"CONFORMANCE": "1"}},
    });
    let reply = dashboard.post("/api/jobs/", Some(&submit)).await?;
    check!(reply.status == 200, "submit answered {reply:?}");
    let body = reply.json()?;
    check!(
        body["submission_id"] == ok_id && body["job_id"] == ok_id,
        "submit returned {body}"
    );
    let reply = dashboard.post("/api/jobs/", Some(&submit)).await?;
    check!(
        reply.status == 500 && reply.body.contains("Please use a different submission_id"),
        "a duplicate submission answered {} {:?}",
        reply.status,
        reply.body
    );
    let details = wait_for_terminal(dashboard, &ok_id).await?;
    check!(details["status"] == "SUCCEEDED", "the job ended {details}");
    check!(
        details["type"] == "SUBMISSION" && details["submission_id"] == ok_id,
        "details {details}"
    );
    check!(
        details["message"] == "Job finished successfully.",
        "message {}",
        details["message"]
    );
    check!(
        details["metadata"]["owner"] == "conformance",
        "metadata not echoed: {details}"
    );
    check!(
        details["runtime_env"]["env_vars"]["CONFORMANCE"] == "1",
        "runtime_env not echoed: {details}"
    );
    let (start, end) = (details["start_time"].as_u64(), details["end_time"].as_u64());
    check!(
        matches!((start, end), (Some(s), Some(e)) if s <= e),
        "start/end times {start:?} {end:?}"
    );
    let logs = dashboard.get(&format!("/api/jobs/{ok_id}/logs")).await?.json()?;
    check!(
        logs["logs"]
            .as_str()
            .is_some_and(|l| l.contains(&format!("hello from {ok_id}"))),
        "logs of {ok_id}: {logs}"
    );
    let stop = dashboard
        .post(&format!("/api/jobs/{ok_id}/stop"), None)
        .await?
        .json()?;
    check!(
        stop["stopped"] == false,
        "stopping a finished job answered {stop}"
    );

    // A job that fails.
    let fail_id = format!("{tag}-fail");
    let failing = json!({"entrypoint": "python -c \"import sys; sys.exit(3)\"", "submission_id": fail_id});
    check!(
        dashboard.post("/api/jobs/", Some(&failing)).await?.status == 200,
        "submit of {fail_id} failed"
    );
    let details = wait_for_terminal(dashboard, &fail_id).await?;
    check!(details["status"] == "FAILED", "the failing job ended {details}");
    check!(
        details["error_type"] == "JOB_ENTRYPOINT_COMMAND_ERROR",
        "error_type {}",
        details["error_type"]
    );
    check!(
        details["driver_exit_code"] == 3,
        "driver_exit_code {}",
        details["driver_exit_code"]
    );
    check!(
        details["message"]
            .as_str()
            .is_some_and(|m| m.contains("exit code 3")),
        "message {}",
        details["message"]
    );

    // A long job, stopped while it runs, then deleted.
    let long_id = format!("{tag}-long");
    let long = json!({"entrypoint": "python -c \"import time; time.sleep(120)\"", "submission_id": long_id});
    check!(
        dashboard.post("/api/jobs/", Some(&long)).await?.status == 200,
        "submit of {long_id} failed"
    );
    wait_for_status(dashboard, &long_id, "RUNNING").await?;
    let stop = dashboard
        .post(&format!("/api/jobs/{long_id}/stop"), None)
        .await?
        .json()?;
    check!(stop["stopped"] == true, "stopping a running job answered {stop}");
    let details = wait_for_terminal(dashboard, &long_id).await?;
    check!(details["status"] == "STOPPED", "the stopped job ended {details}");
    check!(
        details["message"] == "Job was intentionally stopped.",
        "message {}",
        details["message"]
    );

    let list = dashboard.get("/api/jobs/").await?.json()?;
    let ids: Vec<&str> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|j| j["submission_id"].as_str())
        .collect();
    for id in [&ok_id, &fail_id, &long_id] {
        check!(ids.contains(&id.as_str()), "the job list {ids:?} lacks {id}");
    }

    let deleted = dashboard.delete(&format!("/api/jobs/{long_id}")).await?.json()?;
    check!(
        deleted["deleted"] == true,
        "deleting a stopped job answered {deleted}"
    );
    let reply = dashboard.get(&format!("/api/jobs/{long_id}")).await?;
    check!(reply.status == 404, "a deleted job answered {reply:?}");

    let serve = dashboard
        .get("/api/serve/applications/?api_type=declarative")
        .await?;
    check!(
        serve.status == 200 && serve.json()?["applications"].is_object(),
        "serve details {serve:?}"
    );
    let bogus = dashboard.get("/api/serve/applications/?api_type=bogus").await?;
    check!(
        bogus.status == 400 && bogus.body.contains("Invalid 'api_type'"),
        "bad api_type answered {bogus:?}"
    );
    Ok(())
}

async fn wait_for_terminal(dashboard: &ProxyHttp, id: &str) -> Result<Value> {
    poll(dashboard, id, |s| matches!(s, "SUCCEEDED" | "FAILED" | "STOPPED")).await
}

async fn wait_for_status(dashboard: &ProxyHttp, id: &str, wanted: &str) -> Result<Value> {
    poll(dashboard, id, |s| s == wanted).await
}

async fn poll(dashboard: &ProxyHttp, id: &str, done: impl Fn(&str) -> bool) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let details = dashboard.get(&format!("/api/jobs/{id}")).await?.json()?;
        if details["status"].as_str().is_some_and(&done) {
            return Ok(details);
        }
        if Instant::now() > deadline {
            return Err(Error::Other(format!(
                "job {id} did not reach the wanted status: {details}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
