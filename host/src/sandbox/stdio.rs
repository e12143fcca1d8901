//! Guest stdout and stderr, line by line into the host's log with the plugin and object attached. A plugin
//! may print at most a fixed number of bytes per call; the rest is dropped with one notice, so a chatty or
//! hostile plugin cannot flood the operator's log.

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes of output kept per call and stream.
const BUDGET: usize = 64 * 1024;

#[derive(Clone)]
pub struct LogStream {
    inner: Arc<Mutex<Lines>>,
}

struct Lines {
    stream: &'static str,
    label: String,
    pending: Vec<u8>,
    written: usize,
    truncated: bool,
}

impl LogStream {
    /// `label` names the plugin and object, e.g. `raycluster default/demo`.
    pub fn new(stream: &'static str, label: String) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Lines {
                stream,
                label,
                pending: Vec::new(),
                written: 0,
                truncated: false,
            })),
        }
    }

    /// Emits a final partial line, if any.
    pub fn flush(&self) {
        let mut lines = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !lines.pending.is_empty() {
            let line = std::mem::take(&mut lines.pending);
            emit(&lines, &line);
        }
    }
}

fn emit(lines: &Lines, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    tracing::info!(target: "plugin", stream = lines.stream, source = %lines.label, "{}", text.trim_end());
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
            tracing::warn!(target: "plugin", stream = self.stream, source = %self.label,
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
