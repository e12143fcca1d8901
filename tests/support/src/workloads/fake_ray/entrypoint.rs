//! What a fake job "runs". The fake head does not execute entrypoints; it reads a few common shell and
//! Python idioms from them so tests can script a job's outcome with the same entrypoints they would give a
//! real head:
//!
//! - `print("text")`, `print('text')` and `echo text` add a line to the job's logs;
//! - `sleep N` and `time.sleep(N)` make the job run for N seconds (default: one second);
//! - `exit N` and `sys.exit(N)` end the job with exit code N, so a non-zero N makes it FAILED.

use std::time::Duration;

/// The scripted behaviour of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub run_for: Duration,
    pub exit_code: i32,
    pub output: String,
}

const DEFAULT_RUN: Duration = Duration::from_secs(1);

impl Script {
    pub fn from_entrypoint(entrypoint: &str) -> Self {
        let mut output = String::new();
        for text in quoted_after(entrypoint, "print(") {
            output.push_str(&text);
            output.push('\n');
        }
        for text in words_after(entrypoint, "echo ") {
            output.push_str(text.trim_matches(|c| c == '"' || c == '\''));
            output.push('\n');
        }
        let run_for = number_after(entrypoint, "time.sleep(")
            .or_else(|| number_after(entrypoint, "sleep "))
            .map_or(DEFAULT_RUN, Duration::from_secs_f64);
        let exit_code = number_after(entrypoint, "sys.exit(")
            .or_else(|| number_after(entrypoint, "exit "))
            .map_or(0, |n| n as i32);
        Self {
            run_for,
            exit_code,
            output,
        }
    }
}

/// The string literals that follow each occurrence of `marker`.
fn quoted_after(haystack: &str, marker: &str) -> Vec<String> {
    haystack
        .match_indices(marker)
        .filter_map(|(i, _)| {
            let rest = haystack[i + marker.len()..].trim_start();
            match rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
                Some(quote) => {
                    let body = &rest[1..];
                    Some(body[..body.find(quote)?].to_string())
                }
                // An unquoted number prints as itself.
                None => {
                    let arg = rest[..rest.find(')')?].trim();
                    arg.parse::<f64>().is_ok().then(|| arg.to_string())
                }
            }
        })
        .collect()
}

/// The text after each occurrence of `marker` up to the next shell separator.
fn words_after<'a>(haystack: &'a str, marker: &str) -> Vec<&'a str> {
    haystack
        .match_indices(marker)
        .filter(|(i, _)| *i == 0 || !haystack.as_bytes()[i - 1].is_ascii_alphanumeric())
        .map(|(i, _)| {
            let rest = &haystack[i + marker.len()..];
            let end = rest.find([';', '&', '|', '\n']).unwrap_or(rest.len());
            rest[..end].trim()
        })
        .collect()
}

/// The number that follows the first occurrence of `marker` (not preceded by a letter, so `sys.exit(` is not
/// mistaken for `exit `).
fn number_after(haystack: &str, marker: &str) -> Option<f64> {
    haystack.match_indices(marker).find_map(|(i, _)| {
        let standalone = i == 0 || !haystack.as_bytes()[i - 1].is_ascii_alphabetic();
        if !standalone && !marker.contains('.') {
            return None;
        }
        let rest = haystack[i + marker.len()..].trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_python_and_shell_idioms() {
        let s = Script::from_entrypoint(
            r#"python -c "import time, sys; print('hello'); time.sleep(2.5); sys.exit(3)""#,
        );
        assert_eq!(
            s,
            Script {
                run_for: Duration::from_millis(2500),
                exit_code: 3,
                output: "hello\n".into()
            }
        );

        let s = Script::from_entrypoint("echo one && sleep 4; echo 'two'; exit 1");
        assert_eq!(
            s,
            Script {
                run_for: Duration::from_secs(4),
                exit_code: 1,
                output: "one\ntwo\n".into()
            }
        );

        let s = Script::from_entrypoint(r#"python -c "print(42)""#);
        assert_eq!(s.output, "42\n");

        let s = Script::from_entrypoint("python /home/ray/samples/sample_code.py");
        assert_eq!(
            s,
            Script {
                run_for: DEFAULT_RUN,
                exit_code: 0,
                output: String::new()
            }
        );
    }
}
