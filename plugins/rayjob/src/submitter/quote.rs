//! Go's `strconv.Quote`, which KubeRay uses to put JSON and messages into the submitter's bash script. The
//! script is KubeRay's observable output (it is the submitter container's argument), so the quoting must
//! match it character for character: `"` and `\` escaped, C escapes for control characters, `\xNN` for other
//! ASCII controls, `\uNNNN` for characters Go does not consider printable.

pub fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint` for what can appear in a RayJob: graphic characters and the ASCII space, but not
/// other spaces, controls or invisible formatting characters.
fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let invisible = matches!(
        c,
        '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
    );
    !(c.is_control() || c.is_whitespace() || invisible)
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote(r#"{"test":"test"}"#), r#""{\"test\":\"test\"}""#);
        assert_eq!(go_quote("a\\b\n\t\u{1}"), r#""a\\b\n\t\x01""#);
        assert_eq!(go_quote("héllo ✓"), "\"héllo ✓\"");
        assert_eq!(go_quote("nb\u{a0}sp\u{200b}"), r#""nb\u00a0sp\u200b""#);
    }
}
