//! `kuberay-wasm plugin new NAME --kind GROUP/VERSION/KIND [--dir DIR]`: a plugin project that builds on its
//! own, outside this repository. The files are the templates in `template/` (compiled in), with the plugin's
//! name and kind filled in:
//!
//! - `Cargo.toml`: the SDK by git, at the tag of this version (the SDK is not on crates.io; a tag pins the
//!   source that matches the operator that wrote the project, and Cargo.lock records the commit);
//! - `src/lib.rs`: a reconcile that applies a ConfigMap the object controls and reports a `Ready` condition,
//!   exported with the SDK's `export_plugin!`, and its unit tests on `FakeHost`;
//! - `.cargo/config.toml`: `cargo build-plugin`, the component for `wasm32-wasip2`;
//! - `policy-entry.yaml` and `reconcileplugin.yaml`: the grant of exactly what the plugin asks for, as a
//!   policy entry and as a `ReconcilePlugin` resource;
//! - `crd.yaml`, `example.yaml`, `README.md`, `.gitignore`.

use std::path::{Path, PathBuf};

use kuberay_plugin_sdk::Kind;

use crate::policy::file::{is_sensitive_reconciled_kind, parse_kind};

/// The version of kuberay-wasm (and of its SDK) that writes the projects.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The files of a project: where each goes and its template.
const FILES: [(&str, &str); 9] = [
    ("Cargo.toml", include_str!("template/Cargo.toml.tmpl")),
    ("src/lib.rs", include_str!("template/lib.rs.tmpl")),
    (
        ".cargo/config.toml",
        include_str!("template/cargo-config.toml.tmpl"),
    ),
    (
        "policy-entry.yaml",
        include_str!("template/policy-entry.yaml.tmpl"),
    ),
    (
        "reconcileplugin.yaml",
        include_str!("template/reconcileplugin.yaml.tmpl"),
    ),
    ("crd.yaml", include_str!("template/crd.yaml.tmpl")),
    ("example.yaml", include_str!("template/example.yaml.tmpl")),
    ("README.md", include_str!("template/README.md.tmpl")),
    (".gitignore", include_str!("template/gitignore.tmpl")),
];

/// Why no project was written.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The name is not one a policy entry and a Cargo package both accept.
    #[error(
        "the plugin name {0:?} must be 1-63 lowercase letters, digits or '-', start with a letter and not end with '-'"
    )]
    Name(String),
    /// The kind is not a custom resource's `GROUP/VERSION/KIND`.
    #[error("{0}")]
    Kind(String),
    /// The directory holds files already.
    #[error("{0} exists and is not an empty directory")]
    Exists(PathBuf),
    /// A file could not be written.
    #[error("writing {path}")]
    Write { path: PathBuf, source: std::io::Error },
    /// A template names a placeholder nobody fills (a bug of this build).
    #[error("the template of {0} names an unknown placeholder")]
    Template(&'static str),
}

/// The name a policy entry and a Cargo package both accept.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !["test", "core", "std", "alloc", "proc-macro"].contains(&name)
}

/// The kind `text` (`GROUP/VERSION/KIND`) names, if a plugin may reconcile it: a custom resource.
fn custom_kind(text: &str) -> Result<Kind, NewError> {
    let kind = parse_kind(text).map_err(|e| NewError::Kind(e.to_string()))?;
    if kind.group.is_empty() || is_sensitive_reconciled_kind(&kind) {
        return Err(NewError::Kind(format!(
            "{kind} is a built-in kind; plugins reconcile custom resources (GROUP/VERSION/KIND, e.g. example.com/v1alpha1/Widget)"
        )));
    }
    if !kind.kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !kind.kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return Err(NewError::Kind(format!(
            "the kind {:?} must be UpperCamelCase letters and digits",
            kind.kind
        )));
    }
    Ok(kind)
}

