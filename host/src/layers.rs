//! The layering of the code, checked against its imports. Two rules:
//!
//! - **No loops**: in every crate of the workspace, no two modules of one folder import each other, directly
//!   or through others (a folder's files and subfolders are its modules; a test module is not counted).
//! - **The host's layers**: each of the host's top-level modules must never import those listed for it in
//!   [`NEVER`] (the order `lib.rs` and `ARCHITECTURE.md` describe: the Kubernetes bridge knows nothing of
//!   plugins, the sandbox nothing of what implements its host API, nothing below the controllers knows them).
//!
//! Imports are read from the source: `use` trees (groups expanded) and paths written in code, `crate::`,
//! `super::` and `self::` resolved to the module they name. Comments and `#[cfg(test)] mod tests` are left
//! out. A rule broken fails the test with the files that break it.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// What each of the host's top-level modules must never import.
const NEVER: &[(&str, &[&str])] = &[
    (
        "kubernetes",
        &[
            "sandbox",
            "plugin_host",
            "admission",
            "raybridge",
            "controller",
            "operator",
            "reconcileplugin",
            "authoring",
            "server",
        ],
    ),
    (
        "admission",
        &[
            "sandbox",
            "plugin_host",
            "raybridge",
            "controller",
            "operator",
            "reconcileplugin",
            "authoring",
        ],
    ),
    (
        "host_api",
        &[
            "sandbox",
            "plugin_host",
            "admission",
            "kubernetes",
            "raybridge",
            "controller",
            "operator",
            "reconcileplugin",
            "authoring",
            "leadership",
            "metrics",
        ],
    ),
    (
        "sandbox",
        &[
            "plugin_host",
            "admission",
            "kubernetes",
            "raybridge",
            "controller",
            "operator",
            "reconcileplugin",
            "authoring",
        ],
    ),
    (
        "plugin_host",
        &["controller", "operator", "reconcileplugin", "authoring"],
    ),
    (
        "raybridge",
        &[
            "sandbox",
            "plugin_host",
            "admission",
            "controller",
            "operator",
            "reconcileplugin",
            "authoring",
        ],
    ),
    ("controller", &["operator", "reconcileplugin", "authoring"]),
    (
        "reconcileplugin",
        &[
            "plugin_host",
            "admission",
            "kubernetes",
            "controller",
            "operator",
            "authoring",
        ],
    ),
    (
        "leadership",
        &[
            "sandbox",
            "plugin_host",
            "admission",
            "kubernetes",
            "raybridge",
            "controller",
            "operator",
            "authoring",
        ],
    ),
    (
        "metrics",
        &[
            "sandbox",
            "plugin_host",
            "admission",
            "kubernetes",
            "raybridge",
            "controller",
            "operator",
            "authoring",
        ],
    ),
    (
        "authoring",
        &[
            "kubernetes",
            "raybridge",
            "controller",
            "operator",
            "reconcileplugin",
            "leadership",
        ],
    ),
];

/// The source folders of the workspace's crates, from the host's folder.
const CRATES: &[&str] = &[
    "src",
    "../apiserver/src",
    "../rayhead/src",
    "../telemetry/src",
    "../crds/src",
    "../crates/core/src",
    "../crates/admission/src",
    "../plugins/sdk/src",
    "../plugins/rules/src",
    "../plugins/raycluster/src",
    "../plugins/rayjob/src",
    "../plugins/rayservice/src",
    "../plugins/raycronjob/src",
];

/// One source file: its module path within the crate and its code.
struct Source {
    file: PathBuf,
    module: Vec<String>,
    code: String,
}

fn sources(root: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative: Vec<String> = path
                .strip_prefix(root)
                .unwrap()
                .with_extension("")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let mut module = relative;
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            if module.iter().any(|m| m == "tests") {
                continue;
            }
            out.push(Source {
                code: code_of(&fs::read_to_string(&path).unwrap()),
                file: path,
                module,
            });
        }
    }
    out
}

/// The code without comments and without its test module.
fn code_of(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |at| &text[..at]);
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a `use` tree names, its groups expanded (`a::{b, c::{d}}` is `a::b`, `a::c::d`).
fn expand(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = segments(&tree[..open]);
        let close = tree
            .rfind('}')
            .filter(|&close| close > open)
            .unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let mut base = prefix.to_vec();
        base.extend(head);
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &base, out);
    } else if !tree.is_empty() {
        let mut path = prefix.to_vec();
        path.extend(segments(tree.split(" as ").next().unwrap_or(tree)));
        out.push(path);
    }
}

fn segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The paths a file names: its `use` trees and the `crate::`/`super::`/`self::` paths in its code.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        // A `use` item starts its line (after a visibility, if any): the word in a string or a
        // sentence does not count.
        let line = rest[..at].rsplit('\n').next().unwrap_or_default().trim();
        let after = &rest[at + 4..];
        let end = after.find(';').unwrap_or(after.len());
        if line.is_empty() || line.starts_with("pub") {
            expand(&after[..end], &[], &mut out);
        }
        rest = &after[end.min(after.len())..];
    }
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            let before = code[..at].chars().last();
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            from = at + path.len().max(1);
            let path = segments(&path);
            // `crate::{...}` is a `use` group, read above.
            if path.len() > 1 && before.is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != ':') {
                out.push(path);
            }
        }
    }
    out
}

