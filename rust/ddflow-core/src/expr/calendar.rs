//! The `.dt` kernels: fields, epoch counts, truncation and calendar offsets of dates and
//! timestamps, on their stored words (days, or units since the epoch), with chrono.
//!
//! A timestamp with a time zone is taken apart in that zone (`UTC`, a fixed offset such as
//! `+05:30`, or an IANA name via chrono-tz); truncation and offsets work on its local time
//! and map back to the instant (an ambiguous local time takes the earlier instant, a
//! skipped one is an error). `weekday` is ISO (Monday 1 to Sunday 7). Offsets and
//! truncation take Polars' duration strings: terms `<int><unit>` with units `ns`, `us`,
//! `ms`, `s`, `m`, `h`, `d`, `w`, `mo`, `q`, `y` (`"3mo"`, `"-1y"`, `"1d12h"`); months,
//! quarters and years are calendar units (the day is clamped to the month's last: Jan 31
//! plus one month is Feb 28 or 29).

use crate::dtype::{DType, TimeUnit};
use crate::error::{Error, Result};
use crate::values::{date_of_days, EPOCH_DAYS_FROM_CE};
use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, Months, NaiveDate, NaiveDateTime, TimeZone,
    Timelike,
};

/// A field of a date or timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtPart {
    /// The year.
    Year,
    /// The month, 1 to 12.
    Month,
    /// The day of the month, 1 to 31.
    Day,
    /// The hour, 0 to 23.
    Hour,
    /// The minute, 0 to 59.
    Minute,
    /// The second, 0 to 59.
    Second,
    /// The ISO weekday: Monday 1 to Sunday 7.
    Weekday,
}

impl DtPart {
    /// Every part, in the order of the JSON names.
    pub const ALL: [DtPart; 7] = [
        DtPart::Year,
        DtPart::Month,
        DtPart::Day,
        DtPart::Hour,
        DtPart::Minute,
        DtPart::Second,
        DtPart::Weekday,
    ];

    /// The JSON `op` name (`dt.year`, ...).
    pub fn json_name(self) -> &'static str {
        match self {
            DtPart::Year => "dt.year",
            DtPart::Month => "dt.month",
            DtPart::Day => "dt.day",
            DtPart::Hour => "dt.hour",
            DtPart::Minute => "dt.minute",
            DtPart::Second => "dt.second",
            DtPart::Weekday => "dt.weekday",
        }
    }
}

/// A time zone as chrono takes it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Zone {
    Fixed(FixedOffset),
    Named(chrono_tz::Tz),
}

/// How the words of a date or timestamp column read as calendar values.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Calendar {
    /// Days since 1970-01-01.
    Date,
    /// Units since the epoch, read in a zone (UTC when the dtype has none).
    Instant(TimeUnit, Zone),
}

impl Calendar {
    /// The calendar of a date or timestamp dtype; an error naming the dtype otherwise (or
    /// an unknown zone).
    pub(crate) fn of(dtype: DType, what: &str) -> Result<Calendar> {
        match dtype {
            DType::Date32 => Ok(Calendar::Date),
            DType::Timestamp(unit, zone) => {
                let zone = match zone {
                    None => Zone::Fixed(FixedOffset::east_opt(0).expect("zero offset")),
                    Some(z) => parse_zone(z.name())?,
                };
                Ok(Calendar::Instant(unit, zone))
            }
            other => Err(Error::Type(format!(
                "{what} needs a date32 or timestamp operand, got {}",
                other.name()
            ))),
        }
    }

    /// The local date and time of a word (`None` out of chrono's range).
    fn local(&self, v: i64) -> Option<NaiveDateTime> {
        match *self {
            Calendar::Date => Some(date_of_days(v)?.and_hms_opt(0, 0, 0)?),
            Calendar::Instant(unit, zone) => {
                let utc = crate::values::instant(v, unit)?;
                Some(match zone {
                    Zone::Fixed(z) => utc.with_timezone(&z).naive_local(),
                    Zone::Named(z) => utc.with_timezone(&z).naive_local(),
                })
            }
        }
    }

    /// The word of a local date and time (`None` out of range or skipped by the zone).
    pub(crate) fn local_word(&self, t: NaiveDateTime) -> Option<i64> {
        self.word(t)
    }

    fn word(&self, t: NaiveDateTime) -> Option<i64> {
        match *self {
            Calendar::Date => Some(t.date().num_days_from_ce() as i64 - EPOCH_DAYS_FROM_CE as i64),
            Calendar::Instant(unit, zone) => {
                let utc = match zone {
                    Zone::Fixed(z) => earliest(z.from_local_datetime(&t))?.naive_utc(),
                    Zone::Named(z) => earliest(z.from_local_datetime(&t))?.naive_utc(),
                };
                let secs = utc.and_utc().timestamp();
                let nanos = utc.and_utc().timestamp_subsec_nanos() as i64;
                let per = unit.per_second();
                secs.checked_mul(per)?
                    .checked_add(nanos / (1_000_000_000 / per))
                    .filter(|&w| w != i64::MIN)
            }
        }
    }
}

