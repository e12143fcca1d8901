//! The testenv annotations of one Pod, parsed.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::core::v1::Pod;

use crate::annotations;

/// What runs in a Ray head Pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadMode {
    Real,
    Fake,
    None,
}

impl std::str::FromStr for HeadMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "real" => Ok(Self::Real),
            "fake" => Ok(Self::Fake),
            "none" => Ok(Self::None),
            other => Err(format!(
                "unknown Ray head mode {other:?}; expected real, fake or none"
            )),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Directives {
    pub head_mode: Option<HeadMode>,
    pub http_echo: bool,
    pub fail: Option<String>,
    pub not_ready: bool,
    pub kill: Option<String>,
    pub freeze: bool,
    pub start_delay: Duration,
    pub run_for: Option<Duration>,
    pub exit_code: Option<i32>,
    pub fake_submit_delay: Duration,
}

impl Directives {
    pub fn of(pod: &Pod) -> Self {
        let empty = BTreeMap::new();
        let a = pod.metadata.annotations.as_ref().unwrap_or(&empty);
        let seconds = |key: &str| {
            a.get(key)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| *s >= 0.0)
        };
        Self {
            head_mode: a.get(annotations::RAY_HEAD).and_then(|v| v.parse().ok()),
            http_echo: a.get(annotations::HTTP_ECHO).is_some_and(|v| v == "true"),
            fail: a.get(annotations::FAIL).cloned(),
            not_ready: a.get(annotations::NOT_READY).is_some_and(|v| v == "true"),
            kill: a.get(annotations::KILL).cloned(),
            freeze: a.get(annotations::FREEZE).is_some_and(|v| v == "true"),
            start_delay: seconds(annotations::START_DELAY).map_or(Duration::ZERO, Duration::from_secs_f64),
            run_for: seconds(annotations::RUN_SECONDS).map(Duration::from_secs_f64),
            exit_code: a.get(annotations::EXIT_CODE).and_then(|v| v.trim().parse().ok()),
            fake_submit_delay: seconds(annotations::FAKE_SUBMIT_DELAY)
                .map_or(Duration::ZERO, Duration::from_secs_f64),
        }
    }
}
