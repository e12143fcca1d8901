//! Kubernetes resource quantities (`500m`, `1Gi`, `2e3`) with the arithmetic and the canonical string form
//! of Go's `resource.Quantity`. KubeRay derives `ray start` flags (`--num-cpus`, `--memory`) and the
//! `desiredCPU`/`desiredMemory` status fields from them, and users compare those strings with what
//! `kubectl` shows, so the rounding and formatting rules must be Go's.

use std::cmp::Ordering;

/// How a quantity is written back: the suffix family of the string it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `m`, `k`, `M`, ... or no suffix.
    DecimalSi,
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySi,
    /// `e3`, `E-2`.
    DecimalExponent,
}

/// An exact decimal number `value × 10^scale` and the format to print it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    value: i128,
    scale: i32,
    format: Format,
}

impl Default for Quantity {
    /// Zero, as Go's zero `Quantity{}`, which prints as `0`.
    fn default() -> Self {
        Self {
            value: 0,
            scale: 0,
            format: Format::DecimalSi,
        }
    }
}

const DECIMAL_SUFFIXES: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
];
const BINARY_SUFFIXES: [(&str, u32); 6] = [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)];

impl Quantity {
    /// Parses a quantity as Go's `resource.ParseQuantity` does, or `None` if it is malformed.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
            return None;
        }
        let digits = format!("{int_part}{frac_part}");
        let mut value: i128 = digits.trim_start_matches('0').parse().unwrap_or(0);
        if digits.len() > 30 {
            return None;
        }
        let mut scale = -i32::try_from(frac_part.len()).ok()?;
        let format;
        if let Some((_, power)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
            format = Format::BinarySi;
            value = value.checked_mul(1024_i128.checked_pow(*power)?)?;
        } else if let Some((_, exponent)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
            format = Format::DecimalSi;
            scale += exponent;
        } else if suffix == "E" {
            format = Format::DecimalSi;
            scale += 18;
        } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']) {
            format = Format::DecimalExponent;
            scale = scale.checked_add(exponent.parse::<i32>().ok()?)?;
        } else {
            return None;
        }
        if negative {
            value = -value;
        }
        // Go keeps at most nano precision and rounds anything finer up (away from zero).
        if scale < -9 {
            let divisor = 10_i128.checked_pow(u32::try_from(-9 - scale).ok()?)?;
            let rounded = value / divisor + i128::from(value % divisor != 0) * value.signum();
            value = rounded;
            scale = -9;
        }
        Some(Self { value, scale, format })
    }

    /// Parses, treating a malformed string as zero (a quantity the API server accepted is never malformed).
    pub fn parse_or_zero(text: &str) -> Self {
        Self::parse(text).unwrap_or_default()
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.value == 0
    }

    /// The value rounded up to an integer, as Go's `Quantity.Value()` (so `500m` CPU is 1 CPU).
    pub fn ceil(&self) -> i128 {
        if self.scale >= 0 {
            return self.value.saturating_mul(pow10(self.scale));
        }
        let divisor = pow10(-self.scale);
        let quotient = self.value.div_euclid(divisor);
        quotient + i128::from(self.value.rem_euclid(divisor) != 0)
    }

    /// Go's `AsApproximateFloat64`.
    pub fn as_f64(&self) -> f64 {
        // Quantities are bounded well inside f64's range; the precision loss is what Go accepts too.
        #[allow(clippy::cast_precision_loss, reason = "an approximation is what this returns")]
        let value = self.value as f64;
        value * 10f64.powi(self.scale)
    }

    /// `self + other`, keeping `self`'s format unless `self` is zero (Go's `Quantity.Add`).
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        let format = if self.value == 0 {
            other.format
        } else {
            self.format
        };
        let scale = self.scale.min(other.scale);
        let value = self
            .value
            .saturating_mul(pow10(self.scale - scale))
            .saturating_add(other.value.saturating_mul(pow10(other.scale - scale)));
        Self { value, scale, format }
    }

    /// `self × n` (Go's `Quantity.Mul`).
    #[must_use]
    pub fn times(self, n: i64) -> Self {
        Self {
            value: self.value.saturating_mul(i128::from(n)),
            ..self
        }
    }

    /// Compares the values, whatever their formats (Go's `Quantity.Cmp`).
    pub fn cmp_value(&self, other: &Self) -> Ordering {
        let scale = self.scale.min(other.scale);
        let a = self.value.saturating_mul(pow10(self.scale - scale));
        let b = other.value.saturating_mul(pow10(other.scale - scale));
        a.cmp(&b)
    }

    /// The canonical string, as Go's `Quantity.String()`: no fractional digits, the largest suffix that
    /// loses nothing, binary suffixes only for whole multiples of 1024.
    pub fn canonical(&self) -> String {
        if self.value == 0 {
            return "0".to_string();
        }
        if self.format == Format::BinarySi
            && let Some(whole) = self.exact_integer()
            && whole.abs() >= 1024
        {
            let (mut amount, mut power) = (whole, 0);
            while amount % 1024 == 0 && power < 6 {
                amount /= 1024;
                power += 1;
            }
            let suffix = match power {
                0 => "",
                1 => "Ki",
                2 => "Mi",
                3 => "Gi",
                4 => "Ti",
                5 => "Pi",
                _ => "Ei",
            };
            return format!("{amount}{suffix}");
        }
        let (mut amount, mut exponent) = (self.value, self.scale);
        while amount % 10 == 0 {
            amount /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                amount = amount.saturating_mul(10);
                exponent -= 1;
            }
            2 => {
                amount = amount.saturating_mul(100);
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = match self.format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            _ => match exponent {
                18 => "E".to_string(),
                e => DECIMAL_SUFFIXES
                    .iter()
                    .find(|(_, x)| *x == e)
                    .map(|(s, _)| (*s).to_string())
                    .unwrap_or_default(),
            },
        };
        format!("{amount}{suffix}")
    }

    /// The value as an integer, if it is one.
    fn exact_integer(&self) -> Option<i128> {
        if self.scale >= 0 {
            return self.value.checked_mul(pow10(self.scale));
        }
        let divisor = pow10(-self.scale);
        (self.value % divisor == 0).then(|| self.value / divisor)
    }
}

