//! A clock for tests and the model checker that moves only when told to.

use std::cell::Cell;

use crate::clock::Clock;

#[derive(Debug, Default)]
pub struct FakeClock {
    now_us: Cell<u64>,
    monotonic_ms: Cell<u64>,
}

impl FakeClock {
    pub fn at_us(now_us: u64) -> Self {
        FakeClock {
            now_us: Cell::new(now_us),
            monotonic_ms: Cell::new(0),
        }
    }

    /// Both clocks move forward.
    pub fn advance_ms(&self, ms: u64) {
        self.now_us.set(self.now_us.get() + ms * 1000);
        self.monotonic_ms.set(self.monotonic_ms.get() + ms);
    }

    /// Steps the wall clock only, like an NTP step; monotonic time does not move.
    pub fn set_us(&self, now_us: u64) {
        self.now_us.set(now_us);
    }
}

impl Clock for &FakeClock {
    fn now_us(&self) -> u64 {
        self.now_us.get()
    }

    fn monotonic_ms(&self) -> u64 {
        self.monotonic_ms.get()
    }
}
