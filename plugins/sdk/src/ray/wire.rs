//! How the typed calls meet HTTP: status checks before decoding, readable error texts, path segments that
//! cannot escape their place in the URL, and JSON readers that accept the `null`s Ray sends.

use serde::{Deserialize, Deserializer, de::DeserializeOwned};

use super::{RayError, RayResponse};

/// Error bodies are quoted in messages (events, status, logs) up to this many bytes.
const MAX_QUOTED_BODY: usize = 4096;

pub(crate) fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The response text for an error message: lossy UTF-8, cut at a character boundary.
pub(crate) fn quoted_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.len() <= MAX_QUOTED_BODY {
        return text.to_string();
    }
    let mut end = MAX_QUOTED_BODY;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// An error for a response whose status the call does not accept.
pub(crate) fn status_error(call: &'static str, response: &RayResponse) -> RayError {
    RayError::Status {
        call,
        status: response.status,
        body: quoted_body(&response.body),
    }
}

/// Decodes a 2xx body; any other status is an error, whatever the body says.
pub(crate) fn decode<T: DeserializeOwned>(call: &'static str, response: &RayResponse) -> Result<T, RayError> {
    if !is_success(response.status) {
        return Err(status_error(call, response));
    }
    serde_json::from_slice(&response.body).map_err(|e| RayError::Decode {
        call,
        detail: e.to_string(),
        body: quoted_body(&response.body),
    })
}

/// A job id as one path segment. Ids are user data (`spec.jobId`), so everything but RFC 3986's unreserved
/// characters is percent-encoded; ids that would name the parent or current directory are refused outright.
pub(crate) fn path_segment(id: &str) -> Result<String, RayError> {
    if id.is_empty() || id == "." || id == ".." {
        return Err(RayError::Request(format!("{id:?} is not a usable job id")));
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Ok(out)
}

/// `null` or absent reads as the type's default (Ray sends `null` for maps it has not filled yet).
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Unix milliseconds, `null`, or absent. Ray sends integers; a float or a negative number (which no Ray
/// version sends) reads as its non-negative integer part rather than failing the whole answer.
pub(crate) fn millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<serde_json::Number>::deserialize(deserializer)?;
    Ok(value.and_then(|n| {
        n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f.trunc() as u64)
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_cannot_escape() {
        assert_eq!(path_segment("my-job_1.a~b").ok(), Some("my-job_1.a~b".into()));
        assert_eq!(path_segment("a/b?c#d").ok(), Some("a%2Fb%3Fc%23d".into()));
        assert_eq!(path_segment("100%").ok(), Some("100%25".into()));
        assert!(path_segment("..").is_err());
        assert!(path_segment("").is_err());
    }

    #[test]
    fn long_bodies_are_cut_on_a_character_boundary() {
        let body = "é".repeat(3000);
        let quoted = quoted_body(body.as_bytes());
        assert!(quoted.ends_with("..."));
        assert!(quoted.len() <= MAX_QUOTED_BODY + 3);
    }
}
