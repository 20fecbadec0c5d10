//! Time as the rules see it. The module uses the system clocks; tests and the model use fakes.

/// A source of the two kinds of time the rules need.
pub trait Clock {
    /// Wall clock, unix microseconds: floors tokens and dates deadlines (as Redis dates expiry).
    fn now_us(&self) -> u64;

    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    /// Monotonic milliseconds since an arbitrary start: measures the restart quarantine, which
    /// must neither stretch nor shrink when the wall clock is stepped.
    fn monotonic_ms(&self) -> u64;
}

/// The system's wall and monotonic clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    fn monotonic_ms(&self) -> u64 {
        static START: std::sync::LazyLock<std::time::Instant> =
            std::sync::LazyLock::new(std::time::Instant::now);
        u64::try_from(START.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
