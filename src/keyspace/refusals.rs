//! Refused values in the log, rate-limited. Every malformed or out-of-bounds value a RESTORE or a
//! load refuses is worth a line, but a client can send thousands of bad payloads a second (a fuzz
//! run logged 1,747 lines): the first refusal is logged, then at most one line a second, which
//! says how many were refused since the last line. `INFO dlock` counts them all
//! (`refused_values`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one line this often.
const EVERY: Duration = Duration::from_secs(1);

/// When the last line was logged, and the refusals since then not logged.
struct Limiter {
    last: Option<Instant>,
    unlogged: u64,
}

/// A mutex: values load on the main thread, but nothing here may assume it.
static LIMITER: Mutex<Limiter> = Mutex::new(Limiter {
    last: None,
    unlogged: 0,
});

/// Counts a refusal; `Some(n)` when it is to be logged, `n` the refusals left out since the last
/// line.
pub fn should_log(now: Instant) -> Option<u64> {
    crate::stats::count(&crate::stats::REFUSED_VALUES);
    let Ok(mut limiter) = LIMITER.lock() else {
        return None;
    };
    limiter.decide(now)
}

impl Limiter {
    fn decide(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.duration_since(last) < EVERY => {
                self.unlogged = self.unlogged.saturating_add(1);
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.unlogged))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_refusal_is_logged_then_one_a_second_with_the_count_left_out() {
        let mut limiter = Limiter {
            last: None,
            unlogged: 0,
        };
        let start = Instant::now();
        assert_eq!(limiter.decide(start), Some(0));
        for ms in 1..1_000 {
            assert_eq!(limiter.decide(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(limiter.decide(start + EVERY), Some(999));
        assert_eq!(limiter.decide(start + EVERY * 3), Some(0));
    }
}
