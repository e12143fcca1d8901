//! `helm` and `kustomize` from `.local/bin` (`make deploy-tools`), run on the chart and the manifests.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

use crate::{Error, Result, manifests, rules::repo_root};

/// The chart, relative to the checkout.
pub const CHART: &str = "deploy/helm/kuberay-wasm";
/// The apiserver's chart, relative to the checkout.
pub const APISERVER_CHART: &str = "deploy/helm/kuberay-apiserver";

/// The binaries the tests run.
#[derive(Debug, Clone)]
pub struct Tools {
    root: PathBuf,
    helm: PathBuf,
    kustomize: PathBuf,
}

impl Tools {
    /// The tools, or [`Error::MissingTool`] naming what is missing and the command that builds it: a test
    /// that needs them fails without them, it is never skipped.
    pub fn for_test() -> Result<Self> {
        let root = repo_root();
        let bin = root.join(".local/bin");
        let (helm, kustomize) = (bin.join("helm"), bin.join("kustomize"));
        let missing: Vec<&Path> = [&helm, &kustomize]
            .into_iter()
            .filter(|p| !p.is_file())
            .map(|p| p.as_path())
            .collect();
        if !missing.is_empty() {
            return Err(Error::MissingTool(format!(
                "{missing:?} missing; `make deploy-tools` builds them"
            )));
        }
        Ok(Self {
            root,
            helm,
            kustomize,
        })
    }

    /// The checkout.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `helm` with its cache, configuration and data in one directory under the system's temporary directory
    /// (never the user's home; the tests use no chart repository, so it stays nearly empty).
    pub fn helm(&self) -> Command {
        let mut command = Command::new(&self.helm);
        let home = std::env::temp_dir().join("kuberay-wasm-helm");
        for (variable, dir) in [
            ("HELM_CACHE_HOME", "cache"),
            ("HELM_CONFIG_HOME", "config"),
            ("HELM_DATA_HOME", "data"),
        ] {
            command.env(variable, home.join(dir));
        }
        command.current_dir(&self.root);
        command
    }

    /// `kustomize`, run in the checkout.
    pub fn kustomize(&self) -> Command {
        let mut command = Command::new(&self.kustomize);
        command.current_dir(&self.root);
        command
    }

    /// The objects `helm template` renders from the chart with `args` (`--set ...`; `--include-crds` for the
    /// CRDs too), in release namespace `namespace`.
    pub fn template(&self, namespace: &str, args: &[&str]) -> Result<Vec<Value>> {
        self.template_of(CHART, "kuberay-wasm", namespace, args)
    }

    /// The objects `helm template` renders from `chart` as release `release` in `namespace` with `args`.
    pub fn template_of(
        &self,
        chart: &str,
        release: &str,
        namespace: &str,
        args: &[&str],
    ) -> Result<Vec<Value>> {
        let mut command = self.helm();
        command.args(["template", release, chart, "--namespace", namespace]);
        command.args(args);
        manifests::parse(&stdout_of(command)?)
    }

    /// What `helm template` says on stderr when it refuses `args`; an error if it renders them.
    pub fn template_error(&self, args: &[&str]) -> Result<String> {
        self.template_error_of(CHART, args)
    }

    /// What `helm template` of `chart` says on stderr when it refuses `args`; an error if it renders them.
    pub fn template_error_of(&self, chart: &str, args: &[&str]) -> Result<String> {
        let mut command = self.helm();
        command.args(["template", "release", chart]).args(args);
        match stdout_of(command) {
            Ok(_) => Err(Error::Parse(format!("helm template accepted {args:?}"))),
            Err(Error::Failed { stderr, .. }) => Ok(stderr),
            Err(other) => Err(other),
        }
    }

    /// The objects `kustomize build` renders from `dir` (relative to the checkout).
    pub fn build(&self, dir: &str) -> Result<Vec<Value>> {
        let mut command = self.kustomize();
        command.args(["build", dir]);
        manifests::parse(&stdout_of(command)?)
    }
}

/// Runs `command` and returns its stdout, or [`Error::Failed`] with its stderr.
pub fn stdout_of(mut command: Command) -> Result<String> {
    let line = format!("{command:?}");
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().map_err(Error::io(format!("running {line}")))?;
    if status.success() {
        Ok(String::from_utf8_lossy(&stdout).into_owned())
    } else {
        Err(Error::Failed {
            command: line,
            status: status.to_string(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }
}
