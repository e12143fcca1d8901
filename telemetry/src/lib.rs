//! Logging of the operator (`kuberay-wasm`) and the API server (`kuberay-apiserver`): structured `tracing`
//! events on stderr, filtered by `RUST_LOG` (default `info`).
//!
//! `--log-format auto` (the default) writes JSON lines when stderr is not a terminal (a Pod's log, a file,
//! a pipe) and text when it is. Text carries ANSI colours only on a terminal, so a log file never holds
//! escape codes.

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// JSON when stderr is not a terminal, text when it is.
    #[default]
    Auto,
    /// Human-readable lines (coloured only on a terminal).
    Text,
    /// One JSON object per line, the event's fields flattened into it.
    Json,
}

/// What a [`LogFormat`] comes to on a given stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Text, with or without ANSI colours.
    Text {
        /// Whether escape codes are written.
        ansi: bool,
    },
    /// JSON lines (never colours).
    Json,
}

impl LogFormat {
    /// The output of this format when stderr is (or is not) a terminal.
    pub fn output(self, terminal: bool) -> Output {
        match self {
            Self::Auto if terminal => Output::Text { ansi: true },
            Self::Auto | Self::Json => Output::Json,
            Self::Text => Output::Text { ansi: terminal },
        }
    }
}

/// Installs the global subscriber writing `format` to stderr (a second call only reports that logging was
/// set up already).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format.output(std::io::stderr().is_terminal()) {
        Output::Text { ansi } => registry
            .with(fmt::layer().with_ansi(ansi).with_writer(std::io::stderr))
            .try_init(),
        Output::Json => registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_ansi(false)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    if let Err(e) = result {
        eprintln!("logging was already initialised: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_json_off_a_terminal_and_text_never_colours_off_one() {
        assert_eq!(LogFormat::default(), LogFormat::Auto);
        assert_eq!(LogFormat::Auto.output(false), Output::Json);
        assert_eq!(LogFormat::Auto.output(true), Output::Text { ansi: true });
        assert_eq!(LogFormat::Text.output(false), Output::Text { ansi: false });
        assert_eq!(LogFormat::Text.output(true), Output::Text { ansi: true });
        assert_eq!(LogFormat::Json.output(true), Output::Json);
    }
}
