//! The body of `POST /api/jobs/`, built from the fields a RayJob (or anything shaped like one) carries, with
//! KubeRay's conversions: the runtime environment arrives as YAML text and leaves as a JSON object, the
//! entrypoint resources arrive as JSON text, and zero CPUs/GPUs mean "not asked for".

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A job submission. Fields are serialized in the order KubeRay's client writes them, and empty ones are
/// left out as it leaves them out, so the request Ray sees is the one KubeRay would send.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct JobSubmitRequest {
    #[serde(skip_serializing_if = "map_is_empty")]
    pub runtime_env: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", serialize_with = "go_float_map")]
    pub entrypoint_resources: BTreeMap<String, f32>,
    pub entrypoint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "go_float_opt")]
    pub entrypoint_num_cpus: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "go_float_opt")]
    pub entrypoint_num_gpus: Option<f32>,
}

impl JobSubmitRequest {
    pub fn new(entrypoint: impl Into<String>) -> Self {
        Self {
            entrypoint: entrypoint.into(),
            ..Self::default()
        }
    }

    /// The id that makes the submission idempotent; an empty id lets Ray generate one.
    #[must_use]
    pub fn submission_id(mut self, id: &str) -> Self {
        self.submission_id = (!id.is_empty()).then(|| id.to_string());
        self
    }

    #[must_use]
    pub fn metadata(mut self, metadata: Option<&BTreeMap<String, String>>) -> Self {
        self.metadata = metadata.cloned().unwrap_or_default();
        self
    }

    /// The runtime environment from its YAML text (a RayJob's `runtimeEnvYAML`).
    pub fn runtime_env_yaml(mut self, yaml: Option<&str>) -> Result<Self, String> {
        self.runtime_env = runtime_env_from_yaml(yaml.unwrap_or_default())?;
        Ok(self)
    }

    /// CPUs reserved for the entrypoint; zero (the default) asks for none.
    #[must_use]
    pub fn entrypoint_num_cpus(mut self, cpus: Option<f32>) -> Self {
        self.entrypoint_num_cpus = cpus.filter(|c| *c != 0.0);
        self
    }

    #[must_use]
    pub fn entrypoint_num_gpus(mut self, gpus: Option<f32>) -> Self {
        self.entrypoint_num_gpus = gpus.filter(|g| *g != 0.0);
        self
    }

    /// Custom resources for the entrypoint from their JSON text (`{"Custom_1": 1, "Custom_2": 5.5}`).
    pub fn entrypoint_resources_json(mut self, json: Option<&str>) -> Result<Self, String> {
        self.entrypoint_resources = match json.filter(|j| !j.is_empty()) {
            Some(json) => serde_json::from_str(json)
                .map_err(|e| format!("entrypointResources is not a JSON object of numbers: {e}"))?,
            None => BTreeMap::new(),
        };
        Ok(self)
    }

    /// The JSON body.
    pub fn to_json(&self) -> Result<Vec<u8>, String> {
        serde_json::to_vec(self).map_err(|e| e.to_string())
    }
}

/// A runtime environment's YAML text as the JSON object Ray expects. Empty text (or a YAML `null`) is no
/// runtime environment; anything but a mapping is an error, as it is for KubeRay.
pub fn runtime_env_from_yaml(yaml: &str) -> Result<Option<Map<String, Value>>, String> {
    if yaml.trim().is_empty() {
        return Ok(None);
    }
    let value: Value =
        serde_yaml::from_str(yaml).map_err(|e| format!("failed to unmarshal RuntimeEnvYAML: {yaml}: {e}"))?;
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(format!(
            "failed to unmarshal RuntimeEnvYAML: {yaml}: expected a mapping, found {}",
            kind_of(&other)
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

fn map_is_empty(map: &Option<Map<String, Value>>) -> bool {
    map.as_ref().is_none_or(Map::is_empty)
}

/// A 32-bit float as Go's JSON encoder writes it: whole numbers without a fraction (`1`, not `1.0`), others
/// in their shortest 32-bit form (`0.1`, not `0.10000000149011612`).
fn go_float(value: f32) -> Value {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 9.0e15 {
        return Value::from(value as i64);
    }
    format!("{value}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn go_float_opt<S: Serializer>(value: &Option<f32>, serializer: S) -> Result<S::Ok, S::Error> {
    value.map(go_float).serialize(serializer)
}

fn go_float_map<S: Serializer>(map: &BTreeMap<String, f32>, serializer: S) -> Result<S::Ok, S::Error> {
    map.iter()
        .map(|(k, v)| (k, go_float(*v)))
        .collect::<BTreeMap<_, _>>()
        .serialize(serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(request: &JobSubmitRequest) -> String {
        String::from_utf8(request.to_json().unwrap()).unwrap()
    }

    #[test]
    fn serializes_like_kuberay() {
        let metadata = BTreeMap::from([("testKey".to_string(), "testValue".to_string())]);
        let request = JobSubmitRequest::new("python /home/ray/samples/sample_code.py")
            .submission_id("rayjob-sample-abcde")
            .metadata(Some(&metadata))
            .runtime_env_yaml(Some(
                "pip:\n  - requests==2.26.0\nenv_vars:\n  counter_name: test_counter\n",
            ))
            .unwrap()
            .entrypoint_num_cpus(Some(1.0))
            .entrypoint_num_gpus(Some(0.5))
            .entrypoint_resources_json(Some(r#"{"Custom_1": 1, "Custom_2": 5.5}"#))
            .unwrap();
        assert_eq!(
            body(&request),
            r#"{"runtime_env":{"env_vars":{"counter_name":"test_counter"},"pip":["requests==2.26.0"]},"metadata":{"testKey":"testValue"},"entrypoint_resources":{"Custom_1":1,"Custom_2":5.5},"entrypoint":"python /home/ray/samples/sample_code.py","submission_id":"rayjob-sample-abcde","entrypoint_num_cpus":1,"entrypoint_num_gpus":0.5}"#
        );
    }

    #[test]
    fn leaves_out_what_is_empty() {
        let request = JobSubmitRequest::new("echo hi")
            .submission_id("")
            .metadata(None)
            .runtime_env_yaml(Some(""))
            .unwrap()
            .entrypoint_num_cpus(Some(0.0))
            .entrypoint_resources_json(None)
            .unwrap();
        assert_eq!(body(&request), r#"{"entrypoint":"echo hi"}"#);
    }

    #[test]
    fn floats_keep_their_short_form() {
        let request = JobSubmitRequest::new("x").entrypoint_num_cpus(Some(0.1));
        assert_eq!(body(&request), r#"{"entrypoint":"x","entrypoint_num_cpus":0.1}"#);
    }

    #[test]
    fn runtime_env_must_be_a_mapping() {
        assert_eq!(runtime_env_from_yaml("  \n"), Ok(None));
        assert_eq!(runtime_env_from_yaml("~"), Ok(None));
        let err = runtime_env_from_yaml("- a\n- b").unwrap_err();
        assert!(err.starts_with("failed to unmarshal RuntimeEnvYAML: - a\n- b: expected a mapping"));
        assert!(runtime_env_from_yaml("a: [").is_err());
        assert!(
            JobSubmitRequest::new("x")
                .entrypoint_resources_json(Some("{\"a\": \"b\"}"))
                .is_err()
        );
    }
}
