//! The `ray.io/initializing-timeout` annotation: a Go duration (`30m`, `1h30m`, `90s`, `1.5h`) or whole
//! seconds, as KubeRay accepts it.

/// The timeout in seconds (fractions rounded down), or why the value is not one.
pub fn parse_timeout(text: &str) -> Result<f64, String> {
    if let Some(seconds) = go_duration(text) {
        return Ok(seconds);
    }
    text.parse::<i64>()
        .map(|s| s as f64)
        .map_err(|_| format!("invalid format: {text}"))
}

/// Go's `time.ParseDuration` in seconds: an optional sign, then one or more `<number><unit>` with units
/// `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`; `0` alone is allowed.
fn go_duration(text: &str) -> Option<f64> {
    let (sign, mut rest) = match text.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    Some(sign * total)
}

/// How Go prints a duration of whole seconds (`1m30s`, `5m0s`, `2h0m0s`), as KubeRay's messages do.
pub fn go_format(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_and_plain_seconds() {
        assert_eq!(parse_timeout("5m"), Ok(300.0));
        assert_eq!(parse_timeout("1h30m"), Ok(5400.0));
        assert_eq!(parse_timeout("1.5h"), Ok(5400.0));
        assert_eq!(parse_timeout("90"), Ok(90.0));
        assert_eq!(parse_timeout("-1s"), Ok(-1.0));
        assert!(parse_timeout("5 minutes").is_err());
        assert!(parse_timeout("").is_err());
        assert_eq!(go_format(90), "1m30s");
        assert_eq!(go_format(7200), "2h0m0s");
        assert_eq!(go_format(5), "5s");
    }
}
