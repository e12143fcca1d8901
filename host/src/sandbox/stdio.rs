//! Guest stdout and stderr, line by line into the host's log with the plugin and object attached. A plugin
//! may print at most a fixed number of bytes per call; the rest is dropped with one notice, so a chatty or
//! hostile plugin cannot flood the operator's log. Each line is escaped and counted against the plugin's
//! log rate limit, like its log calls (see [`super::log_guard`]).

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use super::{
    gate::CallContext,
    log_guard::{self, LogRate},
};
use crate::metrics::Metrics;

/// Bytes of output kept per call and stream.
const BUDGET: usize = 64 * 1024;

#[derive(Clone)]
pub(crate) struct LogStream {
    inner: Arc<Mutex<Lines>>,
}

struct Lines {
    stream: &'static str,
    plugin: Arc<str>,
    object: String,
    rate: Arc<LogRate>,
    metrics: Metrics,
    pending: Vec<u8>,
    written: usize,
    truncated: bool,
    /// The last line written (escaped and bounded), whether or not the rate limit let it into the log: a
    /// trap's error quotes it (a panic's message).
    last: Option<String>,
}

impl LogStream {
    /// The `stream` (`stdout` or `stderr`) of the call `ctx`.
    pub(crate) fn new(stream: &'static str, ctx: &CallContext) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Lines {
                stream,
                plugin: ctx.plugin.clone(),
                object: ctx.object.clone(),
                rate: ctx.log_rate.clone(),
                metrics: ctx.metrics.clone(),
                pending: Vec::new(),
                written: 0,
                truncated: false,
                last: None,
            })),
        }
    }

    /// Emits a final partial line, if any.
    pub(crate) fn flush(&self) {
        let mut lines = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !lines.pending.is_empty() {
            let line = std::mem::take(&mut lines.pending);
            emit(&mut lines, &line);
        }
    }

    /// The last line written so far (a final partial line included), escaped and bounded.
    pub(crate) fn last_line(&self) -> Option<String> {
        self.flush();
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .last
            .clone()
    }
}

fn emit(lines: &mut Lines, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    if !text.trim().is_empty() {
        lines.last = Some(log_guard::escape(text, log_guard::MAX_LOG_TEXT));
    }
    if !log_guard::admit(&lines.rate, &lines.plugin, &lines.metrics) {
        return;
    }
    let text = log_guard::escape(text, log_guard::MAX_LOG_TEXT);
    let (plugin, object) = (&lines.plugin, &lines.object);
    tracing::info!(target: "plugin", stream = lines.stream, %plugin, %object, "{text}");
}

impl Lines {
    fn write(&mut self, bytes: &[u8]) {
        let room = BUDGET.saturating_sub(self.written);
        let take = bytes.len().min(room);
        self.written += take;
        self.pending.extend_from_slice(&bytes[..take]);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            emit(self, &line);
        }
        if take < bytes.len() && !self.truncated {
            self.truncated = true;
            let (plugin, object) = (&self.plugin, &self.object);
            tracing::warn!(target: "plugin", stream = self.stream, %plugin, %object,
                "plugin output exceeded {BUDGET} bytes in one call; the rest is dropped");
        }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for LogStream {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
