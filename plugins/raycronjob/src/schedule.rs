//! A RayCronJob's `schedule` and `timeZone`, read as KubeRay reads them (robfig/cron's standard parser): five
//! fields (minute, hour, day of month, month, day of week) with names, ranges, steps and `?`, or one of the
//! descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly` and
//! `@every <duration>`. The pattern itself is parsed by [croner]; [`crate::tick`] finds its ticks.

use std::fmt;

use croner::{
    Cron,
    parser::{CronParser, Seconds, Year},
};
use jiff::{SignedDuration, tz::TimeZone};

/// When a RayCronJob's ticks are.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron pattern, evaluated on the wall clock of `zone`.
    Pattern {
        /// The parsed pattern (boxed: it is large next to `Every`).
        cron: Box<Cron>,
        /// `timeZone`, or UTC when it is unset.
        zone: TimeZone,
    },
    /// `@every <duration>`: a fixed interval in whole seconds (at least one).
    Every(i64),
}

/// Why a schedule or a time zone is refused; the message is what the Warning event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads `schedule` in `time_zone` (`None`: the operator's zone, which for a plugin is UTC).
pub fn parse(schedule: &str, time_zone: Option<&str>) -> Result<Schedule, Invalid> {
    if schedule.contains("TZ") {
        return Err(Invalid(
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into(),
        ));
    }
    let zone = zone(time_zone)?;
    let text = schedule.trim();
    if let Some(interval) = text.strip_prefix("@every ") {
        return every(interval.trim()).map(Schedule::Every);
    }
    let pattern = if text.starts_with('@') {
        descriptor(text)
            .ok_or_else(|| Invalid(format!("invalid cron schedule: unrecognized descriptor: {text}")))?
    } else {
        text
    };
    let cron = parser()
        .parse(pattern)
        .map_err(|e| Invalid(format!("invalid cron schedule: {e}")))?;
    Ok(Schedule::Pattern {
        cron: Box::new(cron),
        zone,
    })
}

/// The IANA zone `name`, from the database compiled into the plugin; UTC when unset.
pub fn zone(name: Option<&str>) -> Result<TimeZone, Invalid> {
    match name {
        None | Some("UTC" | "Local") => Ok(TimeZone::UTC),
        Some("") => Err(Invalid(
            "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator"
                .into(),
        )),
        Some(name) => TimeZone::get(name)
            .map_err(|_| Invalid(format!("invalid time zone: unknown time zone {name}"))),
    }
}

/// Five fields exactly: no seconds, no years.
fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
}

/// The five-field pattern a descriptor stands for (robfig/cron's list, lower case only as there).
fn descriptor(text: &str) -> Option<&'static str> {
    Some(match text {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

/// `@every`'s duration (`90s`, `1h30m`), whole seconds, at least one as robfig/cron rounds it up to.
fn every(text: &str) -> Result<i64, Invalid> {
    let duration: SignedDuration = text.parse().map_err(|e| {
        Invalid(format!(
            "invalid cron schedule: failed to parse duration @every {text}: {e}"
        ))
    })?;
    if duration.is_negative() {
        return Err(Invalid(format!(
            "invalid cron schedule: failed to parse duration @every {text}: negative"
        )));
    }
    Ok(duration.as_secs().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(schedule: &str, zone: Option<&str>) -> String {
        match parse(schedule, zone) {
            Err(Invalid(message)) => message,
            Ok(s) => format!("accepted: {s:?}"),
        }
    }

    #[test]
    fn five_fields_and_descriptors_are_read() {
        for ok in [
            "* * * * *",
            "*/5 0-6 1,15 JAN-MAR mon-fri",
            "0 0 ? * SUN",
            "@hourly",
            "@midnight",
            "@annually",
        ] {
            assert!(parse(ok, None).is_ok(), "{ok}");
        }
        assert!(matches!(parse("@every 1h30m", None), Ok(Schedule::Every(5400))));
        assert!(matches!(parse("@every 10ms", None), Ok(Schedule::Every(1))));
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        assert!(refused("invalid cron string", None).starts_with("invalid cron schedule: "));
        assert!(refused("* * * *", None).starts_with("invalid cron schedule: "));
        assert!(refused("0 * * * * *", None).starts_with("invalid cron schedule: "));
        assert!(refused("61 * * * *", None).starts_with("invalid cron schedule: "));
        assert!(refused("@fortnightly", None).contains("unrecognized descriptor"));
        assert!(refused("@every soon", None).contains("failed to parse duration"));
        assert_eq!(
            refused("TZ=UTC * * * * *", None),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        );
    }

    #[test]
    fn time_zones_come_from_the_compiled_in_database() {
        assert!(parse("0 9 * * *", Some("Asia/Tokyo")).is_ok());
        assert!(parse("0 9 * * *", Some("America/New_York")).is_ok());
        assert_eq!(
            refused("0 9 * * *", Some("Mars/Olympus_Mons")),
            "invalid time zone: unknown time zone Mars/Olympus_Mons"
        );
        assert!(refused("0 9 * * *", Some("")).starts_with("timeZone must not be empty"));
    }
}