fn pow10(exponent: i32) -> i128 {
    u32::try_from(exponent)
        .ok()
        .and_then(|e| 10_i128.checked_pow(e))
        .unwrap_or(i128::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(s: &str) -> String {
        Quantity::parse(s).map(|q| q.canonical()).unwrap_or_default()
    }

    #[test]
    fn canonical_forms_match_go() {
        assert_eq!(canonical("1"), "1");
        assert_eq!(canonical("1000m"), "1");
        assert_eq!(canonical("1.5"), "1500m");
        assert_eq!(canonical("0.5"), "500m");
        assert_eq!(canonical("100Mi"), "100Mi");
        assert_eq!(canonical("1024Mi"), "1Gi");
        assert_eq!(canonical("0.5Gi"), "512Mi");
        assert_eq!(canonical("1536Mi"), "1536Mi");
        assert_eq!(canonical("512"), "512");
        assert_eq!(canonical("2000"), "2k");
        assert_eq!(canonical("1e3"), "1e3");
        assert_eq!(canonical("0"), "0");
        assert_eq!(canonical("10G"), "10G");
        assert_eq!(canonical("0.1m"), "100u");
        assert_eq!(canonical("0.1n"), "1n");
        assert!(Quantity::parse("abc").is_none());
        assert!(Quantity::parse("1Xi").is_none());
        assert!(Quantity::parse("1e2147483648").is_none());
        let huge = Quantity::parse_or_zero("9e2147483647");
        assert_eq!(
            (huge.canonical(), huge.ceil()),
            ("90e2147483646".to_string(), i128::MAX)
        );
        assert!(Quantity::parse("").is_none());
        assert!(Quantity::parse("-").is_none());
        assert!(Quantity::parse("1.2.3").is_none());
        assert!(Quantity::parse("99999999999999999999999999999999999Ei").is_none());
    }

    #[test]
    fn arithmetic_keeps_the_first_format() {
        let cpu = Quantity::parse_or_zero("1").plus(Quantity::parse_or_zero("500m").times(3));
        assert_eq!(cpu.canonical(), "2500m");
        let mem = Quantity::parse_or_zero("1Gi").plus(Quantity::parse_or_zero("2Gi").times(2));
        assert_eq!(mem.canonical(), "5Gi");
        let mixed = Quantity::parse_or_zero("1G").plus(Quantity::parse_or_zero("1Gi"));
        assert_eq!(mixed.canonical(), "2073741824");
        let from_zero = Quantity::default().plus(Quantity::parse_or_zero("4Gi"));
        assert_eq!(from_zero.canonical(), "4Gi");
    }

    #[test]
    fn integer_values_round_up() {
        assert_eq!(Quantity::parse_or_zero("500m").ceil(), 1);
        assert_eq!(Quantity::parse_or_zero("2").ceil(), 2);
        assert_eq!(Quantity::parse_or_zero("1.5").ceil(), 2);
        assert_eq!(Quantity::parse_or_zero("1Gi").ceil(), 1_073_741_824);
        assert!((Quantity::parse_or_zero("250m").as_f64() - 0.25).abs() < 1e-12);
    }
}
