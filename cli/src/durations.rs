//! Durations on the command line: a number and a unit (`500ms`, `10s`, `2m`, `1h`), checked
//! against the range the nodes take before any node is asked (a bad one exits 2).

use std::time::Duration;

use dlock_client::{MAX_TTL, MAX_WAIT};

/// Any duration of the command line, at most ten years: the longest the nodes take in any
/// argument (a longer `--wait` would be refused by every node on every attempt), and far from
/// overflowing the clock.
fn parse(text: &str) -> Result<Duration, String> {
    // humantime takes a bare 0 as zero; a unit is asked for all the same, as for any number.
    if !text.is_empty() && text.trim().bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{text:?} has no unit (durations take a unit: 500ms, 10s, 2m)"
        ));
    }
    let duration = humantime::parse_duration(text)
        .map_err(|e| format!("{e} (durations take a unit: 500ms, 10s, 2m)"))?;
    if duration > MAX_WAIT {
        return Err(format!(
            "durations are at most 315360000000 ms (ten years, the longest the nodes take), got {text}"
        ));
    }
    Ok(duration)
}

/// A lease: from 1 ms to the nodes' default maximum (`dlock.max-ttl-ms`, a day).
pub fn ttl(text: &str) -> Result<Duration, String> {
    let ttl = parse(text)?;
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(format!(
            "the ttl must be from 1ms to 24h (the nodes' default dlock.max-ttl-ms), got {text}"
        ));
    }
    Ok(ttl)
}

/// A time limit that must leave room for something to happen: more than zero.
pub fn positive(text: &str) -> Result<Duration, String> {
    let duration = parse(text)?;
    if duration.is_zero() {
        return Err(format!("must be more than 0, got {text}"));
    }
    Ok(duration)
}

/// Any duration, 0 included (`--wait 0s`: one attempt).
pub fn any(text: &str) -> Result<Duration, String> {
    parse(text)
}

/// A refresh interval: at least 100 ms, so that a typo cannot hammer the nodes.
pub fn interval(text: &str) -> Result<Duration, String> {
    let interval = parse(text)?;
    if interval < Duration::from_millis(100) {
        return Err(format!("{text}: the interval must be at least 100ms"));
    }
    Ok(interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_outside_what_the_nodes_take_are_refused() {
        assert!(ttl("100d").unwrap_err().contains("from 1ms to 24h"));
        assert!(ttl("0s").is_err());
        assert!(ttl("10").unwrap_err().contains("take a unit"));
        assert_eq!(ttl("24h"), Ok(MAX_TTL));
        assert_eq!(ttl("1ms"), Ok(Duration::from_millis(1)));
    }

    #[test]
    fn durations_beyond_what_the_nodes_take_are_refused() {
        assert!(any("100000h")
            .unwrap_err()
            .contains("at most 315360000000 ms"));
        assert!(any("18446744073709551616ms").is_err());
        assert_eq!(any("3650d"), Ok(Duration::from_secs(3650 * 86_400)));
        assert!(any("0").unwrap_err().contains("no unit"));
        assert_eq!(any("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn a_zero_timeout_is_refused() {
        assert!(positive("0s").is_err());
        assert_eq!(positive("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(any("0s"), Ok(Duration::ZERO));
    }
}
