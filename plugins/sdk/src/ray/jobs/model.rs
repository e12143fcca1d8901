//! What the Jobs API answers: a job's status and details, read leniently (Ray sends `null` for whatever it
//! does not know yet, and newer Ray versions add fields).

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ray::wire::millis;

/// The status of a Ray job. The set is Ray's; [`JobStatus::Other`] keeps a value a future Ray might add
/// instead of failing the whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobStatus {
    Pending,
    Running,
    Stopped,
    Succeeded,
    Failed,
    Other(String),
}

impl JobStatus {
    pub fn parse(text: &str) -> Self {
        match text {
            "PENDING" => Self::Pending,
            "RUNNING" => Self::Running,
            "STOPPED" => Self::Stopped,
            "SUCCEEDED" => Self::Succeeded,
            "FAILED" => Self::Failed,
            other => Self::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Stopped => "STOPPED",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Other(other) => other,
        }
    }

    /// Ray never changes these once reached (its own `is_terminal`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Stopped | Self::Succeeded | Self::Failed)
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JobStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for JobStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(deserializer)?))
    }
}

/// One job as `GET /api/jobs/{id}` and `GET /api/jobs/` describe it (Ray's `JobDetails`). Only `status` is
/// required; every other field may be absent or `null`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JobDetails {
    /// `SUBMISSION` (through the Jobs API) or `DRIVER` (a driver started some other way).
    #[serde(rename = "type", default)]
    pub job_type: Option<String>,
    /// The driver's job id; `null` until the driver has started.
    #[serde(default)]
    pub job_id: Option<String>,
    /// The id the job was submitted with; `null` for driver jobs.
    #[serde(default)]
    pub submission_id: Option<String>,
    pub status: JobStatus,
    #[serde(default)]
    pub entrypoint: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error_type: Option<String>,
    /// Unix milliseconds.
    #[serde(default, deserialize_with = "millis")]
    pub start_time: Option<u64>,
    /// Unix milliseconds; set once the job is terminal.
    #[serde(default, deserialize_with = "millis")]
    pub end_time: Option<u64>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub runtime_env: Option<Map<String, Value>>,
    #[serde(default)]
    pub driver_exit_code: Option<i64>,
}

/// What a stop request achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopOutcome {
    /// Ray stopped the job.
    Stopped,
    /// There was nothing to stop: the job had already ended with this status.
    AlreadyFinished(JobStatus),
    /// The head does not know the job.
    NotFound,
}

/// What a submission achieved. Submitting an id the head already knows is not an error: it means an earlier
/// attempt (perhaps by an operator that died before recording it) got through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitOutcome {
    /// A new job; `job_id` is the id Ray answered with (the submission id).
    Submitted { job_id: String },
    /// A job with this submission id exists already.
    AlreadySubmitted { submission_id: String },
}
