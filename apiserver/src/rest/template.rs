//! Path templates of `google.api.http` bindings (`/apis/v1/namespaces/{namespace}/clusters/{name}`) and
//! matching request paths against them.
//!
//! Supported: literal segments, `{field}` and `{field.sub}` (one segment), `{field=*}` (the same) and
//! `{field=**}` as the last segment (the rest of the path, at least one segment). Other HttpRule syntax
//! (anonymous `*`, patterns such as `{name=shelves/*}`, `:verb` suffixes) is rejected when the gateway is
//! built, so a binding the gateway cannot serve never goes unnoticed.

use percent_encoding::percent_decode_str;

/// Why a template is not one the gateway supports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("path template {0:?} does not start with '/'")]
    NoLeadingSlash(String),
    #[error("path template {template:?}: {reason}")]
    Unsupported { template: String, reason: String },
}

/// One segment of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Must equal the (percent-decoded) request segment.
    Literal(String),
    /// `{a.b}` or `{a.b=*}`: one non-empty segment, bound to the field path `a.b`.
    Variable(Vec<String>),
    /// `{a.b=**}`: the rest of the path (segments joined with '/'), bound to `a.b`.
    Rest(Vec<String>),
}

/// A parsed path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    source: String,
    segments: Vec<Segment>,
}

/// A value a request path gave a template variable: the field path and the decoded text.
pub(crate) type Capture = (Vec<String>, String);

impl Template {
    /// Parses `source`, e.g. `/apis/v1/namespaces/{namespace}/clusters`.
    pub(crate) fn parse(source: &str) -> Result<Self, TemplateError> {
        let rest = source
            .strip_prefix('/')
            .ok_or_else(|| TemplateError::NoLeadingSlash(source.to_string()))?;
        let unsupported = |reason: &str| TemplateError::Unsupported {
            template: source.to_string(),
            reason: reason.to_string(),
        };
        let mut segments = Vec::new();
        for raw in split_template(rest).map_err(|r| unsupported(&r))? {
            if matches!(segments.last(), Some(Segment::Rest(_))) {
                return Err(unsupported("'**' must be the last segment"));
            }
            segments.push(parse_segment(&raw).map_err(|r| unsupported(&r))?);
        }
        Ok(Self {
            source: source.to_string(),
            segments,
        })
    }

    /// The template as written in the binding.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// The field paths of the variables, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &[String]> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Variable(path) | Segment::Rest(path) => Some(path.as_slice()),
            Segment::Literal(_) => None,
        })
    }

    /// The template in OpenAPI's notation: `/a/{x}/b/{y.z}` (`=*` and `=**` dropped).
    pub(crate) fn openapi_path(&self) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            out.push('/');
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Variable(path) | Segment::Rest(path) => {
                    out.push('{');
                    out.push_str(&path.join("."));
                    out.push('}');
                }
            }
        }
        if out.is_empty() {
            out.push('/');
        }
        out
    }

    /// How general the template is, segment by segment (a literal beats a variable, which beats `**`);
    /// when several templates match a path, the smallest key wins.
    pub(crate) fn specificity(&self) -> Vec<u8> {
        let rank = |s: &Segment| match s {
            Segment::Literal(_) => 0,
            Segment::Variable(_) => 1,
            Segment::Rest(_) => 2,
        };
        self.segments.iter().map(rank).collect()
    }

    /// The captures if the decoded request `path` (see [`split_path`]) matches this template.
    pub(crate) fn matches(&self, path: &[String]) -> Option<Vec<Capture>> {
        self.matches_with(path, false)
    }

    /// [`Self::matches`] of a path that ended in a slash, read as grpc-gateway reads it: the empty segment
    /// after the slash (the last of `path`) fills a variable that ends the template. No other empty segment
    /// fills anything.
    pub(crate) fn matches_trailing(&self, path: &[String]) -> Option<Vec<Capture>> {
        self.matches_with(path, true)
    }

    fn matches_with(&self, path: &[String], empty_last: bool) -> Option<Vec<Capture>> {
        let mut captures = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Literal(text) => {
                    if path.get(i)? != text {
                        return None;
                    }
                }
                Segment::Variable(field) => {
                    let last = empty_last && i + 1 == path.len();
                    let value = path.get(i).filter(|v| last || !v.is_empty())?;
                    captures.push((field.clone(), value.clone()));
                }
                Segment::Rest(field) => {
                    let rest = path
                        .get(i..)
                        .filter(|r| !r.is_empty() && r.iter().all(|v| !v.is_empty()))?;
                    captures.push((field.clone(), rest.join("/")));
                    return Some(captures);
                }
            }
        }
        (path.len() == self.segments.len()).then_some(captures)
    }
}