fn earliest<T: TimeZone>(r: LocalResult<DateTime<T>>) -> Option<DateTime<T>> {
    match r {
        LocalResult::Single(t) => Some(t),
        LocalResult::Ambiguous(a, _) => Some(a),
        LocalResult::None => None,
    }
}

fn parse_zone(name: &str) -> Result<Zone> {
    if name == "UTC" || name == "Z" {
        return Ok(Zone::Fixed(FixedOffset::east_opt(0).expect("zero offset")));
    }
    if let Some(sign) = name.chars().next().filter(|c| *c == '+' || *c == '-') {
        let rest = &name[1..];
        let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
        if let (Ok(h), Ok(m)) = (h.parse::<i32>(), m.parse::<i32>()) {
            let secs = (h * 3600 + m * 60) * if sign == '-' { -1 } else { 1 };
            if let Some(z) = FixedOffset::east_opt(secs) {
                return Ok(Zone::Fixed(z));
            }
        }
    }
    name.parse::<chrono_tz::Tz>()
        .map(Zone::Named)
        .map_err(|_| Error::Type(format!("unknown time zone {name:?}")))
}

/// Field `part` of a word.
pub(crate) fn field(cal: &Calendar, v: i64, part: DtPart) -> Option<i64> {
    let t = cal.local(v)?;
    Some(match part {
        DtPart::Year => t.year() as i64,
        DtPart::Month => t.month() as i64,
        DtPart::Day => t.day() as i64,
        DtPart::Hour => t.hour() as i64,
        DtPart::Minute => t.minute() as i64,
        DtPart::Second => t.second() as i64,
        DtPart::Weekday => t.weekday().number_from_monday() as i64,
    })
}

/// A parsed duration string: calendar months plus a fixed number of nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every {
    /// Calendar months (years and quarters included).
    pub months: i64,
    /// Fixed nanoseconds (weeks, days, hours, ...).
    pub nanos: i128,
}

/// Parses a Polars duration string (`"3mo"`, `"-1y"`, `"1d12h"`).
pub fn parse_every(text: &str) -> Result<Every> {
    let bad = || {
        Error::Plan(format!(
            "invalid duration string {text:?}: expected terms like \"3mo\", \"-1y\", \"1d12h\" \
             (units ns, us, ms, s, m, h, d, w, mo, q, y)"
        ))
    };
    let s = text.trim();
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    if rest.is_empty() {
        return Err(bad());
    }
    let mut every = Every {
        months: 0,
        nanos: 0,
    };
    while !rest.is_empty() {
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        let letters = rest[digits..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        if digits == 0 || letters == 0 {
            return Err(bad());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit = &rest[digits..digits + letters];
        let nanos_per: i128 = match unit {
            "ns" => 1,
            "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" => 604_800_000_000_000,
            "mo" | "q" | "y" => {
                let per = match unit {
                    "mo" => 1,
                    "q" => 3,
                    _ => 12,
                };
                every.months = n
                    .checked_mul(per)
                    .and_then(|m| every.months.checked_add(m))
                    .ok_or_else(bad)?;
                rest = &rest[digits + letters..];
                continue;
            }
            _ => return Err(bad()),
        };
        every.nanos += n as i128 * nanos_per;
        rest = &rest[digits + letters..];
    }
    if negative {
        every.months = -every.months;
        every.nanos = -every.nanos;
    }
    Ok(every)
}

fn add_months(t: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let m = Months::new(u32::try_from(months.unsigned_abs()).ok()?);
    if months >= 0 {
        t.checked_add_months(m)
    } else {
        t.checked_sub_months(m)
    }
}

/// A word offset by `every` (calendar months on the local date, then the fixed part).
pub(crate) fn offset_by(cal: &Calendar, v: i64, every: Every) -> Option<i64> {
    let mut t = cal.local(v)?;
    if every.months != 0 {
        t = add_months(t, every.months)?;
    }
    if every.nanos != 0 {
        if let Calendar::Date = cal {
            // A date moves by whole days.
            let per_day = 86_400_000_000_000i128;
            let days = every.nanos.div_euclid(per_day);
            t = t.checked_add_signed(chrono::TimeDelta::days(i64::try_from(days).ok()?))?;
        } else {
            let d = chrono::TimeDelta::nanoseconds(i64::try_from(every.nanos).ok()?);
            t = t.checked_add_signed(d)?;
        }
    }
    cal.word(t)
}

/// A word truncated to a multiple of `every` (positive): calendar months from year 0's
/// January, fixed lengths from the epoch in local time.
pub(crate) fn truncate(cal: &Calendar, v: i64, every: Every) -> Option<i64> {
    let t = cal.local(v)?;
    let out = if every.months > 0 {
        let months = t.year() as i64 * 12 + t.month0() as i64;
        let start = months - months.rem_euclid(every.months);
        let (y, m) = (start.div_euclid(12), start.rem_euclid(12) + 1);
        NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m as u32, 1)?.and_hms_opt(0, 0, 0)?
    } else {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?.and_hms_opt(0, 0, 0)?;
        let since = (t - epoch).num_nanoseconds()? as i128;
        let start = since - since.rem_euclid(every.nanos);
        epoch.checked_add_signed(chrono::TimeDelta::nanoseconds(i64::try_from(start).ok()?))?
    };
    cal.word(out)
}

/// The count of `unit` since the epoch (`"d"` for days, or a time unit name).
pub(crate) fn epoch(cal: &Calendar, v: i64, unit: EpochUnit) -> Option<i64> {
    let (count, per_second): (i128, i128) = match *cal {
        Calendar::Date => (v as i128 * 86_400, 1),
        Calendar::Instant(u, _) => (v as i128, u.per_second() as i128),
    };
    let out = match unit {
        EpochUnit::Days => (count / per_second).div_euclid(86_400),
        EpochUnit::Time(to) => {
            let to = to.per_second() as i128;
            if to >= per_second {
                count * (to / per_second)
            } else {
                count.div_euclid(per_second / to)
            }
        }
    };
    i64::try_from(out).ok().filter(|&w| w != i64::MIN)
}

/// The unit of `dt.epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochUnit {
    /// Whole days.
    Days,
    /// A time unit.
    Time(TimeUnit),
}

