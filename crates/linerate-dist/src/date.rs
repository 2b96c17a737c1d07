//! Calendar dates for the changelog's trailer lines (RFC 2822, in UTC), without a date crate:
//! days from the civil date and back (Howard Hinnant's algorithms, proleptic Gregorian).

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date {
    pub year: i64,
    pub month: u32,
    pub day: u32,
}

impl Date {
    /// `2026-12-01`; `None` for anything else, an impossible day included.
    pub fn parse_iso(s: &str) -> Option<Date> {
        let mut parts = s.splitn(3, '-');
        let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
        if y.len() != 4 || m.len() != 2 || d.len() != 2 {
            return None;
        }
        let date = Date {
            year: y.parse().ok()?,
            month: m.parse().ok()?,
            day: d.parse().ok()?,
        };
        (civil(days(date)) == date).then_some(date)
    }

    /// Seconds since the Unix epoch at 00:00:00 UTC that day.
    pub fn at_midnight(self) -> i64 {
        days(self) * 86_400
    }
}

/// Days since 1970-01-01.
fn days(d: Date) -> i64 {
    let y = if d.month <= 2 { d.year - 1 } else { d.year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(d.month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d.day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil(z: i64) -> Date {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).expect("1..=31");
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).expect("1..=12");
    Date {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
    }
}

/// `Thu, 26 Nov 2026 10:00:00 +0000`, the form deb-changelog(5) asks for.
pub fn rfc2822(epoch: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let z = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    let d = civil(z);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        WEEKDAYS[usize::try_from(z.rem_euclid(7)).expect("0..7")],
        d.day,
        MONTHS[d.month as usize - 1],
        d.year,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(rfc2822(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        // `date -u -R -d @1795687200`
        assert_eq!(rfc2822(1_795_687_200), "Thu, 26 Nov 2026 10:00:00 +0000");
        assert_eq!(rfc2822(951_825_600), "Tue, 29 Feb 2000 12:00:00 +0000");
        assert_eq!(rfc2822(-1), "Wed, 31 Dec 1969 23:59:59 +0000");
    }

    #[test]
    fn iso_dates_round_trip_and_impossible_ones_are_refused() {
        let d = Date::parse_iso("2026-03-02").unwrap();
        assert_eq!(rfc2822(d.at_midnight()), "Mon, 02 Mar 2026 00:00:00 +0000");
        assert_eq!(Date::parse_iso("2024-02-29").map(|d| d.day), Some(29));
        assert_eq!(Date::parse_iso("2026-02-29"), None);
        assert_eq!(Date::parse_iso("2026-13-01"), None);
        assert_eq!(Date::parse_iso("26-03-02"), None);
        assert_eq!(Date::parse_iso("not yet"), None);
    }
}
