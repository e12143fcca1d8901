//! What can go wrong running the tools or reading what they print.

use std::io;

/// An error of a tool run or of reading its output.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A process could not be started or a file read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// A tool ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A tool is not built (the message says which command builds it).
    #[error("{0}")]
    MissingTool(String),
    /// YAML or JSON that does not have the expected shape.
    #[error("{0}")]
    Parse(String),
}

/// The result of this crate's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}
