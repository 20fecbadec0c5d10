//! The lock rules, free of the Redis API: who may acquire, release, extend and fence a lock, and
//! how fencing tokens are issued. The command layer reads the stored lock, asks these rules what
//! to do, and applies the answer. Unit-tested here with a fake clock.

/// Longest owner accepted, in bytes.
pub const MAX_OWNER_LEN: usize = 256;
/// Largest reentrant hold count (stored in 16 bits to keep a lock small).
pub const MAX_HOLDS: u16 = u16::MAX;
/// Largest token a client may send (Redis integers are signed 64-bit).
pub const MAX_TOKEN: u64 = i64::MAX as u64;

/// Time as the rules see it. The module uses the system clocks; unit tests use a fake.
pub trait Clock {
    /// Wall clock, unix microseconds: floors tokens and dates expiries (as Redis does).
    fn now_us(&self) -> u64;
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }
    /// Monotonic milliseconds since an arbitrary start: measures the quarantine, which must not
    /// stretch or shrink when the wall clock is stepped.
    fn monotonic_ms(&self) -> u64;
}

/// The system's wall clock (what Redis itself uses for expiry).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    }

    fn monotonic_ms(&self) -> u64 {
        static START: std::sync::LazyLock<std::time::Instant> =
            std::sync::LazyLock::new(std::time::Instant::now);
        START.elapsed().as_millis() as u64
    }
}

/// A lock as currently stored on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held<'a> {
    pub owner: &'a [u8],
    pub token: u64,
    pub holds: u16,
}

/// Settings that change the rules (the module's `dlock.*` configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub quarantine_ms: u64,
    pub clock_floor: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The lock was free: store a new lock with this token and one hold.
    Granted { token: u64 },
    /// Already ours: keep the token, reset the TTL, store `holds`.
    Renewed { token: u64, holds: u16 },
    /// Held by another owner.
    Contended,
    /// Free, but the node is in restart quarantine and may have forgotten a grant.
    Quarantined { ms_left: u64 },
    /// REENTRANT would overflow the hold count.
    HoldLimit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    NotHeld,
    /// Still held by the same owner with fewer holds.
    Decremented {
        holds: u16,
    },
    /// Last hold released: remove the lock.
    Removed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    NotHeld,
    /// Store `token` as the lock's token; the counter has been raised to at least `token`.
    Fenced {
        token: u64,
    },
}

/// Per-node state: the fencing counter shared by all keys, and the quarantine start.
#[derive(Debug)]
pub struct Node<C: Clock> {
    clock: C,
    counter: u64,
    started_ms: u64,
}

impl<C: Clock> Node<C> {
    /// A node that starts now (the quarantine window opens now).
    pub fn new(clock: C) -> Self {
        let started_ms = clock.monotonic_ms();
        Node {
            clock,
            counter: 0,
            started_ms,
        }
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The highest token this node issued or was fenced to.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Raises the counter to at least `to` (loading, replication, FENCE); never lowers it.
    pub fn raise_counter(&mut self, to: u64) {
        self.counter = self.counter.max(to);
    }

    /// Milliseconds of restart quarantine left (0 when over).
    pub fn quarantine_left_ms(&self, settings: &Settings) -> u64 {
        let ends = self.started_ms.saturating_add(settings.quarantine_ms);
        ends.saturating_sub(self.clock.monotonic_ms())
    }

    /// `token = max(counter + 1, now_us)`: strictly increasing, and floored by the wall clock so
    /// a node that lost its counter still issues tokens above the ones it issued before.
    fn issue_token(&mut self, settings: &Settings) -> u64 {
        let next = self.counter.saturating_add(1);
        let token = if settings.clock_floor {
            next.max(self.clock.now_us())
        } else {
            next
        };
        self.counter = token;
        token
    }

    pub fn acquire(
        &mut self,
        held: Option<Held<'_>>,
        owner: &[u8],
        reentrant: bool,
        settings: &Settings,
    ) -> Acquire {
        match held {
            Some(lock) if lock.owner == owner => renew(lock, reentrant),
            Some(_) => Acquire::Contended,
            None => match self.quarantine_left_ms(settings) {
                0 => Acquire::Granted {
                    token: self.issue_token(settings),
                },
                ms_left => Acquire::Quarantined { ms_left },
            },
        }
    }

    pub fn fence(&mut self, held: Option<Held<'_>>, owner: &[u8], token: u64) -> Fence {
        match held {
            Some(lock) if lock.owner == owner => {
                self.raise_counter(token);
                Fence::Fenced { token }
            }
            _ => Fence::NotHeld,
        }
    }
}

fn renew(lock: Held<'_>, reentrant: bool) -> Acquire {
    let holds = if reentrant {
        match lock.holds.checked_add(1) {
            Some(holds) => holds,
            None => return Acquire::HoldLimit,
        }
    } else {
        lock.holds
    };
    Acquire::Renewed {
        token: lock.token,
        holds,
    }
}

pub fn release(held: Option<Held<'_>>, owner: &[u8]) -> Release {
    match held {
        Some(lock) if lock.owner == owner && lock.holds > 1 => Release::Decremented {
            holds: lock.holds - 1,
        },
        Some(lock) if lock.owner == owner => Release::Removed,
        _ => Release::NotHeld,
    }
}

/// Extension never resurrects: an expired lock is not `held` any more, so it is `false`.
pub fn may_extend(held: Option<Held<'_>>, owner: &[u8]) -> bool {
    matches!(held, Some(lock) if lock.owner == owner)
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
