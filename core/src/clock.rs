//! Dates and sizes as qmd prints them, without a calendar crate. Times
//! come in as milliseconds since the epoch: the engine reads no clock.

/// `Mon DD HH:MM`, or `Mon DD  YYYY` when older than six months (UTC).
pub fn ls_date(ms: i64, now_ms: i64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = ms.div_euclid(1000);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    let name = MONTHS[(month - 1) as usize];
    if now_ms - ms > 182 * 86_400_000 {
        format!("{name} {day:>2}  {year}")
    } else {
        format!("{name} {day:>2} {:02}:{:02}", of_day / 3600, of_day % 3600 / 60)
    }
}

/// Howard Hinnant's days → (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `305 B`, `3.5 KB`, `1.2 MB`.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// `4s ago`, `3m ago`, `2h ago`, `5d ago`.
pub fn ago(ms: i64, now_ms: i64) -> String {
    let s = ((now_ms - ms) / 1000).max(0);
    match s {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// `2026-11-21T03:49:00.000Z` (JavaScript's `toISOString`).
pub fn iso8601(ms: i64) -> String {
    let (year, month, day) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{year:04}-{month:02}-{day:02}T{}Z", clock(ms))
}

/// `HH:MM:SS.mmm` of the day (UTC).
pub fn clock(ms: i64) -> String {
    let of_day = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}.{:03}", of_day / 3600, of_day % 3600 / 60, of_day % 60, ms.rem_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        // 2026-11-21 03:49 UTC
        let t = 1_795_232_940_000;
        assert_eq!(ls_date(t, t), "Nov 21 03:49");
        assert_eq!(ls_date(0, t), "Jan  1  1970");
        assert_eq!(human_size(305), "305 B");
        assert_eq!(human_size(3584), "3.5 KB");
        assert_eq!(ago(t - 4000, t), "4s ago");
        assert_eq!(iso8601(t + 7), "2026-11-21T03:49:00.007Z");
    }
}
