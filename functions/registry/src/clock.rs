//! Wall-clock time as the registry writes and reads it: Unix seconds, and UTC timestamps of
//! the one form `2026-11-22T21:40:00Z` (token expiries, rejection records). A leaf module, so
//! that every module that needs the time depends on it and nothing else; no date library for
//! one timestamp format.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Monotonic time as the registry's bounded waits read it (how old a kept key set is, when an
/// issuer was last asked): the real `Instant::now()`, or a clock that a test moves by hand, so
/// that a test of "refused for 30 s, then fetched again" neither sleeps 30 s nor depends on
/// how busy the machine is.
#[derive(Debug, Clone, Default)]
pub struct Monotonic(Option<Arc<Mutex<Instant>>>);

impl Monotonic {
    /// `Instant::now()`: what every deployment runs.
    pub fn real() -> Self {
        Monotonic(None)
    }

    /// A clock standing still at the moment it was made until `advance` moves it.
    pub fn manual() -> Self {
        Monotonic(Some(Arc::new(Mutex::new(Instant::now()))))
    }

    /// Now, on this clock.
    pub fn now(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(at) => *at.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// How long ago `earlier` was, on this clock (zero for a later instant).
    pub fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// Move a manual clock forward (a real one cannot be moved: does nothing).
    pub fn advance(&self, by: Duration) {
        if let Some(at) = &self.0 {
            *at.lock().unwrap_or_else(PoisonError::into_inner) += by;
        }
    }
}

/// Seconds since the Unix epoch (0 if the clock is set before it).
pub fn now_unix() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// Whether something fetched at `at` (Unix seconds) is younger than `ttl` at `now`; a time in
/// the future, from a skewed clock, is not fresh.
pub fn fresh(at: i64, now: i64, ttl: Duration) -> bool {
    let age = now - at;
    age >= 0 && (age as u64) < ttl.as_secs()
}

/// Now as `2026-11-22T21:40:00Z`.
pub fn rfc3339_now() -> String {
    rfc3339(now_unix())
}

/// Unix seconds as `2026-11-22T21:40:00Z`.
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parse `YYYY-MM-DDTHH:MM:SSZ` (UTC) to Unix seconds; `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-11-22T21:40:05Z"), Some(1_795_383_605));
        assert_eq!(rfc3339(1_795_383_605), "2026-11-22T21:40:05Z");
        for secs in [0, 951_782_400, 4_107_542_399, 1_795_383_605] {
            assert_eq!(parse_rfc3339(&rfc3339(secs)), Some(secs), "{secs}");
        }
        for bad in ["2026-13-01T00:00:00Z", "2026-11-22 21:40:05Z", "2026-11-22T21:40:05+01:00", "soon", ""] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        let now = rfc3339_now();
        assert!(now.starts_with("20") && now.as_bytes()[10] == b'T', "{now}");
        assert!(parse_rfc3339(&now).is_some_and(|t| (t - now_unix()).abs() < 5), "{now}");
    }

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let clock = Monotonic::manual();
        let start = clock.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.now(), start, "stands still");
        let copy = clock.clone();
        copy.advance(Duration::from_secs(30));
        assert_eq!(clock.since(start), Duration::from_secs(30), "clones share the clock");
        assert_eq!(clock.since(start + Duration::from_secs(60)), Duration::ZERO);
        let real = Monotonic::real();
        let before = real.now();
        real.advance(Duration::from_secs(3600));
        assert!(real.since(before) < Duration::from_secs(3600), "the real clock is not moved");
    }
}
