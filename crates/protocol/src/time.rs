//! [`Millis`](crate::Millis) timestamps: the wall clock's, and shown to a person without a
//! date-time crate.

/// Milliseconds since the Unix epoch (0 for a clock set before it).
pub fn now_ms() -> crate::Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as crate::Millis)
}

/// `YYYY-MM-DD HH:MM` in UTC, from milliseconds since the Unix epoch.
pub fn format_utc_minutes(ms: crate::Millis) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::format_utc_minutes;

    #[test]
    fn formats_utc_times() {
        assert_eq!(format_utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(format_utc_minutes(1_709_251_200_000), "2024-03-01 00:00");
        assert_eq!(format_utc_minutes(1_764_451_200_000), "2025-11-29 21:20");
        // Before the epoch, leap day of 1968.
        assert_eq!(format_utc_minutes(-58_060_800_000), "1968-02-29 00:00");
    }
}