impl EpochUnit {
    /// Parses `d`, `s`, `ms`, `us` or `ns`.
    pub fn parse(name: &str) -> Result<EpochUnit> {
        if name == "d" {
            return Ok(EpochUnit::Days);
        }
        TimeUnit::parse(name).map(EpochUnit::Time).ok_or_else(|| {
            Error::Plan(format!(
                "dt.epoch unit must be \"d\", \"s\", \"ms\", \"us\" or \"ns\", got {name:?}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TimeZone as Tz;

    fn days(y: i32, m: u32, d: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d).unwrap().num_days_from_ce() as i64
            - EPOCH_DAYS_FROM_CE as i64
    }

    #[test]
    fn fields_offsets_and_truncation_of_dates() {
        let cal = Calendar::of(DType::Date32, "t").unwrap();
        let v = days(1995, 3, 15);
        assert_eq!(field(&cal, v, DtPart::Year), Some(1995));
        assert_eq!(field(&cal, v, DtPart::Month), Some(3));
        assert_eq!(field(&cal, v, DtPart::Day), Some(15));
        assert_eq!(field(&cal, v, DtPart::Weekday), Some(3)); // a Wednesday
        let three_months = parse_every("3mo").unwrap();
        assert_eq!(offset_by(&cal, v, three_months), Some(days(1995, 6, 15)));
        let jan31 = days(2024, 1, 31);
        assert_eq!(
            offset_by(&cal, jan31, parse_every("1mo").unwrap()),
            Some(days(2024, 2, 29))
        );
        assert_eq!(
            offset_by(&cal, v, parse_every("-1y").unwrap()),
            Some(days(1994, 3, 15))
        );
        assert_eq!(
            offset_by(&cal, v, parse_every("2w").unwrap()),
            Some(days(1995, 3, 29))
        );
        assert_eq!(
            truncate(&cal, v, parse_every("1mo").unwrap()),
            Some(days(1995, 3, 1))
        );
        assert_eq!(
            truncate(&cal, v, parse_every("1q").unwrap()),
            Some(days(1995, 1, 1))
        );
        assert_eq!(
            truncate(&cal, v, parse_every("1y").unwrap()),
            Some(days(1995, 1, 1))
        );
        assert_eq!(epoch(&cal, v, EpochUnit::Days), Some(v));
        assert_eq!(
            epoch(&cal, 1, EpochUnit::Time(TimeUnit::Second)),
            Some(86_400)
        );
        assert!(parse_every("3 months").is_err());
        assert!(parse_every("").is_err());
        assert_eq!(parse_every("1d12h").unwrap().nanos, 36 * 3_600_000_000_000);
    }

    #[test]
    fn timestamps_in_their_zone() {
        let paris = DType::Timestamp(TimeUnit::Second, Some(Tz::new("Europe/Paris")));
        let cal = Calendar::of(paris, "t").unwrap();
        // 1970-01-01 23:30 UTC is 00:30 on Jan 2 in Paris.
        let v = 23 * 3600 + 1800;
        assert_eq!(field(&cal, v, DtPart::Day), Some(2));
        assert_eq!(field(&cal, v, DtPart::Hour), Some(0));
        // Truncated to the local day: midnight in Paris, 23:00 UTC on Jan 1.
        assert_eq!(
            truncate(&cal, v, parse_every("1d").unwrap()),
            Some(23 * 3600)
        );
        let naive = Calendar::of(DType::Timestamp(TimeUnit::Milli, None), "t").unwrap();
        assert_eq!(field(&naive, 1_500, DtPart::Second), Some(1));
        assert_eq!(
            epoch(&naive, 1_500, EpochUnit::Time(TimeUnit::Second)),
            Some(1)
        );
        assert_eq!(
            epoch(&naive, -1, EpochUnit::Time(TimeUnit::Second)),
            Some(-1)
        );
        assert!(Calendar::of(DType::Int64, "dt.year").is_err());
        let bad = DType::Timestamp(TimeUnit::Second, Some(Tz::new("Mars/Olympus")));
        assert!(Calendar::of(bad, "t").is_err());
    }
}
