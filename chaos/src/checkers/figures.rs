//! Reads what a lock scenario recorded (record.rs) and counts what the suite judges:
//! overlapping critical sections, fencing rejections, accepted stale writes, and token-order
//! violations; and, for scenario 11, what its holders' logs show (permits.rs).

use crate::record::{Record, Section, Write};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    pub grants: usize,
    /// Pairs of critical sections of different grants that intersect in resource time.
    pub overlaps: usize,
    /// Writes the fencing check rejected.
    pub rejections: usize,
    /// Writes accepted although a larger token had already been accepted (must be 0: the
    /// fencing check failing to protect the resource).
    pub accepted_stale: usize,
    /// The same count for the writes that bypassed the gate: what the faults do to a resource
    /// that does not check tokens (shown, not judged).
    pub unguarded_stale: usize,
    /// Replies of the resource that were neither a write nor STALE (must be 0).
    pub resource_errors: usize,
    /// Grants whose token is not above every token granted before them.
    pub order_violations: usize,
    /// Scenario 11's figures (a semaphore has no mutual exclusion to overlap); `None` for the
    /// lock scenarios.
    pub permits: Option<Permits>,
}

/// What scenario 11 counts from its holders' logs (permits.rs).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Permits {
    pub limit: usize,
    /// Most holds in force at one instant, a hold lasting from its grant to its end or its
    /// lease's end, whichever came first.
    pub max_holders: usize,
    /// Holds whose holder was still inside when its lease ended (it had been stopped).
    pub cut_short: usize,
    /// Grants that carried a token an earlier grant already had.
    pub duplicate_tokens: usize,
    /// SIGSTOPs the harness sent to holders.
    pub stops: usize,
}

/// The figures of a lock scenario, from what its resource recorded.
pub fn judge_record(record: &Record) -> Figures {
    Figures {
        unguarded_stale: stale(record.unguarded.iter().copied()),
        resource_errors: record.errors,
        ..check(&record.sections, &record.guarded)
    }
}

pub fn check(sections: &[Section], writes: &[Write]) -> Figures {
    Figures {
        grants: sections.len(),
        overlaps: overlaps(sections),
        rejections: writes.iter().filter(|w| !w.accepted).count(),
        accepted_stale: stale(writes.iter().filter(|w| w.accepted).map(|w| w.token)),
        order_violations: order_violations(sections),
        ..Figures::default()
    }
}

fn overlaps(sections: &[Section]) -> usize {
    let mut by_start: Vec<&Section> = sections.iter().collect();
    by_start.sort_by_key(|s| s.start);
    let mut count = 0;
    for (i, a) in by_start.iter().enumerate() {
        count += by_start[i + 1..]
            .iter()
            .take_while(|b| b.start < a.end)
            .filter(|b| b.token != a.token)
            .count();
    }
    count
}

/// Writes, in the order the resource applied them, whose token is below one applied before.
fn stale(tokens: impl Iterator<Item = u64>) -> usize {
    let mut highest = 0;
    let mut count = 0;
    for token in tokens {
        if token < highest {
            count += 1;
        }
        highest = highest.max(token);
    }
    count
}

fn order_violations(sections: &[Section]) -> usize {
    let mut by_grant: Vec<&Section> = sections.iter().collect();
    by_grant.sort_by_key(|s| s.granted_at);
    let mut highest = 0;
    let mut violations = 0;
    for s in by_grant {
        if s.token <= highest {
            violations += 1;
        }
        highest = highest.max(s.token);
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn section(token: u64, granted: u64, start: u64, end: u64) -> Section {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        Section {
            token,
            granted_at: at(granted),
            start: at(start),
            end: at(end),
        }
    }

    fn write(token: u64, accepted: bool) -> Write {
        Write { token, accepted }
    }

    #[test]
    fn disjoint_sections_in_token_order_are_clean() {
        let s = [
            section(1, 0, 1, 5),
            section(2, 6, 7, 9),
            section(3, 10, 10, 12),
        ];
        let w = [write(1, true), write(2, true), write(3, true)];
        assert_eq!(
            check(&s, &w),
            Figures {
                grants: 3,
                ..Figures::default()
            }
        );
    }

    #[test]
    fn intersecting_sections_count_as_overlaps() {
        let s = [
            section(1, 0, 1, 10),
            section(2, 2, 3, 4),
            section(3, 5, 6, 12),
        ];
        assert_eq!(check(&s, &[]).overlaps, 2);
    }

    #[test]
    fn a_later_grant_with_a_smaller_or_equal_token_is_a_violation() {
        let s = [
            section(5, 0, 1, 2),
            section(4, 3, 4, 5),
            section(5, 6, 7, 8),
            section(9, 9, 9, 9),
        ];
        assert_eq!(check(&s, &[]).order_violations, 2);
    }

    #[test]
    fn rejections_and_accepted_stale_writes_are_told_apart() {
        let w = [
            write(5, true),
            write(3, false),
            write(7, true),
            write(6, true),
        ];
        let f = check(&[], &w);
        assert_eq!((f.rejections, f.accepted_stale), (1, 1));
    }

    #[test]
    fn writes_that_bypassed_the_gate_are_counted_apart_from_the_guarded_ones() {
        let record = Record {
            sections: Vec::new(),
            guarded: vec![write(5, true), write(7, true), write(6, false)],
            unguarded: vec![5, 7, 6, 8, 4],
            errors: 0,
        };
        let f = judge_record(&record);
        assert_eq!(
            (f.rejections, f.accepted_stale, f.unguarded_stale),
            (1, 0, 2)
        );
    }
}
