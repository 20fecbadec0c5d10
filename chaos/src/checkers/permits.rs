//! Scenario 11's check: reads the holders' logs (workloads/holder.rs writes them) and counts how
//! many holders held the semaphore at once. A hold lasts from its grant to its end, or to its
//! lease's end if that came first: a holder stopped past its lease no longer holds, whatever it
//! believes when it resumes (what fencing tokens are for).

use crate::checkers::figures::Permits;

/// One grant read back from a log; times are wall-clock milliseconds since the epoch, the one
/// clock every holder process shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    pub token: u64,
    pub granted: u64,
    /// Grant time plus the guard's validity at that moment.
    pub valid_end: u64,
    /// When the holder left; `None` if it never wrote it (killed at the end of the run).
    pub end: Option<u64>,
}

impl Hold {
    /// When the hold stopped counting: its end, cut at its lease's end.
    fn stop(&self) -> u64 {
        self.end
            .map_or(self.valid_end, |end| end.min(self.valid_end))
    }

    fn cut_short(&self) -> bool {
        self.end.is_some_and(|end| end > self.valid_end)
    }
}

/// Parses one holder's log: `grant <token> <granted> <valid-end>` then `end <token> <end>`.
/// A line that does not parse (the last one, torn by a kill) is skipped.
pub fn parse(log: &str) -> Vec<Hold> {
    let mut holds: Vec<Hold> = Vec::new();
    for line in log.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let numbers: Option<Vec<u64>> = fields.iter().skip(1).map(|f| f.parse().ok()).collect();
        match (fields.first(), numbers.as_deref()) {
            (Some(&"grant"), Some(&[token, granted, valid_end])) => holds.push(Hold {
                token,
                granted,
                valid_end,
                end: None,
            }),
            (Some(&"end"), Some(&[token, end])) => {
                // A holder logs one hold at a time, so an end closes its latest grant.
                if let Some(last) = holds.last_mut().filter(|h| h.token == token) {
                    last.end = Some(end);
                }
            }
            _ => {}
        }
    }
    holds
}

/// The figures over every holder's holds; `stops` is filled in by the caller.
pub fn check(holds: &[Hold], limit: usize) -> Permits {
    Permits {
        limit,
        max_holders: max_at_once(holds),
        cut_short: holds.iter().filter(|h| h.cut_short()).count(),
        duplicate_tokens: duplicate_tokens(holds),
        stops: 0,
    }
}

/// A sweep over the holds' endpoints. At equal times ends go first: the logs have millisecond
/// resolution, and a holder's end is written before its release lets the next one in, so an end
/// and a grant in the same millisecond are one after the other, not together.
fn max_at_once(holds: &[Hold]) -> usize {
    let mut events: Vec<(u64, i64)> = holds
        .iter()
        .filter(|h| h.stop() > h.granted)
        .flat_map(|h| [(h.granted, 1), (h.stop(), -1)])
        .collect();
    events.sort_unstable();
    let (mut now, mut max) = (0i64, 0i64);
    for (_, delta) in events {
        now += delta;
        max = max.max(now);
    }
    usize::try_from(max).unwrap_or(0)
}

fn duplicate_tokens(holds: &[Hold]) -> usize {
    let mut tokens: Vec<u64> = holds.iter().map(|h| h.token).collect();
    tokens.sort_unstable();
    tokens.windows(2).filter(|w| w[0] == w[1]).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(token: u64, granted: u64, valid_end: u64, end: Option<u64>) -> Hold {
        Hold {
            token,
            granted,
            valid_end,
            end,
        }
    }

    #[test]
    fn a_log_reads_back_into_holds_and_a_torn_line_is_skipped() {
        let log = "grant 7 100 1100\nend 7 180\ngrant 9 200 1200\nend 9 2500\ngrant 12 30";
        assert_eq!(
            parse(log),
            [
                hold(7, 100, 1100, Some(180)),
                hold(9, 200, 1200, Some(2500)),
            ]
        );
        assert_eq!(parse("grant 3 10 20\nend 4 15"), [hold(3, 10, 20, None)]);
    }

    #[test]
    fn holds_one_after_another_count_one_even_in_the_same_millisecond() {
        let holds = [
            hold(1, 0, 1000, Some(100)),
            hold(2, 100, 1100, Some(200)),
            hold(3, 200, 1200, Some(300)),
        ];
        let permits = check(&holds, 2);
        assert_eq!((permits.max_holders, permits.cut_short), (1, 0));
    }

    #[test]
    fn three_holds_that_meet_count_three() {
        let holds = [
            hold(1, 0, 1000, Some(500)),
            hold(2, 100, 1100, Some(400)),
            hold(3, 300, 1300, Some(350)),
        ];
        assert_eq!(check(&holds, 2).max_holders, 3);
    }

    #[test]
    fn a_holder_stopped_past_its_lease_stops_counting_at_the_lease_end() {
        // Holder 1 resumed at 2000 believing it held; its lease ended at 1000.
        let holds = [
            hold(1, 0, 1000, Some(2000)),
            hold(2, 1000, 2000, Some(1500)),
            hold(3, 1200, 2200, Some(1800)),
        ];
        let permits = check(&holds, 2);
        assert_eq!((permits.max_holders, permits.cut_short), (2, 1));
    }

    #[test]
    fn an_unfinished_hold_lasts_to_its_lease_end() {
        let holds = [hold(1, 0, 1000, None), hold(2, 900, 1900, Some(950))];
        assert_eq!(check(&holds, 2).max_holders, 2);
    }

    #[test]
    fn repeated_tokens_are_counted() {
        let holds = [
            hold(5, 0, 10, Some(1)),
            hold(5, 2, 10, Some(3)),
            hold(6, 4, 10, Some(5)),
            hold(5, 6, 10, Some(7)),
        ];
        assert_eq!(check(&holds, 2).duplicate_tokens, 2);
    }
}
