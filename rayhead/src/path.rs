//! What a plugin or a user may put in the path of a request to a Ray head: an absolute path (with an
//! optional query) that stays under the head's root. Anything that could climb out of the proxy prefix
//! (`..`, `//`), smuggle a separator past a decoder (`%2e`, `%2f`, `%5c`) or name another target (a scheme,
//! a fragment) is refused, because in proxy mode the path is appended to an API server URL.

/// A path refused by [`validate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused path {path:?}: {reason}")]
pub struct PathError {
    pub path: String,
    pub reason: &'static str,
}

/// Whether `path` may be sent to a Ray head (see the module's rules).
pub fn validate(path: &str) -> Result<(), PathError> {
    let fail = |reason| {
        Err(PathError {
            path: path.to_string(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return fail("the path must start with '/'");
    }
    if path.len() > 4096 {
        return fail("the path is longer than 4096 bytes");
    }
    if path
        .chars()
        .any(|c| c.is_control() || c == '\\' || c == '#' || c == ' ')
    {
        return fail("control characters, backslashes, spaces and fragments are not allowed");
    }
    let (route, _query) = path.split_once('?').unwrap_or((path, ""));
    if route.contains("//") {
        return fail("empty path segments ('//') are not allowed");
    }
    let lower = route.to_ascii_lowercase();
    if ["%2e", "%2f", "%5c", "%00", "%25"]
        .iter()
        .any(|encoded| lower.contains(encoded))
    {
        return fail("encoded dots, slashes, backslashes, NULs or percent signs are not allowed");
    }
    if route.split('/').any(|segment| segment == ".." || segment == ".") {
        return fail("'.' and '..' segments are not allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_api_paths_pass() {
        for ok in [
            "/api/jobs/",
            "/api/jobs/raysubmit_abc",
            "/api/jobs/abc/logs",
            "/api/serve/applications/?api_type=declarative",
            "/-/healthz",
            "/api/jobs/?a=%2F..%2F",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn escapes_are_refused() {
        for bad in [
            "api/jobs/",
            "http://evil/api",
            "//evil/api",
            "/api/../../namespaces/kube-system/secrets",
            "/api/./jobs",
            "/api//jobs",
            "/api/%2e%2e/secrets",
            "/api/%2E%2E/secrets",
            "/api/jobs%2F..%2Fx",
            "/api/jobs%5c..",
            "/api\\..\\x",
            "/api/jobs#frag",
            "/api/jobs/\r\nHost: evil",
            "/api/%00",
        ] {
            assert!(validate(bad).is_err(), "{bad} was accepted");
        }
    }
}
