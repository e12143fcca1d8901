//! `resource.Quantity` as Go's `encoding/json` writes it after decoding it: KubeRay hashes the Go value, so
//! `1000m` is hashed as `1`, `1024Mi` as `1Gi` and `0.5` as `500m`.
//!
//! The rules (Kubernetes' `resource.ParseQuantity` and `Quantity.MarshalJSON`, restated):
//! - a number with an optional sign, fraction and suffix: decimal SI (`n u m k M G T P E`), binary SI
//!   (`Ki` to `Ei`) or an exponent (`e3`, `E-2`);
//! - the value is rounded up (away from zero) to a multiple of 10⁻⁹; binary SI ones are capped at 2⁶³−1;
//! - zero is `0`; a binary quantity of at least 1024 that is a whole number is written as the largest
//!   power of 1024 that divides it (`1536Mi`, `1Gi`); anything else as a whole mantissa with the decimal
//!   suffix (or exponent) of the largest multiple of three that keeps it whole (`1500m`, `15k`, `1e3`),
//!   where Go knows no suffix above `E` and writes none;
//! - except that a string already in a short canonical form is kept verbatim, sign and all (`+1`, `5.`):
//!   Go caches it when it parses it without rounding.

/// The largest binary SI quantity, 2⁶³−1, in units of 10⁻⁹.
const MAX_NANOS: i128 = (i64::MAX as i128) * NANO;
const NANO: i128 = 1_000_000_000;

/// How a quantity's suffix reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// A quantity string split as Kubernetes splits it.
struct Parts<'a> {
    negative: bool,
    /// Integer digits without leading zeros, `"0"` when there are none.
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    format: Format,
    /// The power of ten (decimal formats) or of two (binary SI) of the suffix.
    exponent: i32,
}

/// The JSON string Go writes for a quantity decoded from `text`, or `None` when Go would refuse `text`.
pub fn canonical(text: &str) -> Option<String> {
    let text = text.trim();
    if text == "0" {
        return Some(text.to_owned());
    }
    let parts = parse(text)?;
    if cached(&parts) {
        return Some(text.to_owned());
    }
    render(&parts)
}

fn digits_end(s: &str, from: usize) -> usize {
    s[from..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(s.len(), |i| from + i)
}

fn parse(text: &str) -> Option<Parts<'_>> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let unpadded = rest.trim_start_matches('0');
    let num_end = digits_end(unpadded, 0);
    let num = if num_end == 0 { "0" } else { &unpadded[..num_end] };
    let mut pos = num_end;
    let mut denom = "";
    if unpadded[pos..].starts_with('.') {
        let end = digits_end(unpadded, pos + 1);
        denom = &unpadded[pos + 1..end];
        pos = end;
    }
    let (format, exponent) = suffix(&unpadded[pos..])?;
    Some(Parts {
        negative,
        num,
        denom,
        format,
        exponent,
    })
}

fn suffix(suffix: &str) -> Option<(Format, i32)> {
    const DECIMAL: [(&str, i32); 10] = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    const BINARY: [(&str, i32); 6] = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        return Some((Format::DecimalSi, *e));
    }
    if let Some((_, e)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        return Some((Format::BinarySi, *e));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let unsigned = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    exponent.parse().ok().map(|e| (Format::DecimalExponent, e))
}

/// Whether Go keeps the parsed string itself: parsed exactly as a small integer amount, and already in
/// the form the canonical rendering would give.
fn cached(p: &Parts<'_>) -> bool {
    let digits = p.num.len() + p.denom.len();
    match p.format {
        Format::BinarySi => {
            // Go estimates the digits of 2^exponent as exponent·3/10.
            let precision = 15 - digits as i64 - i64::from(p.exponent) * 3 / 10 - 1;
            let Ok(value) = p.num.parse::<i64>() else {
                return false;
            };
            p.denom.is_empty()
                && precision >= 0
                && value.checked_mul(1 << p.exponent).is_some()
                && value & 7 != 0
        }
        Format::DecimalSi | Format::DecimalExponent => {
            let scale = i64::from(p.exponent) - p.denom.len() as i64;
            let shifted = format!("{}{}", p.num, p.denom);
            digits <= 18
                && scale >= -9
                && scale % 3 == 0
                && !shifted.ends_with("000")
                && !shifted.starts_with('0')
        }
    }
}

/// The value as decimal digits (no leading zeros) times a power of ten.
struct Decimal {
    digits: String,
    exponent: i64,
}

