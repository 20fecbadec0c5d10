//! Arguments refused before any node is asked, in the words every client uses
//! (conformance/errors.json): what a node would refuse anyway, and what could never work.
//! A node that refuses one all the same (its `dlock.max-ttl-ms` set lower, say) ends the
//! attempt too (`attempt::classify`): asking again cannot change its answer.

use std::time::Duration;

use crate::backend::{check_ttl, MAX_TTL};
use crate::errors::Error;
use crate::options::Options;
use crate::timing::{validity, Drift};

/// The longest duration a node takes in any argument (`WAIT timeout-ms` included): ten years,
/// the module's `LIMIT_MS` (src/wire/limits.rs). A longer wait is refused before it is sent,
/// where a node would refuse it on every attempt.
pub const MAX_WAIT: Duration = Duration::from_millis(315_360_000_000);

/// A resource's name: any bytes but none at all (an empty key names nothing a caller meant).
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::InvalidArgument(
            "the resource name must not be empty".into(),
        ));
    }
    Ok(())
}

/// The longest owner name a node takes: the module's bound (`MAX_OWNER_LEN` in
/// core/src/holders.rs), which refuses an owner outside 1 to 256 bytes.
pub const MAX_OWNER_LEN: usize = 256;

/// An owner named by the caller (`release_owner`, `extend_owner`): refused here, before any
/// node is asked, rather than sent to every node to be refused there (or, empty, to match
/// nothing and read as "not held").
pub fn check_owner(owner: &str) -> Result<(), Error> {
    if owner.is_empty() || owner.len() > MAX_OWNER_LEN {
        return Err(Error::InvalidArgument(format!(
            "owner must be 1 to {MAX_OWNER_LEN} bytes, got {} bytes",
            owner.len()
        )));
    }
    Ok(())
}

/// How long a call may wait for a lock: at most [`MAX_WAIT`].
pub fn check_wait(wait: Duration) -> Result<(), Error> {
    check_duration("wait", wait)
}

/// A duration sent to the nodes (a wait, a replica acknowledgement's timeout), or added to the
/// clock: at most [`MAX_WAIT`], beyond which a node refuses it and the clock may overflow.
pub fn check_duration(what: &str, d: Duration) -> Result<(), Error> {
    if d > MAX_WAIT {
        return Err(Error::InvalidArgument(format!(
            "{what} must be at most 315360000000 ms (ten years, the longest the nodes take), got {d:?}"
        )));
    }
    Ok(())
}

/// A TTL the nodes take ([`check_ttl`]) that also leaves some validity after the clock drift
/// allowance: validity is `ttl - elapsed - drift(ttl)`, so a shorter one is never valid, and
/// acquiring it would only retry until the wait ran out.
pub fn check_lease(ttl: Duration, drift: &Drift) -> Result<(), Error> {
    check_ttl(ttl)?;
    let ttl = crate::timing::whole_ms(ttl);
    if valid(ttl, drift) {
        return Ok(());
    }
    let allowance = format!(
        "the clock drift allowance ({}% of the TTL + {} ms)",
        drift.factor * 100.0,
        drift.constant.as_secs_f64() * 1000.0
    );
    Err(Error::InvalidArgument(match shortest_ttl(drift) {
        Some(shortest) => format!(
            "ttl must be at least {} ms: a shorter one leaves no validity after {allowance}, got {} ms",
            shortest.as_millis(),
            ttl.as_millis()
        ),
        None => format!("no ttl leaves any validity after {allowance}: lower the drift allowance"),
    }))
}

fn valid(ttl: Duration, drift: &Drift) -> bool {
    let now = std::time::Instant::now();
    validity(ttl, now, now, drift).is_some()
}

