//! Percentiles of a Prometheus histogram scraped as text, interpolated linearly within the bucket the rank
//! falls in (as PromQL's `histogram_quantile` does).

/// Cumulative buckets (`le`, count) of one histogram, summed over every series whose line contains all the
/// `needles` (label matchers written as they appear, e.g. `controller="raycluster"`).
pub fn buckets(metrics: &str, name: &str, needles: &[&str]) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{");
    let mut out: Vec<(f64, f64)> = Vec::new();
    for line in metrics.lines().filter(|l| l.starts_with(&prefix)) {
        if !needles.iter().all(|n| line.contains(n)) {
            continue;
        }
        let Some(le) = label(line, "le") else { continue };
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap_or(f64::NAN)
        };
        let Some(count) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        if le.is_nan() {
            continue;
        }
        match out.iter_mut().find(|(b, _)| *b == le) {
            Some(entry) => entry.1 += count,
            None => out.push((le, count)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

fn label<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("{key}=\""))? + key.len() + 2;
    let end = line[start..].find('"')? + start;
    Some(&line[start..end])
}

/// The `q` quantile (0..1) of cumulative buckets: linear within the bucket holding the rank, the lower bound of
/// the first bucket taken as 0; a rank in the `+Inf` bucket answers the highest finite bound. `None` when
/// empty.
pub fn quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(lower);
            }
            let inside = count - below;
            let fraction = if inside > 0.0 {
                (rank - below) / inside
            } else {
                1.0
            };
            return Some(lower + (le - lower) * fraction);
        }
        lower = le;
        below = count;
    }
    Some(lower)
}

/// The total count of a histogram (its `_count` lines summed over series with every needle).
pub fn count(metrics: &str, name: &str, needles: &[&str]) -> f64 {
    let prefix = format!("{name}_count");
    metrics
        .lines()
        .filter(|l| l.starts_with(&prefix) && needles.iter().all(|n| l.contains(n)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# TYPE reconcile_time_seconds histogram
reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.005\"} 10
reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.01\"} 50
reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.1\"} 90
reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"+Inf\"} 100
reconcile_time_seconds_count{controller=\"raycluster\"} 100
reconcile_time_seconds_bucket{controller=\"rayjob\",le=\"0.005\"} 7
reconcile_time_seconds_bucket{controller=\"rayjob\",le=\"+Inf\"} 7
";

    #[test]
    fn buckets_are_selected_by_label_and_sorted() {
        let b = buckets(TEXT, "reconcile_time_seconds", &["controller=\"raycluster\""]);
        assert_eq!(
            b,
            vec![(0.005, 10.0), (0.01, 50.0), (0.1, 90.0), (f64::INFINITY, 100.0)]
        );
        let all = buckets(TEXT, "reconcile_time_seconds", &[]);
        assert_eq!(all[0], (0.005, 17.0));
    }

    #[test]
    fn quantiles_interpolate_within_the_bucket() {
        let b = buckets(TEXT, "reconcile_time_seconds", &["controller=\"raycluster\""]);
        // Rank 50 is the top of the (0.005, 0.01] bucket.
        assert!((quantile(&b, 0.5).unwrap() - 0.01).abs() < 1e-12);
        // Rank 30 is halfway through the 40 observations of (0.005, 0.01].
        assert!((quantile(&b, 0.3).unwrap() - 0.0075).abs() < 1e-12);
        // Rank 5 is halfway through the first bucket, whose lower bound is 0.
        assert!((quantile(&b, 0.05).unwrap() - 0.0025).abs() < 1e-12);
        // Rank 99 falls in +Inf: the highest finite bound.
        assert_eq!(quantile(&b, 0.99), Some(0.1));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(count(TEXT, "reconcile_time_seconds", &["raycluster"]), 100.0);
    }
}
