//! The next tick of a [`Schedule`] after an instant, in whole Unix seconds.
//!
//! A pattern matches wall-clock times of its zone, as robfig/cron (KubeRay's parser) evaluates it: a time
//! that a daylight-saving change skips never fires, and one that happens twice (when clocks go back) fires
//! at both instants. The pattern's wall-clock matches are found by croner on a UTC clock, where every civil
//! time exists exactly once, and each match is then placed in the zone.

use croner::Cron;
use jiff::{
    SignedDuration, Timestamp,
    civil::DateTime,
    tz::{AmbiguousOffset, TimeZone},
};

use crate::schedule::Schedule;

/// Offsets of a zone never change by more than this at once, so a wall-clock time more than this after the
/// best tick found cannot be an earlier instant, and one this far before `after` cannot be a later one.
const FOLD_WINDOW: SignedDuration = SignedDuration::from_hours(3);

/// How many wall-clock matches one search looks at before giving up (a per-minute pattern needs about 360).
const MAX_MATCHES: usize = 4096;

impl Schedule {
    /// The first tick strictly after `after` (Unix seconds), or `None` if the schedule never fires again.
    pub fn next_after(&self, after: i64) -> Option<i64> {
        match self {
            Self::Every(interval) => after.checked_add(*interval),
            Self::Pattern { cron, zone } => {
                let after = Timestamp::from_second(after).ok()?;
                next_in_zone(cron, zone, after).map(|t| t.as_second())
            }
        }
    }
}

fn next_in_zone(cron: &Cron, zone: &TimeZone, after: Timestamp) -> Option<Timestamp> {
    let start = zone.to_datetime(after).checked_sub(FOLD_WINDOW).ok()?;
    let mut cursor = start.to_zoned(TimeZone::UTC).ok()?;
    let mut best: Option<Timestamp> = None;
    for _ in 0..MAX_MATCHES {
        let Ok(matched) = cron.find_next_occurrence(&cursor, false) else {
            break;
        };
        let civil = matched.datetime();
        if let Some(best) = best
            && civil > zone.to_datetime(best).checked_add(FOLD_WINDOW).ok()?
        {
            break;
        }
        for instant in instants(zone, civil) {
            if instant > after && best.is_none_or(|b| instant < b) {
                best = Some(instant);
            }
        }
        cursor = matched;
    }
    best
}

/// The instants at which `zone`'s clocks show `civil`: none in a gap, two in a fold.
fn instants(zone: &TimeZone, civil: DateTime) -> Vec<Timestamp> {
    let offsets = match zone.to_ambiguous_timestamp(civil).offset() {
        AmbiguousOffset::Unambiguous { offset } => vec![offset],
        AmbiguousOffset::Gap { .. } => vec![],
        AmbiguousOffset::Fold { before, after } => vec![before, after],
    };
    offsets
        .into_iter()
        .filter_map(|offset| offset.to_timestamp(civil).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::parse;

    fn at(text: &str) -> i64 {
        text.parse::<Timestamp>()
            .map(|t| t.as_second())
            .unwrap_or(i64::MIN)
    }

    fn next(schedule: &str, zone: Option<&str>, after: &str) -> Option<String> {
        let schedule = parse(schedule, zone).ok()?;
        let tick = schedule.next_after(at(after))?;
        Timestamp::from_second(tick).ok().map(|t| t.to_string())
    }

    #[test]
    fn ticks_are_strictly_after_the_instant() {
        let every_minute = Some("2024-01-01T00:01:00Z".to_string());
        assert_eq!(next("* * * * *", None, "2024-01-01T00:00:00Z"), every_minute);
        assert_eq!(next("* * * * *", None, "2024-01-01T00:00:59Z"), every_minute);
        assert_eq!(
            next("*/5 * * * *", None, "2024-01-01T00:05:30Z").as_deref(),
            Some("2024-01-01T00:10:00Z")
        );
        assert_eq!(
            next("@every 90s", None, "2024-01-01T00:00:00Z").as_deref(),
            Some("2024-01-01T00:01:30Z")
        );
    }

    #[test]
    fn day_of_month_or_day_of_week_as_vixie_cron() {
        // 2024-01-01 is a Monday: the 15th or any Friday, whichever comes first.
        assert_eq!(
            next("0 0 15 * FRI", None, "2024-01-01T00:00:00Z").as_deref(),
            Some("2024-01-05T00:00:00Z")
        );
        assert_eq!(next("0 0 30 2 *", None, "2024-01-01T00:00:00Z"), None);
    }

    #[test]
    fn a_time_zone_moves_the_ticks() {
        assert_eq!(
            next("0 9 * * *", Some("Asia/Tokyo"), "2024-01-01T00:00:00Z").as_deref(),
            Some("2024-01-02T00:00:00Z")
        );
        assert_eq!(
            next("0 9 * * *", Some("America/New_York"), "2024-07-01T00:00:00Z").as_deref(),
            Some("2024-07-01T13:00:00Z")
        );
        assert_eq!(
            next("0 9 * * *", Some("America/New_York"), "2024-12-01T00:00:00Z").as_deref(),
            Some("2024-12-01T14:00:00Z")
        );
    }

    #[test]
    fn a_skipped_hour_never_fires_and_a_repeated_one_fires_twice() {
        let ny = Some("America/New_York");
        // 2012-03-11: 02:00 EST becomes 03:00 EDT; 02:30 does not exist that day.
        assert_eq!(
            next("30 2 11 3 *", ny, "2012-03-11T05:00:00Z").as_deref(),
            Some("2013-03-11T06:30:00Z")
        );
        // Hourly: 01:00 EST, then 03:00 EDT.
        assert_eq!(
            next("0 * * * *", ny, "2012-03-11T06:00:00Z").as_deref(),
            Some("2012-03-11T07:00:00Z")
        );
        // 2012-11-04: 02:00 EDT becomes 01:00 EST; 01:30 happens at 05:30Z and again at 06:30Z.
        assert_eq!(
            next("30 1 4 11 *", ny, "2012-11-04T04:00:00Z").as_deref(),
            Some("2012-11-04T05:30:00Z")
        );
        assert_eq!(
            next("30 1 4 11 *", ny, "2012-11-04T05:45:00Z").as_deref(),
            Some("2012-11-04T06:30:00Z")
        );
        assert_eq!(
            next("0 * * * *", ny, "2012-11-04T05:00:00Z").as_deref(),
            Some("2012-11-04T06:00:00Z")
        );
    }
}
