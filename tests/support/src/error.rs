use std::{io, path::PathBuf};

/// Everything that can go wrong while starting, running or attaching to a test environment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("required binary {path} is missing; build it with `make tools` (or run `make test`, which does)")]
    MissingBinary { path: PathBuf },
    #[error("generating certificates: {0}")]
    Certificates(#[from] rcgen::Error),
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("`{command}` failed: {detail}")]
    Command { command: String, detail: String },
    #[error("{component} did not become ready within {seconds}s: {detail}")]
    NotReady {
        component: String,
        seconds: u64,
        detail: String,
    },
    #[error("{0} exited unexpectedly; see its log in {1}")]
    ProcessExited(String, PathBuf),
    #[error("pod network: {0}")]
    Network(String),
    #[error("OCI registry: {0}")]
    Registry(String),
    #[error("invalid test environment description {path}: {detail}")]
    BadEnvFile { path: PathBuf, detail: String },
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
