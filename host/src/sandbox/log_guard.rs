//! What a plugin writes into the operator's log (through the log interface, or on stdout and stderr) is
//! escaped and rate-limited; [`escape`] is also what every other plugin string that reaches a log line, an
//! Event or a condition goes through (its reconcile error, its version, its Event notes). Escaping keeps a plugin from forging log lines or steering a terminal: line
//! breaks, control characters, ANSI escape sequences and Unicode direction overrides appear as `\n`,
//! `\u{1b}` and so on, never raw. The rate limit is per plugin (a token bucket shared by all its calls): a
//! flood is dropped and counted in `plugin_log_lines_dropped_total`, with one line saying that dropping
//! started and one saying how many lines were dropped once lines pass again.

use std::{fmt::Write as _, sync::Mutex, time::Instant};

/// Longest message or field value kept; the rest is cut with a note of how much was cut.
pub(crate) const MAX_LOG_TEXT: usize = 4096;
/// Longest text kept in an Event's note or a condition's message: escaped and cut (at most one escape
/// sequence and the cut's note, 30 bytes, past it), it stays within the events API's 1 KiB.
pub(crate) const MAX_EVENT_NOTE_TEXT: usize = 960;
/// Fields kept per log line.
pub(crate) const MAX_LOG_FIELDS: usize = 32;
/// Longest field name kept.
pub(crate) const MAX_FIELD_NAME: usize = 64;
/// Lines a plugin may log in a burst, and per second after that.
const BURST: f64 = 200.0;
const PER_SECOND: f64 = 50.0;

/// Whether a character may reach the log as is.
fn is_plain(c: char) -> bool {
    !(c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c))
}

