//! When a held lock's watchdog extends it, and when it declares the lock lost: the one
//! lease-loss contract every client keeps (docs/election.md, `conformance/renewals.json`).
//!
//! A lock is lost at its *renew deadline*, [`renew_margin`] before its validity ends, unless an
//! extension confirmed by a quorum came first: never after the lease may already have ended on
//! the nodes, so the holder has the margin to stop before anyone else can be granted. An
//! extension the nodes refused (a quorum is out of reach: they say it is not held) is a loss
//! at once; one that could not be confirmed (nodes unreachable, too slow) is tried again, at
//! shorter and shorter pauses, until the renew deadline.

use std::time::Duration;

/// How long before its validity ends a lock without a confirmed extension is declared lost:
/// a tenth of the TTL, at least 1 ms (whole milliseconds, as every client counts it).
pub fn renew_margin(ttl: Duration) -> Duration {
    Duration::from_millis((ms(ttl) / 10).max(1))
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// How the last extension went (the grant itself counts as `Extended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    Extended,
    /// Enough nodes said "not held" that no quorum can extend it any more.
    Refused,
    /// Not confirmed: too few nodes answered, or too late to count.
    Unconfirmed,
}

/// What the watchdog does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// Send the next extension after this pause (and give it up at the renew deadline).
    ExtendIn(Duration),
    Lost,
}

/// The next step, with `left` of validity, the watchdog's `interval`, after `last`.
pub fn renewal(ttl: Duration, interval: Duration, left: Duration, last: Extension) -> Renewal {
    let (margin, left) = (ms(renew_margin(ttl)), ms(left));
    if last == Extension::Refused || left <= margin {
        return Renewal::Lost;
    }
    let pause = match last {
        Extension::Unconfirmed => ms(interval) / 2,
        _ => ms(interval),
    };
    // Halfway to the renew deadline at the latest: the extension has time to be confirmed.
    let to_deadline = left - margin;
    Renewal::ExtendIn(Duration::from_millis(pause.min(to_deadline / 2).max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance_tests::{name, table};

    #[test]
    fn conformance_renewals() {
        for case in table("renewals.json") {
            let ms = |key: &str| Duration::from_millis(case[key].as_u64().expect(key));
            let last = match case["last"].as_str().expect("last") {
                "extended" => Extension::Extended,
                "refused" => Extension::Refused,
                "unconfirmed" => Extension::Unconfirmed,
                other => panic!("unknown last {other}"),
            };
            let got = renewal(ms("ttl_ms"), ms("interval_ms"), ms("left_ms"), last);
            let expected = match case["next"].get("extend_in_ms") {
                Some(pause) => Renewal::ExtendIn(Duration::from_millis(pause.as_u64().unwrap())),
                None => Renewal::Lost,
            };
            assert_eq!(got, expected, "{}", name(&case));
        }
    }
}
