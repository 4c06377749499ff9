//! Free slots from free/busy: the gaps between the busy intervals of every
//! calendar asked about, inside the window, at least as long as a meeting.

use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

/// One interval, start before end.
pub(crate) type Interval = (OffsetDateTime, OffsetDateTime);

/// An RFC 3339 time, or `None`.
pub(crate) fn parse(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// `at` as RFC 3339 in UTC.
pub(crate) fn format(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// The gaps of `window` no interval of `busy` covers, each at least `min`
/// long, in order. Busy intervals may overlap, touch or reach outside the
/// window.
pub(crate) fn free(window: Interval, busy: &[Interval], min: Duration) -> Vec<Interval> {
    let mut busy: Vec<Interval> = busy
        .iter()
        .filter(|(start, end)| start < end && *end > window.0 && *start < window.1)
        .copied()
        .collect();
    busy.sort();
    let mut slots = Vec::new();
    let mut cursor = window.0;
    for (start, end) in busy {
        if start > cursor && start - cursor >= min {
            slots.push((cursor, start.min(window.1)));
        }
        cursor = cursor.max(end);
        if cursor >= window.1 {
            return slots;
        }
    }
    if window.1 - cursor >= min {
        slots.push((cursor, window.1));
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> OffsetDateTime {
        parse(text).unwrap()
    }

    fn interval(a: &str, b: &str) -> Interval {
        (at(a), at(b))
    }

    #[test]
    fn overlapping_and_touching_busy_time_leaves_the_gaps_long_enough() {
        let window = interval("2026-12-07T09:00:00Z", "2026-12-07T17:00:00Z");
        let busy = [
            interval("2026-12-07T10:00:00Z", "2026-12-07T11:00:00Z"),
            interval("2026-12-07T10:30:00+00:00", "2026-12-07T12:00:00Z"),
            interval("2026-12-07T12:00:00Z", "2026-12-07T12:15:00Z"),
            interval("2026-12-07T13:00:00+01:00", "2026-12-07T13:10:00Z"),
            interval("2026-12-07T16:40:00Z", "2026-12-07T18:00:00Z"),
        ];
        let slots: Vec<(String, String)> = free(window, &busy, Duration::minutes(30))
            .into_iter()
            .map(|(a, b)| (format(a), format(b)))
            .collect();
        assert_eq!(
            slots,
            [
                ("2026-12-07T09:00:00Z".into(), "2026-12-07T10:00:00Z".into()),
                ("2026-12-07T13:10:00Z".into(), "2026-12-07T16:40:00Z".into()),
            ]
        );
    }

    #[test]
    fn a_free_window_is_one_slot_and_a_full_one_none() {
        let window = interval("2026-12-07T09:00:00Z", "2026-12-07T10:00:00Z");
        assert_eq!(free(window, &[], Duration::minutes(30)), [window]);
        let all_day = [interval("2026-12-07T00:00:00Z", "2026-12-08T00:00:00Z")];
        assert!(free(window, &all_day, Duration::minutes(30)).is_empty());
        assert!(free(window, &[], Duration::minutes(90)).is_empty());
    }
}