/// The placeholders of the templates and their values.
fn values(name: &str, kind: &Kind) -> Vec<(&'static str, String)> {
    vec![
        ("name", name.to_string()),
        ("crate", name.replace('-', "_")),
        ("group", kind.group.clone()),
        ("version", kind.version.clone()),
        ("kind", kind.kind.clone()),
        ("kind_lower", kind.kind.to_ascii_lowercase()),
        ("plural", super::plural(&kind.kind)),
        ("api_version", kind.api_version()),
        ("kind_full", kind.to_string()),
        ("sdk_version", SDK_VERSION.to_string()),
    ]
}

fn render(file: &'static str, template: &str, values: &[(&'static str, String)]) -> Result<String, NewError> {
    let mut text = template.to_string();
    for (key, value) in values {
        text = text.replace(&format!("{{{{{key}}}}}"), value);
    }
    if text.contains("{{") {
        return Err(NewError::Template(file));
    }
    Ok(text)
}

/// Writes the project of the plugin `name` reconciling `kind` (`GROUP/VERSION/KIND`) into `dir` (`./NAME`
/// by default), which must not exist or be empty. Returns the directory and the files written.
pub fn new_project(name: &str, kind: &str, dir: Option<&Path>) -> Result<(PathBuf, Vec<PathBuf>), NewError> {
    if !valid_name(name) {
        return Err(NewError::Name(name.to_string()));
    }
    let kind = custom_kind(kind)?;
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    let empty = match std::fs::read_dir(&dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(_) => false,
    };
    if !empty {
        return Err(NewError::Exists(dir));
    }
    let values = values(name, &kind);
    let rendered = FILES
        .iter()
        .map(|(file, template)| Ok((*file, render(file, template, &values)?)))
        .collect::<Result<Vec<_>, NewError>>()?;
    let mut written = Vec::new();
    for (file, text) in rendered {
        let path = dir.join(file);
        let write_error = |source| NewError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error)?;
        }
        std::fs::write(&path, text).map_err(write_error)?;
        written.push(path);
    }
    Ok((dir, written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_renders_and_names_and_kinds_are_checked() {
        let kind = Kind::new("example.com", "v1alpha1", "Widget");
        let values = values("widget-maker", &kind);
        for (file, template) in FILES {
            let text = render(file, template, &values).unwrap();
            assert!(!text.contains("{{"), "{file}");
        }
        let lib = render("lib", FILES[1].1, &values).unwrap();
        assert!(lib.contains("Kind::new(\"example.com\", \"v1alpha1\", \"Widget\")"));
        assert!(
            lib.contains("format!(\"{name}-widget\")"),
            "Rust's own braces survive"
        );
        for bad in ["", "Widget", "1st", "a_b", "test", "trailing-"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("widget-maker"));
        for bad in [
            "v1/ConfigMap",
            "apps/v1/Deployment",
            "Widget",
            "example.com/v1/widget",
        ] {
            assert!(custom_kind(bad).is_err(), "{bad}");
        }
        assert_eq!(custom_kind("example.com/v1alpha1/Widget").unwrap(), kind);
    }

    #[test]
    fn the_policy_entry_grants_what_the_plugin_asks_for() {
        let kind = Kind::new("example.com", "v1", "Widget");
        let values = values("widget", &kind);
        let entry = render("policy-entry.yaml", FILES[3].1, &values).unwrap();
        let policy = crate::policy::Policy::parse(&format!("plugins:\n{entry}")).unwrap();
        let entry = policy.entry_named("widget").unwrap();
        assert_eq!(entry.reconciles, kind);
        assert_eq!(entry.file.as_deref(), Some("widget.wasm"));
    }

    #[test]
    fn a_directory_with_files_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep"), "x").unwrap();
        assert!(matches!(
            new_project("widget", "example.com/v1/Widget", Some(dir.path())),
            Err(NewError::Exists(_))
        ));
        let fresh = dir.path().join("fresh");
        let (_, files) = new_project("widget", "example.com/v1/Widget", Some(&fresh)).unwrap();
        assert_eq!(files.len(), FILES.len());
        assert!(fresh.join(".cargo/config.toml").is_file());
    }
}
