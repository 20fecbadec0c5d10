//! Redlock's arithmetic, free of I/O: quorum size, clock drift allowance and validity.
//! Time comes from a [`Clock`] so the rules are unit-tested with a fake one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Monotonic time as the algorithm sees it.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
}

/// The process's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Majority of `nodes`: N/2 + 1.
pub fn quorum(nodes: usize) -> usize {
    nodes / 2 + 1
}

/// Nodes a semaphore of `limit` holders must be held on: the smallest q with q > N·k/(k+1).
/// With fewer, k+1 holders could each hold a different q-subset without any node admitting more
/// than k of them (N=3, k=2: {A,B}, {B,C}, {A,C}); with q, the k+1 holders' (k+1)·q grants exceed
/// the N·k a node set can give. k >= N-1 needs every node.
pub fn semaphore_quorum(nodes: usize, limit: u32) -> usize {
    let k = limit.max(1) as usize;
    nodes.saturating_mul(k) / (k + 1) + 1
}

/// How much the nodes' clocks may disagree over a TTL: `ttl * factor + constant`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    pub factor: f64,
    pub constant: Duration,
}

impl Default for Drift {
    /// The Redlock paper's allowance: 1% of the TTL plus 2 ms.
    fn default() -> Self {
        Drift {
            factor: 0.01,
            constant: Duration::from_millis(2),
        }
    }
}

impl Drift {
    pub fn over(&self, ttl: Duration) -> Duration {
        ttl.mul_f64(self.factor.max(0.0)) + self.constant
    }
}

/// The TTL as the nodes apply it: whole milliseconds, rounded down. Validity is computed from
/// this, never from the finer caller value, or it would claim time the nodes did not grant.
pub fn whole_ms(ttl: Duration) -> Duration {
    Duration::from_millis(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

/// Wall-clock µs, strictly increasing within this process (two calls in the same µs must not
/// tie: equal tickets cannot wound each other, and an even split between them would stand until
/// the TTL). Across processes a tie is possible but costs only time, never safety.
pub fn draw_ticket() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX >> 1));
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(now_us.max(last + 1))
        })
        .unwrap_or(0);
    now_us.max(previous + 1)
}

/// Time the lock is still safe to use after an operation that started at `started`:
/// `ttl - elapsed - drift`, or `None` if nothing is left.
pub fn validity(ttl: Duration, started: Instant, now: Instant, drift: &Drift) -> Option<Duration> {
    let elapsed = now.saturating_duration_since(started);
    ttl.checked_sub(elapsed)?
        .checked_sub(drift.over(ttl))
        .filter(|left| !left.is_zero())
}

/// A clock for unit tests that moves only when told to.
#[cfg(test)]
pub mod testing {
    use super::Clock;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    #[derive(Debug)]
    pub struct FakeClock(Mutex<Instant>);

    impl Default for FakeClock {
        fn default() -> Self {
            FakeClock(Mutex::new(Instant::now()))
        }
    }

    impl FakeClock {
        pub fn new() -> Self {
            Self::default()
        }
        pub fn advance(&self, by: Duration) {
            *self.0.lock().unwrap() += by;
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> Instant {
            *self.0.lock().unwrap()
        }
    }

    impl Clock for std::sync::Arc<FakeClock> {
        fn now(&self) -> Instant {
            self.as_ref().now()
        }
    }

    /// Tokio's clock: with the runtime's time paused, it moves as timers fire (each call's own
    /// time included), where [`FakeClock`] moves only when told.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct TokioClock;

    impl Clock for TokioClock {
        fn now(&self) -> Instant {
            tokio::time::Instant::now().into_std()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::FakeClock;
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_semaphore_needs_more_than_n_k_over_k_plus_one_nodes() {
        // (nodes, limit, quorum)
        let cases = [
            (1, 1, 1),
            (1, 5, 1),
            (3, 1, 2),
            (3, 2, 3),
            (5, 1, 3),
            (5, 2, 4),
            (5, 3, 4),
            (5, 4, 5),
            (5, 100, 5),
            (7, 2, 5),
        ];
        for (nodes, limit, q) in cases {
            assert_eq!(semaphore_quorum(nodes, limit), q, "N={nodes} k={limit}");
            // No k+1 holders fit: (k+1)·q grants exceed the N·k places.
            assert!((limit as usize + 1) * q > nodes * limit as usize);
        }
    }

    #[test]
    fn tickets_increase_strictly_even_within_one_microsecond() {
        let tickets: Vec<u64> = (0..1000).map(|_| draw_ticket()).collect();
        assert!(tickets.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn ttl_is_rounded_down_to_what_the_nodes_apply() {
        let ms = Duration::from_millis;
        assert_eq!(whole_ms(Duration::from_micros(10_900)), ms(10));
        assert_eq!(whole_ms(Duration::from_secs(3)), ms(3000));
    }

    #[test]
    fn quorum_is_a_strict_majority() {
        assert_eq!([1, 2, 3, 4, 5, 6, 7].map(quorum), [1, 2, 2, 3, 3, 4, 4]);
    }

    #[test]
    fn drift_is_one_percent_plus_two_ms_by_default() {
        assert_eq!(Drift::default().over(MS(10_000)), MS(102));
        assert_eq!(Drift::default().over(MS(100)), MS(3));
    }

    #[test]
    fn validity_subtracts_elapsed_time_and_drift() {
        let clock = FakeClock::new();
        let started = clock.now();
        clock.advance(MS(30));
        let left = validity(MS(10_000), started, clock.now(), &Drift::default());
        assert_eq!(left, Some(MS(10_000 - 30 - 102)));
    }

    #[test]
    fn no_validity_once_elapsed_plus_drift_reaches_the_ttl() {
        let clock = FakeClock::new();
        let started = clock.now();
        let drift = Drift::default();
        clock.advance(MS(97)); // 100 ms TTL: drift 3 ms, 97 ms elapsed -> exactly 0 left
        assert_eq!(validity(MS(100), started, clock.now(), &drift), None);
        clock.advance(MS(1_000));
        assert_eq!(validity(MS(100), started, clock.now(), &drift), None);
    }

    #[test]
    fn custom_drift_is_honoured() {
        let clock = FakeClock::new();
        let started = clock.now();
        let drift = Drift {
            factor: 0.1,
            constant: MS(0),
        };
        clock.advance(MS(100));
        assert_eq!(
            validity(MS(1_000), started, clock.now(), &drift),
            Some(MS(800))
        );
    }
}