/// Splits a template (after its leading '/') at the slashes outside braces.
fn split_template(rest: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_braces = false;
    for c in rest.chars() {
        match c {
            '{' if in_braces => return Err("nested '{'".into()),
            '{' => in_braces = true,
            '}' if !in_braces => return Err("unbalanced '}'".into()),
            '}' => in_braces = false,
            '/' if !in_braces => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if in_braces {
        return Err("unclosed '{'".into());
    }
    if !rest.is_empty() {
        out.push(current);
    }
    Ok(out)
}

fn parse_segment(raw: &str) -> Result<Segment, String> {
    let Some(inner) = raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
        if raw.is_empty() {
            return Err("empty segment".into());
        }
        if raw.contains(['{', '}', '*', ':']) {
            return Err(format!(
                "segment {raw:?} is not supported (wildcards and verbs are not)"
            ));
        }
        return Ok(Segment::Literal(raw.to_string()));
    };
    let (name, pattern) = inner.split_once('=').unwrap_or((inner, "*"));
    let field: Vec<String> = name.split('.').map(str::to_string).collect();
    if !field.iter().all(|part| is_identifier(part)) {
        return Err(format!("variable {name:?} is not a field path"));
    }
    match pattern {
        "*" => Ok(Segment::Variable(field)),
        "**" => Ok(Segment::Rest(field)),
        other => Err(format!(
            "variable pattern {other:?} is not supported (only '*' and '**')"
        )),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why a request path cannot be matched at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("segment {segment:?} of the request path is not valid UTF-8 once percent-decoded")]
pub(crate) struct PathError {
    pub(crate) segment: String,
}

/// Splits a request path (as sent, still percent-encoded) into decoded segments. One trailing slash is
/// dropped (`/apis/v1/clusters/` is `/apis/v1/clusters`; [`ends_in_slash`] says it was there); an encoded
/// slash (`%2F`) stays inside its segment.
pub(crate) fn split_path(path: &str) -> Result<Vec<String>, PathError> {
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    trimmed
        .split('/')
        .map(|raw| {
            percent_decode_str(raw)
                .decode_utf8()
                .map(|decoded| decoded.into_owned())
                .map_err(|_| PathError {
                    segment: raw.to_string(),
                })
        })
        .collect()
}

/// Whether a request path ends in a slash after something (`/` alone does not).
pub(crate) fn ends_in_slash(path: &str) -> bool {
    path.len() > 1 && path.ends_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(path: &str) -> Vec<String> {
        split_path(path).unwrap()
    }

    fn captures(template: &str, path: &str) -> Option<Vec<(String, String)>> {
        let t = Template::parse(template).unwrap();
        t.matches(&segments(path))
            .map(|c| c.into_iter().map(|(f, v)| (f.join("."), v)).collect())
    }

    fn pair(f: &str, v: &str) -> (String, String) {
        (f.to_string(), v.to_string())
    }

    #[test]
    fn literals_and_variables() {
        let t = "/apis/v1/namespaces/{namespace}/clusters/{name}";
        assert_eq!(
            captures(t, "/apis/v1/namespaces/ns/clusters/c1"),
            Some(vec![pair("namespace", "ns"), pair("name", "c1")])
        );
        assert_eq!(captures(t, "/apis/v1/namespaces/ns/clusters"), None);
        assert_eq!(captures(t, "/apis/v1/namespaces/ns/clusters/c1/x"), None);
        assert_eq!(captures(t, "/apis/v1/namespaces/ns/jobs/c1"), None);
        // An empty segment never fills a variable.
        assert_eq!(captures(t, "/apis/v1/namespaces//clusters/c1"), None);
    }

    #[test]
    fn trailing_slash_and_percent_encoding() {
        let t = "/apis/v1/namespaces/{namespace}/clusters/{name}";
        assert_eq!(
            captures(t, "/apis/v1/namespaces/ns/clusters/c1/"),
            Some(vec![pair("namespace", "ns"), pair("name", "c1")])
        );
        assert_eq!(
            captures(t, "/apis/v1/namespaces/my%20ns/clusters/a%2Fb"),
            Some(vec![pair("namespace", "my ns"), pair("name", "a/b")])
        );
        // Literals compare decoded.
        assert!(captures(t, "/apis/v1/namespaces/ns/cluster%73/c").is_some());
        assert!(split_path("/apis/%FF").is_err());
        assert_eq!(captures("/apis/v1/clusters", "/apis/v1/clusters/"), Some(vec![]));
        assert_eq!(segments("/"), Vec::<String>::new());
    }

    #[test]
    fn nested_fields_star_and_rest() {
        assert_eq!(
            captures("/v1/{cluster.name=*}/x", "/v1/c/x"),
            Some(vec![pair("cluster.name", "c")])
        );
        assert_eq!(
            captures("/files/{path=**}", "/files/a/b%2Fc/d"),
            Some(vec![pair("path", "a/b/c/d")])
        );
        assert_eq!(captures("/files/{path=**}", "/files"), None);
        let t = Template::parse("/v1/{a.b}/files/{path=**}").unwrap();
        assert_eq!(t.openapi_path(), "/v1/{a.b}/files/{path}");
        assert_eq!(
            t.variables().map(|v| v.join(".")).collect::<Vec<_>>(),
            ["a.b", "path"]
        );
    }

    #[test]
    fn unsupported_templates_are_rejected() {
        for bad in [
            "apis/v1",
            "/v1/{name=shelves/*}",
            "/v1/*",
            "/v1/{x}:cancel",
            "/v1/{path=**}/more",
            "/v1/{1x}",
            "/v1/{x",
            "/v1//x",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn specificity_prefers_literals() {
        let log = Template::parse("/j/{c}/log/{s}").unwrap();
        let any = Template::parse("/j/{c}/{s}/{t}").unwrap();
        assert!(log.specificity() < any.specificity());
    }
}