fn value(p: &Parts<'_>) -> Option<(Decimal, Format)> {
    let digits = format!("{}{}", p.num, p.denom);
    let exponent = -(p.denom.len() as i64);
    let decimal = match p.format {
        Format::DecimalSi | Format::DecimalExponent => Decimal {
            digits,
            exponent: exponent + i64::from(p.exponent),
        },
        Format::BinarySi => {
            let times = digits
                .parse::<i128>()
                .ok()?
                .checked_mul(1i128.checked_shl(p.exponent.try_into().ok()?)?)?;
            Decimal {
                digits: times.to_string(),
                exponent,
            }
        }
    };
    Some((round_up_to_nanos(decimal), p.format))
}

/// Rounds away from zero to a multiple of 10⁻⁹.
fn round_up_to_nanos(mut d: Decimal) -> Decimal {
    let digits = d.digits.trim_start_matches('0');
    if digits.is_empty() {
        return Decimal {
            digits: "0".into(),
            exponent: 0,
        };
    }
    d.digits = digits.to_owned();
    if d.exponent >= -9 {
        return d;
    }
    let cut = usize::try_from(-9 - d.exponent).unwrap_or(usize::MAX);
    let kept = d.digits.len().saturating_sub(cut);
    let dropped_nonzero = d.digits[kept..].bytes().any(|b| b != b'0');
    let mut kept = d.digits[..kept].to_owned();
    if dropped_nonzero {
        kept = increment(&kept);
    }
    Decimal {
        digits: kept,
        exponent: -9,
    }
}

/// Adds one to a decimal digit string.
fn increment(digits: &str) -> String {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    format!("1{}", String::from_utf8_lossy(&bytes))
}

fn render(p: &Parts<'_>) -> Option<String> {
    let (mut d, mut format) = value(p)?;
    if d.digits == "0" {
        return Some("0".into());
    }
    let sign = if p.negative { "-" } else { "" };
    if format == Format::BinarySi {
        // Binary quantities are capped at 2⁶³−1 and written in powers of 1024 when whole and ≥ 1024.
        let nanos = nanos(&d).min(MAX_NANOS);
        if nanos >= 1024 * NANO && nanos % NANO == 0 {
            return Some(format!("{sign}{}", binary(nanos / NANO)));
        }
        d = Decimal {
            digits: nanos.to_string(),
            exponent: -9,
        };
        format = Format::DecimalSi;
    }
    let trimmed = d.digits.trim_end_matches('0');
    d.exponent += (d.digits.len() - trimmed.len()) as i64;
    let mut mantissa = trimmed.to_owned();
    while d.exponent % 3 != 0 {
        mantissa.push('0');
        d.exponent -= 1;
    }
    let suffix = match (format, d.exponent) {
        (Format::DecimalExponent, 0) => String::new(),
        (Format::DecimalExponent, e) => format!("e{e}"),
        (_, -9) => "n".into(),
        (_, -6) => "u".into(),
        (_, -3) => "m".into(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        (_, 18) => "E".into(),
        // Go finds no decimal SI suffix beyond `E` and writes none (`1000E` comes out as `1`).
        _ => String::new(),
    };
    Some(format!("{sign}{mantissa}{suffix}"))
}

/// The value in units of 10⁻⁹, saturating at `i128::MAX`.
fn nanos(d: &Decimal) -> i128 {
    let Ok(digits) = d.digits.parse::<i128>() else {
        return i128::MAX;
    };
    u32::try_from(d.exponent + 9)
        .ok()
        .and_then(|e| 10i128.checked_pow(e))
        .and_then(|f| digits.checked_mul(f))
        .unwrap_or(i128::MAX)
}

fn binary(mut value: i128) -> String {
    const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut power = 0;
    while power + 1 < SUFFIXES.len() && value >= 1024 && value % 1024 == 0 {
        value /= 1024;
        power += 1;
    }
    format!("{value}{}", SUFFIXES[power])
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("1000m", "1"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("0.5", "500m"),
            ("0.5Gi", "512Mi"),
            ("100m", "100m"),
            ("1e3", "1e3"),
            ("1.5", "1500m"),
            ("2048", "2048"),
            ("0", "0"),
            ("0Gi", "0"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("4Gi", "4Gi"),
            ("+1", "+1"),
            ("-1.5k", "-1500"),
            (" 2 ", "2"),
        ] {
            assert_eq!(canonical(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn go_refuses_malformed_quantities() {
        for input in ["", "1x", "1k5", "1e", "abc", "1Gi2"] {
            assert_eq!(canonical(input), None, "{input}");
        }
    }
}
