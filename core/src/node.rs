//! Per-node state shared by all keys: the fencing counter and the restart quarantine, and the
//! one place tokens are issued or accepted.

use crate::clock::Clock;
use crate::holders::Holder;

/// Largest token (Redis integers are signed 64-bit). The counter never passes it: a grant that
/// would is refused ([`GrantRefused::Exhausted`]), never wrapped.
pub const MAX_TOKEN: u64 = i64::MAX as u64;

/// How far past this node's wall clock a token that a *client* supplies (`DLOCK.FENCE`,
/// `DLOCK.RAISE`, `DLOCK.APPLY` from a client) may reach, in microseconds: one year.
///
/// Honest tokens are at most a little ahead of the clock of the node that issued them (the clock
/// floor makes them wall-clock microseconds), so a year leaves room for badly skewed clocks. The
/// limit moves with the clock, so no sequence of calls can walk the counter towards
/// [`MAX_TOKEN`] (292,000 years of microseconds away) and exhaust it.
pub const MAX_TOKEN_LEAD_US: u64 = 365 * 24 * 3600 * 1_000_000;

/// What a FENCE did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// Not held by this owner: nothing changed (the commit is refused).
    NotHeld,
    /// Store `token` as the owner's token; the counter is at least `token`.
    Fenced { token: u64 },
    /// The token is below the owner's current token: refused, FENCE never lowers a token.
    Lowers { current: u64 },
    /// The token is beyond what this node accepts from a client.
    TooFarAhead { limit: u64 },
}

/// Settings that change the rules (the module's `dlock.*` configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub quarantine_ms: u64,
    pub clock_floor: bool,
}

/// Why a free lock was not granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantRefused {
    /// The node restarted less than `quarantine_ms` ago and may have forgotten a grant.
    Quarantined { ms_left: u64 },
    /// The counter reached [`MAX_TOKEN`].
    Exhausted,
}

/// Why a token a client supplied was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefused {
    /// Beyond the larger of the counter and the wall clock plus [`MAX_TOKEN_LEAD_US`].
    TooFarAhead { limit: u64 },
}

/// The fencing counter and quarantine clock of one node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node<C: Clock> {
    clock: C,
    counter: u64,
    started_ms: u64,
    /// The latest monotonic reading taken: a quarantine that ended by then stays over (the
    /// monotonic clock never goes back), so grants stop reading the clock for it.
    reached_ms: u64,
}

impl<C: Clock> Node<C> {
    /// A node that starts now: the quarantine window opens now.
    pub fn new(clock: C) -> Self {
        let started_ms = clock.monotonic_ms();
        Node {
            clock,
            counter: 0,
            started_ms,
            reached_ms: started_ms,
        }
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The highest token this node issued, was fenced to, or loaded.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Raises the counter to at least `to` (never lowers it, never past [`MAX_TOKEN`]). For
    /// trusted sources — the node's own files, its master, a lock value that entered the keyspace
    /// — and for client tokens that passed [`Node::check_client_token`].
    pub fn raise_counter(&mut self, to: u64) {
        self.counter = self.counter.max(to.min(MAX_TOKEN));
    }

    /// The largest token a client may supply now.
    pub fn token_limit(&self) -> u64 {
        let ahead = self.clock.now_us().saturating_add(MAX_TOKEN_LEAD_US);
        self.counter.max(ahead).min(MAX_TOKEN)
    }

    /// Checks a token a client supplied (already known to be in 1..=MAX_TOKEN).
    pub fn check_client_token(&self, token: u64) -> Result<u64, TokenRefused> {
        let limit = self.token_limit();
        if token <= limit {
            Ok(token)
        } else {
            Err(TokenRefused::TooFarAhead { limit })
        }
    }

    /// Milliseconds of restart quarantine left (0 when over).
    pub fn quarantine_left_ms(&self, settings: &Settings) -> u64 {
        let ends = self.started_ms.saturating_add(settings.quarantine_ms);
        ends.saturating_sub(self.clock.monotonic_ms())
    }

    /// Issues the token for a grant of a free lock: `max(counter + 1, now_us)` with the clock
    /// floor, `counter + 1` without. Strictly increasing; refused during the quarantine and once
    /// the counter is exhausted.
    pub fn grant(&mut self, settings: &Settings) -> Result<u64, GrantRefused> {
        let now_us = self.clock.now_us();
        self.grant_at(settings, now_us)
    }

    /// As [`Node::grant`], with the wall clock already read by the caller (`now_us`), so that a
    /// command reads it once for the lock it finds, the token it issues and the deadline.
    pub fn grant_at(&mut self, settings: &Settings, now_us: u64) -> Result<u64, GrantRefused> {
        self.check_quarantine(settings)?;
        let next = self.counter.checked_add(1).filter(|&t| t <= MAX_TOKEN);
        let next = next.ok_or(GrantRefused::Exhausted)?;
        let token = if settings.clock_floor {
            next.max(now_us.min(MAX_TOKEN))
        } else {
            next
        };
        self.counter = token;
        Ok(token)
    }

    /// [`Node::quarantine_left_ms`], reading the monotonic clock only while the quarantine
    /// could still be on.
    fn check_quarantine(&mut self, settings: &Settings) -> Result<(), GrantRefused> {
        let ends = self.started_ms.saturating_add(settings.quarantine_ms);
        if ends <= self.reached_ms {
            return Ok(());
        }
        self.reached_ms = self.reached_ms.max(self.clock.monotonic_ms());
        match ends.saturating_sub(self.reached_ms) {
            0 => Ok(()),
            ms_left => Err(GrantRefused::Quarantined { ms_left }),
        }
    }

    /// Phase 2 of quorum fencing: `token` becomes the lock's token if the lock is still held by
    /// `owner`, and the counter rises to it. It never lowers a lock's token or the counter, and a
    /// token beyond [`Node::token_limit`] is refused whatever the lock's state.
    /// `newest` is the owner's live entry with the largest token (see
    /// [`crate::holders::Holders::newest_of`]).
    pub fn fence(&mut self, newest: Option<Holder<'_>>, owner: &[u8], token: u64) -> Fence {
        if let Err(TokenRefused::TooFarAhead { limit }) = self.check_client_token(token) {
            return Fence::TooFarAhead { limit };
        }
        match newest {
            Some(lock) if lock.owner != owner => Fence::NotHeld,
            None => Fence::NotHeld,
            Some(lock) if token < lock.token => Fence::Lowers {
                current: lock.token,
            },
            Some(_) => {
                self.raise_counter(token);
                Fence::Fenced { token }
            }
        }
    }

    /// The absolute deadline (unix ms) of a lock granted or extended now for `ttl_ms`.
    pub fn deadline_ms(&self, ttl_ms: u64) -> u64 {
        deadline_at(self.clock.now_ms(), ttl_ms)
    }
}

/// The absolute deadline (unix ms) of a lock granted or extended at `now_ms` for `ttl_ms`.
pub fn deadline_at(now_ms: u64, ttl_ms: u64) -> u64 {
    now_ms.saturating_add(ttl_ms)
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