/// The module a path of `module`'s code names, from the crate root (`None` for another crate's).
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut at = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => module.to_vec(),
        Some("super") => module.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        at.pop();
    }
    while rest.first().is_some_and(|s| s == "super") {
        at.pop();
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// Every import between two modules of one folder: (folder, from, to) → the files.
fn edges(sources: &[Source]) -> BTreeMap<(Vec<String>, String, String), BTreeSet<PathBuf>> {
    let mut out: BTreeMap<_, BTreeSet<PathBuf>> = BTreeMap::new();
    for source in sources {
        for path in paths(&source.code) {
            let Some(target) = resolve(&source.module, &path) else {
                continue;
            };
            let common = source
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            let (Some(from), Some(to)) = (source.module.get(common), target.get(common)) else {
                continue;
            };
            let folder = source.module[..common].to_vec();
            out.entry((folder, from.clone(), to.clone()))
                .or_default()
                .insert(source.file.clone());
        }
    }
    out
}

/// The loops among the modules of each folder (strongly connected sets of more than one module).
fn loops(edges: &BTreeMap<(Vec<String>, String, String), BTreeSet<PathBuf>>) -> Vec<String> {
    let mut graphs: BTreeMap<&Vec<String>, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (folder, from, to) in edges.keys() {
        graphs
            .entry(folder)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    let mut found = Vec::new();
    for (folder, graph) in graphs {
        let reach = |start: &str| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![start];
            while let Some(m) = todo.pop() {
                for next in graph.get(m).into_iter().flatten() {
                    if seen.insert(*next) {
                        todo.push(next);
                    }
                }
            }
            seen
        };
        let mut reported = BTreeSet::new();
        for module in graph.keys() {
            let cycle: BTreeSet<&str> = reach(module)
                .into_iter()
                .filter(|other| reach(other).contains(module))
                .collect();
            if cycle.len() > 1 && reported.insert(cycle.clone()) {
                let files: BTreeSet<String> = edges
                    .iter()
                    .filter(|((f, a, b), _)| {
                        f == folder && cycle.contains(a.as_str()) && cycle.contains(b.as_str())
                    })
                    .flat_map(|((_, a, b), files)| {
                        files.iter().map(move |f| format!("{a} -> {b}: {}", f.display()))
                    })
                    .collect();
                found.push(format!("{}/{{{:?}}}: {files:?}", folder.join("::"), cycle));
            }
        }
    }
    found
}

#[test]
fn no_folder_of_any_crate_has_modules_that_import_each_other() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for krate in CRATES {
        let root = host.join(krate);
        assert!(root.is_dir(), "{} is not a folder", root.display());
        let sources = sources(&root);
        assert!(!sources.is_empty(), "no sources in {}", root.display());
        broken.extend(
            loops(&edges(&sources))
                .into_iter()
                .map(|l| format!("{krate}: {l}")),
        );
    }
    assert!(broken.is_empty(), "import loops:\n{}", broken.join("\n"));
}

#[test]
fn the_hosts_modules_import_only_what_their_layer_may() {
    let sources = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = edges(&sources);
    let mut broken = Vec::new();
    for ((folder, from, to), files) in &edges {
        let never = NEVER.iter().find(|(m, _)| m == from).map_or(&[][..], |(_, n)| *n);
        if folder.is_empty() && never.contains(&to.as_str()) {
            broken.push(format!("{from} imports {to} ({files:?})"));
        }
    }
    assert!(broken.is_empty(), "layer rules broken:\n{}", broken.join("\n"));
    // The rules are about modules that exist.
    for (module, _) in NEVER {
        assert!(
            sources
                .iter()
                .any(|s| s.module.first().is_some_and(|m| m == module)),
            "the host has no module {module}: update NEVER"
        );
    }
}

#[test]
fn the_checker_sees_imports_in_every_form() {
    let code = code_of(
        "use crate::{a::{B, c::D}, e as f};\nuse super::super::g;\n// use crate::comment;\nfn x() { crate::h::i(); self::j(); }\n\
         pub(crate) use crate::p;\nconst T: &str = \"cannot use {X:?} in {y} here\";\n#[cfg(test)]\nmod tests {\n use crate::k;\n}",
    );
    let module = vec!["m".to_string(), "n".to_string()];
    let mut resolved: Vec<String> = paths(&code)
        .iter()
        .filter_map(|p| resolve(&module, p))
        .map(|p| p.join("::"))
        .collect();
    resolved.sort();
    resolved.dedup();
    assert_eq!(resolved, ["a::B", "a::c::D", "e", "g", "h::i", "m::n::j", "p"]);
    // A loop is found, and named with its files.
    let sources = [
        ("x", "use crate::y::Y;"),
        ("y", "fn f() { crate::x::g(); }"),
        ("z", "use crate::x;"),
    ]
    .map(|(m, code)| Source {
        file: PathBuf::from(format!("{m}.rs")),
        module: vec![m.to_string()],
        code: code.to_string(),
    });
    let found = loops(&edges(&sources));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("\"x\", \"y\"") && found[0].contains("y.rs"),
        "{found:?}"
    );
}