/// `text` with every character that could break a log line or a terminal escaped, and cut to `max` bytes.
pub(crate) fn escape(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 16);
    for (at, c) in text.char_indices() {
        if out.len() >= max {
            let _ = write!(out, "...[{} more bytes]", text.len() - at);
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if !is_plain(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A plugin's fields, at most [`MAX_LOG_FIELDS`] of them: names reduced to letters, digits, `_`, `-` and
/// `.`, values escaped and quoted, so that `name=value` pairs joined by spaces cannot fake another field.
pub(crate) fn escape_fields(fields: &[(String, String)]) -> Vec<(String, String)> {
    let name = |k: &str| -> String {
        k.chars()
            .take(MAX_FIELD_NAME)
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut kept: Vec<(String, String)> = fields
        .iter()
        .take(MAX_LOG_FIELDS)
        .map(|(k, v)| {
            (
                name(k),
                format!("\"{}\"", escape(v, MAX_LOG_TEXT).replace('"', "\\\"")),
            )
        })
        .collect();
    if fields.len() > MAX_LOG_FIELDS {
        kept.push((
            "dropped_fields".into(),
            (fields.len() - MAX_LOG_FIELDS).to_string(),
        ));
    }
    kept
}

/// What the rate limit says about one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Log it; `dropped` lines were dropped since the last one that passed.
    Pass { dropped: u64 },
    /// Drop it; this is the first line of a flood (say so once).
    FirstDropped,
    /// Drop it silently.
    Dropped,
}

struct Bucket {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

/// A token bucket of log lines for one plugin.
pub(crate) struct LogRate {
    bucket: Mutex<Bucket>,
}

impl Default for LogRate {
    fn default() -> Self {
        Self {
            bucket: Mutex::new(Bucket {
                tokens: BURST,
                at: Instant::now(),
                dropped: 0,
            }),
        }
    }
}

impl LogRate {
    /// Takes a token for one line, if there is one.
    pub(crate) fn admit(&self) -> Admit {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Admit {
        let mut bucket = self
            .bucket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let elapsed = now.saturating_duration_since(bucket.at);
        bucket.at = now;
        bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * PER_SECOND).min(BURST);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            let dropped = std::mem::take(&mut bucket.dropped);
            return Admit::Pass { dropped };
        }
        bucket.dropped = bucket.dropped.saturating_add(1);
        if bucket.dropped == 1 {
            Admit::FirstDropped
        } else {
            Admit::Dropped
        }
    }

    /// How long the bucket takes to refill completely.
    #[cfg(test)]
    fn refill() -> std::time::Duration {
        std::time::Duration::from_secs_f64(BURST / PER_SECOND)
    }
}

/// Logs the notes that go with a rate-limit decision, counts drops, and says whether to log the line.
pub(crate) fn admit(rate: &LogRate, plugin: &str, metrics: &crate::metrics::Metrics) -> bool {
    match rate.admit() {
        Admit::Pass { dropped: 0 } => true,
        Admit::Pass { dropped } => {
            tracing::warn!(target: "plugin", %plugin, dropped, "plugin log lines were dropped by the rate limit");
            true
        }
        Admit::FirstDropped => {
            metrics.log_dropped(plugin);
            tracing::warn!(
                target: "plugin", %plugin, per_second = PER_SECOND, burst = BURST,
                "plugin logs faster than its rate limit; dropping lines"
            );
            false
        }
        Admit::Dropped => {
            metrics.log_dropped(plugin);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_that_breaks_a_line_or_steers_a_terminal_gets_through() {
        let forged =
            "ok\n2026-01-01T00:00:00Z  INFO operator: all good\r\x1b[31mred\x1b[0m\u{202e}evil\u{85}\0";
        let escaped = escape(forged, MAX_LOG_TEXT);
        assert!(escaped.chars().all(is_plain), "{escaped}");
        assert_eq!(
            escaped,
            "ok\\n2026-01-01T00:00:00Z  INFO operator: all good\\r\\u{1b}[31mred\\u{1b}[0m\\u{202e}evil\\u{85}\\u{0}"
        );
        // A backslash is escaped too, so an escaped sequence cannot be faked.
        assert_eq!(escape("a\\nb", 100), "a\\\\nb");
        let fields = escape_fields(&[("k=v x\n".into(), "1\n2 other=\"forged\"".into())]);
        assert_eq!(
            fields,
            vec![("k_v_x_".to_string(), "\"1\\n2 other=\\\"forged\\\"\"".to_string())]
        );
    }

    #[test]
    fn long_text_and_many_fields_are_cut() {
        let long = "é".repeat(5000);
        let cut = escape(&long, 100);
        assert!(cut.len() < 140, "{}", cut.len());
        assert!(cut.ends_with("more bytes]"), "{cut}");
        let many: Vec<(String, String)> = (0..100).map(|i| (format!("f{i}"), String::new())).collect();
        let kept = escape_fields(&many);
        assert_eq!(kept.len(), MAX_LOG_FIELDS + 1);
        assert_eq!(kept[MAX_LOG_FIELDS], ("dropped_fields".into(), "68".into()));
    }

    #[test]
    fn a_flood_is_dropped_and_counted_then_lines_pass_again() {
        let rate = LogRate::default();
        let start = Instant::now();
        let passed = (0..1000)
            .filter(|_| matches!(rate.admit_at(start), Admit::Pass { .. }))
            .count();
        assert_eq!(passed, BURST as usize);
        assert_eq!(rate.admit_at(start), Admit::Dropped);
        let later = start + LogRate::refill();
        assert_eq!(
            rate.admit_at(later),
            Admit::Pass {
                dropped: 1000 - BURST as u64 + 1
            }
        );
    }

    #[test]
    fn an_escaped_note_fits_the_events_api() {
        for text in ["\u{1b}".repeat(1024), "é".repeat(512), "x".repeat(1024)] {
            let escaped = escape(&text, MAX_EVENT_NOTE_TEXT);
            assert!(escaped.len() <= 1024, "{} bytes", escaped.len());
            assert!(escaped.chars().all(is_plain));
        }
    }
}
