//! What `plugin run` prints: the plugin and its grant, the host calls in order with what became of each,
//! what was refused and why, events and log lines, the outcome, and the writes as a unified diff of each
//! object's YAML against the state given.

use std::{fmt, time::Duration};

use kuberay_plugin_sdk::Kind;
use serde_json::Value;

use super::{
    cluster::{ObjectKey, Objects},
    host::{CallResult, HostCall, Journal},
};
use crate::sandbox::{CallFailure, Export, LoadedPlugin};

/// What one offline reconcile did.
#[derive(Debug)]
pub struct Report {
    /// `name version`.
    pub plugin: String,
    /// The component's SHA-256.
    pub digest: String,
    /// Where its grant came from.
    pub grant_source: String,
    /// What it was granted (as `inspect` prints it).
    pub granted: Vec<String>,
    /// What it asked for and was not granted.
    pub withheld: Vec<String>,
    /// `kind namespace/name` of the reconciled object.
    pub object: String,
    /// `reconcile` or `cleanup`, or why the plugin was not called.
    pub export: String,
    /// The host calls, in order.
    pub calls: Vec<HostCall>,
    /// Events, as `Type Reason (Action): note`.
    pub events: Vec<String>,
    /// Log lines.
    pub logs: Vec<String>,
    /// The Warning event `WriteRefused` the operator records about the first refused write, if any.
    pub write_refused: Option<String>,
    /// The call's outcome: the requeue it asked for, or why it failed; `None` if it was not called.
    pub outcome: Option<Result<Option<Duration>, CallFailure>>,
    /// The writes, as a diff against the given state.
    pub diff: String,
}

impl Report {
    pub(crate) fn new(
        plugin: &LoadedPlugin,
        grant_source: &str,
        kind: &Kind,
        namespace: &str,
        name: &str,
    ) -> Self {
        Self {
            plugin: format!("{} {}", plugin.metadata.name, plugin.metadata.version),
            digest: plugin.digest.clone(),
            grant_source: grant_source.to_string(),
            granted: plugin.grant.describe(),
            withheld: plugin.grant.withheld.clone(),
            object: format!("{kind} {namespace}/{name}"),
            export: String::new(),
            calls: Vec::new(),
            events: Vec::new(),
            logs: Vec::new(),
            write_refused: None,
            outcome: None,
            diff: String::new(),
        }
    }

    pub(crate) fn not_called(&mut self, why: &str) {
        self.export = format!("not called: {why}");
    }

    pub(crate) fn called(
        &mut self,
        export: Export,
        journal: Journal,
        outcome: Result<Option<Duration>, CallFailure>,
        before: &Objects,
        after: &Objects,
    ) {
        self.export = export.name().to_string();
        self.calls = journal.calls;
        self.events = journal.events;
        self.logs = journal.logs;
        self.write_refused = journal.write_refused;
        self.outcome = Some(outcome);
        self.diff = diff(before, after);
    }

    /// The refused host calls: `verb kind target: why`.
    pub fn refusals(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter_map(|c| match &c.result {
                CallResult::Refused(why) => Some(format!("{} {} {}: {why}", c.verb, c.kind, c.target)),
                _ => None,
            })
            .collect()
    }
}

/// An object as the diff shows it: without what changes on every write.
fn shown(object: &Value) -> String {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    serde_yaml::to_string(&object).unwrap_or_else(|e| format!("(not shown: {e})\n"))
}

fn title(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        format!("{} {}", key.kind, key.name)
    } else {
        format!("{} {}/{}", key.kind, key.namespace, key.name)
    }
}

/// Each object that changed, as a unified diff of its YAML: created, changed or deleted.
fn diff(before: &Objects, after: &Objects) -> String {
    let mut out = String::new();
    let keys: std::collections::BTreeSet<&ObjectKey> = before.keys().chain(after.keys()).collect();
    for key in keys {
        let (old, new) = (before.get(key).map(shown), after.get(key).map(shown));
        if old == new {
            continue;
        }
        let what = match (&old, &new) {
            (None, _) => "created",
            (_, None) => "deleted",
            _ => "changed",
        };
        let name = title(key);
        let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
        let text = similar::TextDiff::from_lines(&old, &new);
        let (a, b) = match what {
            "created" => ("/dev/null".to_string(), format!("{name} (created)")),
            "deleted" => (format!("{name} (deleted)"), "/dev/null".to_string()),
            _ => (name.clone(), name.clone()),
        };
        out.push_str(&text.unified_diff().context_radius(3).header(&a, &b).to_string());
    }
    out
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plugin:   {} (sha256:{})", self.plugin, self.digest)?;
        writeln!(f, "grant:    {}", self.grant_source)?;
        for line in &self.granted {
            writeln!(f, "          {line}")?;
        }
        for what in &self.withheld {
            writeln!(f, "withheld: {what}")?;
        }
        writeln!(f, "object:   {} ({})", self.object, self.export)?;
        if self.outcome.is_none() {
            return Ok(());
        }
        writeln!(f, "\nhost calls:")?;
        if self.calls.is_empty() {
            writeln!(f, "  (none)")?;
        }
        for (i, call) in self.calls.iter().enumerate() {
            let result = match &call.result {
                CallResult::Done(what) => what.clone(),
                CallResult::Refused(why) => format!("REFUSED: {why}"),
                CallResult::Failed(why) => format!("failed: {why}"),
                CallResult::Unfinished => "not finished (the call was stopped)".into(),
            };
            writeln!(
                f,
                "  {:>3} {:<16} {} {} -> {result}",
                i + 1,
                call.verb,
                call.kind,
                call.target
            )?;
        }
        let refusals = self.refusals();
        if !refusals.is_empty() {
            writeln!(f, "\nrefused ({}):", refusals.len())?;
            for refusal in &refusals {
                writeln!(f, "  {refusal}")?;
            }
        }
        if !self.events.is_empty() || self.write_refused.is_some() {
            writeln!(f, "\nevents:")?;
            for event in &self.events {
                writeln!(f, "  {event}")?;
            }
            if let Some(note) = &self.write_refused {
                writeln!(
                    f,
                    "  Warning WriteRefused (Admit): {note}   [recorded by the operator]"
                )?;
            }
        }
        if !self.logs.is_empty() {
            writeln!(f, "\nlog:")?;
            for line in &self.logs {
                writeln!(f, "  {line}")?;
            }
        }
        match &self.outcome {
            Some(Ok(None)) => writeln!(f, "\noutcome:  ok")?,
            Some(Ok(Some(after))) => writeln!(f, "\noutcome:  ok, requeue after {after:?}")?,
            Some(Err(failure)) => writeln!(f, "\noutcome:  {}: {failure}", failure.reason())?,
            None => {}
        }
        writeln!(f, "\nwrites (diff against the given state):")?;
        if self.diff.is_empty() {
            writeln!(f, "  (none)")?;
        } else {
            write!(f, "{}", self.diff)?;
        }
        Ok(())
    }
}
