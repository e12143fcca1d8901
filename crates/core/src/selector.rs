//! Kubernetes label selectors in their string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), parsed once
//! and matched against label maps. The host filters its caches with it and the test host does the same, so
//! both agree on what a selector selects.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed selector; the empty selector selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(Vec<Requirement>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct SelectorError {
    pub selector: String,
    pub reason: String,
}

impl Selector {
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let fail = |reason: &str| SelectorError {
            selector: text.to_string(),
            reason: reason.to_string(),
        };
        let mut requirements = Vec::new();
        for part in split_top_level(text).map_err(|r| fail(&r))? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let requirement = if let Some((key, values)) = split_set(part, " notin ") {
                Requirement::NotIn(key, values.map_err(|r| fail(&r))?)
            } else if let Some((key, values)) = split_set(part, " in ") {
                Requirement::In(key, values.map_err(|r| fail(&r))?)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some(key) = part.strip_prefix('!') {
                Requirement::DoesNotExist(key.trim().into())
            } else {
                Requirement::Exists(part.into())
            };
            let key = match &requirement {
                Requirement::Equals(k, _)
                | Requirement::NotEquals(k, _)
                | Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::DoesNotExist(k) => k,
            };
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(fail("a requirement has no valid key"));
            }
            requirements.push(requirement);
        }
        Ok(Self(requirements))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    /// The `key=value` pairs every selected object carries (`=`, `==` and an `in` with one value): what an
    /// index of labels can look a selector up by.
    pub fn required_pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().filter_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            Requirement::In(k, vs) if vs.len() == 1 => Some((k.as_str(), vs[0].as_str())),
            _ => None,
        })
    }

    /// Matches the `metadata.labels` of a JSON object.
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        let labels: BTreeMap<String, String> = object
            .pointer("/metadata/labels")
            .and_then(serde_json::Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        self.matches(&labels)
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err("unbalanced parentheses".into());
        }
    }
    if depth != 0 {
        return Err("unbalanced parentheses".into());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn split_set(part: &str, operator: &str) -> Option<(String, Result<Vec<String>, String>)> {
    let (key, rest) = part.split_once(operator)?;
    let values = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(|inner| {
            inner
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect()
        })
        .ok_or_else(|| format!("`{operator}` needs a parenthesised list"));
    Some((key.trim().to_string(), values))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_matches_every_form() {
        let head = labels(&[("ray.io/cluster", "c"), ("ray.io/node-type", "head")]);
        let worker = labels(&[
            ("ray.io/cluster", "c"),
            ("ray.io/node-type", "worker"),
            ("ray.io/group", "g"),
        ]);
        let s = Selector::parse("ray.io/cluster=c,ray.io/node-type in (head, worker)").unwrap();
        assert!(s.matches(&head) && s.matches(&worker));
        let s = Selector::parse("ray.io/cluster==c,ray.io/node-type!=head").unwrap();
        assert!(!s.matches(&head) && s.matches(&worker));
        let s = Selector::parse("ray.io/group,!missing,ray.io/node-type notin (head)").unwrap();
        assert!(!s.matches(&head) && s.matches(&worker));
        assert!(Selector::parse("").unwrap().matches(&head));
        assert!(Selector::parse("a in (b").is_err());
        assert!(Selector::parse("a in b").is_err());
        assert!(Selector::parse("=x").is_err());
    }

    #[test]
    fn required_pairs_are_the_single_valued_equalities() {
        let s = Selector::parse("a=1,b==2,c in (3),d in (4,5),e!=6,f,!g").unwrap();
        let pairs: Vec<(&str, &str)> = s.required_pairs().collect();
        assert_eq!(pairs, vec![("a", "1"), ("b", "2"), ("c", "3")]);
        assert_eq!(Selector::parse("").unwrap().required_pairs().count(), 0);
    }
}