/// The shortest whole-millisecond TTL with some validity after `drift`, up to [`MAX_TTL`].
pub fn shortest_ttl(drift: &Drift) -> Option<Duration> {
    if drift.factor >= 1.0 {
        return None;
    }
    // ttl·(1 - factor) > constant; the loop settles what floating point leaves in doubt.
    let constant_ms = drift.constant.as_secs_f64() * 1000.0;
    let estimate = (constant_ms / (1.0 - drift.factor.max(0.0))).floor() as u64;
    let mut ms = estimate.saturating_sub(1).max(1);
    while Duration::from_millis(ms) <= MAX_TTL {
        if valid(Duration::from_millis(ms), drift) {
            return Some(Duration::from_millis(ms));
        }
        ms += 1;
    }
    None
}

/// Durations that go to the nodes or onto the clock: none beyond what a node takes.
pub fn check_options(opts: &Options) -> Result<(), Error> {
    let durations = [
        ("timeout", Some(opts.rounds.timeout)),
        (
            "the replica acknowledgement's timeout",
            Some(opts.replica_ack.longest()),
        ),
        ("retry_delay", Some(opts.retry_delay)),
        ("retry_jitter", Some(opts.retry_jitter)),
        ("extend_interval", opts.extend_interval),
        ("max_hold", opts.max_hold),
        ("drift_constant", Some(opts.rounds.drift.constant)),
    ];
    for (what, d) in durations {
        check_duration(what, d.unwrap_or_default())?;
    }
    let factor = opts.rounds.drift.factor;
    if !(0.0..1.0).contains(&factor) {
        return Err(Error::InvalidArgument(format!(
            "drift_factor must be at least 0 and below 1 (a share of the TTL), got {factor}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn an_owner_outside_the_module_s_bounds_is_refused() {
        assert!(check_owner("").is_err());
        assert!(check_owner(&"o".repeat(MAX_OWNER_LEN + 1)).is_err());
        assert!(check_owner(&"o".repeat(MAX_OWNER_LEN)).is_ok());
        let why = check_owner("").unwrap_err().to_string();
        assert_eq!(
            why,
            "invalid argument: owner must be 1 to 256 bytes, got 0 bytes"
        );
    }

    #[test]
    fn an_empty_name_is_refused() {
        assert!(matches!(check_name(""), Err(Error::InvalidArgument(_))));
        assert!(check_name("\n").is_ok());
    }

    #[test]
    fn a_wait_beyond_what_the_nodes_take_is_refused() {
        assert!(check_wait(MAX_WAIT).is_ok());
        let refused = check_wait(MAX_WAIT + MS(1)).unwrap_err().to_string();
        assert!(
            refused.contains("wait must be at most 315360000000 ms"),
            "{refused}"
        );
        assert!(check_wait(Duration::MAX).is_err());
    }

    #[test]
    fn a_ttl_that_drift_leaves_nothing_of_is_refused_naming_the_shortest() {
        let drift = Drift::default();
        assert_eq!(shortest_ttl(&drift), Some(MS(3)));
        let refused = check_lease(MS(2), &drift).unwrap_err().to_string();
        assert!(refused.contains("ttl must be at least 3 ms"), "{refused}");
        assert!(
            refused.contains("clock drift allowance (1% of the TTL + 2 ms)"),
            "{refused}"
        );
        assert!(check_lease(MS(3), &drift).is_ok());
        assert!(check_lease(Duration::from_micros(3_900), &drift).is_ok());
        assert!(check_lease(Duration::from_micros(2_900), &drift).is_err());
    }

    #[test]
    fn the_shortest_ttl_follows_the_drift_allowance() {
        let drift = |factor, constant| Drift { factor, constant };
        assert_eq!(shortest_ttl(&drift(0.0, MS(0))), Some(MS(1)));
        assert_eq!(shortest_ttl(&drift(0.0, MS(10))), Some(MS(11)));
        assert_eq!(shortest_ttl(&drift(0.5, MS(10))), Some(MS(21)));
        assert_eq!(shortest_ttl(&drift(1.0, MS(0))), None);
        let none = check_lease(MS(100), &drift(1.0, MS(0))).unwrap_err();
        assert!(
            none.to_string().contains("no ttl leaves any validity"),
            "{none}"
        );
    }
}
