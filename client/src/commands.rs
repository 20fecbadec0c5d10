//! Every `DLOCK.*` command the client sends, built here and nowhere else: a [`Request`] is what
//! the client asks of one node, [`Request::to_cmd`] the command it becomes (docs/commands.md
//! has the server's side).

use std::time::Duration;

use crate::kind::{LockKind, LockSet};

/// What the client asks of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    /// `DLOCK.ACQUIRE resource owner ttl-ms [kind]`: token, or nil when held by another owner.
    Acquire {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
        kind: LockKind,
    },
    /// `DLOCK.ACQUIRE resource owner ttl-ms WAIT timeout-ms [TICKET n] [kind]`: token, or nil
    /// when the wait ended without a grant. Blocks on the server, so it goes over a connection
    /// of its own, never the shared one.
    Wait {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
        timeout_ms: u64,
        ticket: Option<u64>,
        kind: LockKind,
    },
    /// `DLOCK.FENCE resource owner token [PX ttl-ms]`: 1 committed, 0 not held.
    Fence {
        resource: &'a str,
        owner: &'a str,
        token: u64,
        ttl_ms: Option<u64>,
    },
    /// `DLOCK.EXTEND resource owner ttl-ms`: 1 extended, 0 not held.
    Extend {
        resource: &'a str,
        owner: &'a str,
        ttl_ms: u64,
    },
    /// `DLOCK.RELEASE resource owner`: 1 released, 0 not held.
    Release { resource: &'a str, owner: &'a str },
    /// `DLOCK.PROCLAIM resource owner token new-owner`: 1 renamed, 0 not held with that token.
    Proclaim {
        resource: &'a str,
        owner: &'a str,
        token: u64,
        new_owner: &'a str,
    },
    /// `DLOCK.OBSERVE resource [AFTER token OWNER owner] TIMEOUT ms`: the plain lock's
    /// holder (nil when free), at once when it differs from `after`, else when it changes or
    /// at the timeout. Blocks on the server, so it goes over a connection of its own.
    Observe {
        resource: &'a str,
        after: Option<(u64, &'a str)>,
        timeout_ms: u64,
    },
    /// A set's command (`DLOCK.ACQUIREALL`, `RELEASEALL`, `EXTENDALL`, `FENCEALL`): the same
    /// answers as the one-lock command, for every member at once.
    Set {
        set: &'a LockSet,
        owner: &'a str,
        op: SetOp,
    },
    /// `DLOCK.STATUS resource`.
    Status { resource: &'a str },
    /// `DLOCK.WAITERS resource`: the waiters in service order (owner, ticket, ms waited).
    Waiters { resource: &'a str },
    /// `DLOCK.TOP CURSOR cursor COUNT count`: one step of a node's hot locks. Names no key: on a
    /// cluster it would reach one master only, so the caller sends it to masters alone.
    Top { cursor: u64, count: u64 },
}

/// What a set's command does: the one-lock request it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// `ACQUIREALL ... ttl-ms [MODES m] [WAIT timeout-ms [TICKET n]]`.
    Acquire {
        ttl_ms: u64,
        wait: Option<(u64, Option<u64>)>,
    },
    /// `FENCEALL ... token [PX ttl-ms]`.
    Fence { token: u64, ttl_ms: Option<u64> },
    /// `EXTENDALL ... ttl-ms`.
    Extend { ttl_ms: u64 },
    /// `RELEASEALL ...`.
    Release,
}

/// A duration as the commands carry it: whole milliseconds, rounded down, at least 1 (a `WAIT`
/// of 0 would mean no limit; a TTL is checked to be at least 1 ms before anything is sent).
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl<'a> Request<'a> {
    /// How long the server may hold the request before answering (a wait, an observation):
    /// such a request goes over a connection of its own, its bound stretched by this much.
    pub fn blocks_for(self) -> Option<Duration> {
        match self {
            Request::Wait { timeout_ms, .. } | Request::Observe { timeout_ms, .. } => {
                Some(Duration::from_millis(timeout_ms))
            }
            Request::Set {
                op:
                    SetOp::Acquire {
                        wait: Some((timeout_ms, _)),
                        ..
                    },
                ..
            } => Some(Duration::from_millis(timeout_ms)),
            _ => None,
        }
    }

    /// The lock this request is about (in a cluster, the key that picks the shard).
    pub fn resource(self) -> &'a str {
        match self {
            Request::Acquire { resource, .. }
            | Request::Wait { resource, .. }
            | Request::Fence { resource, .. }
            | Request::Extend { resource, .. }
            | Request::Release { resource, .. }
            | Request::Proclaim { resource, .. }
            | Request::Observe { resource, .. }
            | Request::Status { resource }
            | Request::Waiters { resource } => resource,
            Request::Set { set, .. } => set.names().first().map_or("", String::as_str),
            Request::Top { .. } => "",
        }
    }

    /// The Redis command this request is.
    pub fn to_cmd(self) -> redis::Cmd {
        match self {
            Request::Acquire {
                resource,
                owner,
                ttl_ms,
                kind,
            } => acquire(resource, owner, ttl_ms, None, kind),
            Request::Wait {
                resource,
                owner,
                ttl_ms,
                timeout_ms,
                ticket,
                kind,
            } => acquire(resource, owner, ttl_ms, Some((timeout_ms, ticket)), kind),
            Request::Fence {
                resource,
                owner,
                token,
                ttl_ms,
            } => fence(resource, owner, token, ttl_ms),
            Request::Extend {
                resource,
                owner,
                ttl_ms,
            } => {
                let mut cmd = command("DLOCK.EXTEND", &[resource, owner]);
                cmd.arg(ttl_ms);
                cmd
            }
            Request::Release { resource, owner } => command("DLOCK.RELEASE", &[resource, owner]),
            Request::Proclaim {
                resource,
                owner,
                token,
                new_owner,
            } => proclaim(resource, owner, token, new_owner),
            Request::Observe {
                resource,
                after,
                timeout_ms,
            } => observe(resource, after, timeout_ms),
            Request::Status { resource } => command("DLOCK.STATUS", &[resource]),
            Request::Waiters { resource } => command("DLOCK.WAITERS", &[resource]),
            Request::Top { cursor, count } => top(cursor, count),
            Request::Set { set, owner, op } => set_command(set, owner, op),
        }
    }
}

/// A set's command: `numkeys key [key ...] owner`, then what the operation adds.
fn set_command(set: &LockSet, owner: &str, op: SetOp) -> redis::Cmd {
    let name = match op {
        SetOp::Acquire { .. } => "DLOCK.ACQUIREALL",
        SetOp::Fence { .. } => "DLOCK.FENCEALL",
        SetOp::Extend { .. } => "DLOCK.EXTENDALL",
        SetOp::Release => "DLOCK.RELEASEALL",
    };
    let mut cmd = redis::cmd(name);
    cmd.arg(set.names().len()).arg(set.names()).arg(owner);
    match op {
        SetOp::Acquire { ttl_ms, wait } => {
            cmd.arg(ttl_ms);
            if let Some(modes) = set.modes() {
                cmd.arg("MODES").arg(modes);
            }
            if let Some((timeout_ms, ticket)) = wait {
                cmd.arg("WAIT").arg(timeout_ms);
                if let Some(ticket) = ticket {
                    cmd.arg("TICKET").arg(ticket);
                }
            }
        }
        SetOp::Fence { token, ttl_ms } => {
            cmd.arg(token);
            if let Some(ttl_ms) = ttl_ms {
                cmd.arg("PX").arg(ttl_ms);
            }
        }
        SetOp::Extend { ttl_ms } => {
            cmd.arg(ttl_ms);
        }
        SetOp::Release => {}
    }
    cmd
}

/// `DLOCK.FENCE`: the token confirmed, with the lease re-based when `ttl_ms` is given.
fn fence(resource: &str, owner: &str, token: u64, ttl_ms: Option<u64>) -> redis::Cmd {
    let mut cmd = command("DLOCK.FENCE", &[resource, owner]);
    cmd.arg(token);
    if let Some(ttl_ms) = ttl_ms {
        cmd.arg("PX").arg(ttl_ms);
    }
    cmd
}

/// `DLOCK.OBSERVE`: the next holder change after the one seen (`after`), or the current one.
fn observe(resource: &str, after: Option<(u64, &str)>, timeout_ms: u64) -> redis::Cmd {
    let mut cmd = command("DLOCK.OBSERVE", &[resource]);
    if let Some((token, owner)) = after {
        cmd.arg("AFTER").arg(token).arg("OWNER").arg(owner);
    }
    cmd.arg("TIMEOUT").arg(timeout_ms);
    cmd
}

/// `DLOCK.PROCLAIM`: the leader's value changed, its epoch (`token`) kept.
fn proclaim(resource: &str, owner: &str, token: u64, new_owner: &str) -> redis::Cmd {
    let mut cmd = command("DLOCK.PROCLAIM", &[resource, owner]);
    cmd.arg(token).arg(new_owner);
    cmd
}

/// `DLOCK.TOP`: one page of the node's locks and waiters.
fn top(cursor: u64, count: u64) -> redis::Cmd {
    let mut cmd = redis::cmd("DLOCK.TOP");
    cmd.arg("CURSOR").arg(cursor).arg("COUNT").arg(count);
    cmd
}

fn command(name: &str, args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(name);
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// `DLOCK.ACQUIRE`, with `WAIT timeout [TICKET n]` when it waits, and the kind's option last.
fn acquire(
    resource: &str,
    owner: &str,
    ttl_ms: u64,
    wait: Option<(u64, Option<u64>)>,
    kind: LockKind,
) -> redis::Cmd {
    let mut cmd = command("DLOCK.ACQUIRE", &[resource, owner]);
    cmd.arg(ttl_ms);
    if let Some((timeout_ms, ticket)) = wait {
        cmd.arg("WAIT").arg(timeout_ms);
        if let Some(ticket) = ticket {
            cmd.arg("TICKET").arg(ticket);
        }
    }
    match kind {
        LockKind::Exclusive => {}
        LockKind::Shared => {
            cmd.arg("SHARED");
        }
        LockKind::Semaphore { limit } => {
            cmd.arg("LIMIT").arg(limit);
        }
    }
    cmd
}

/// The command a request is, as the words a node receives (for the tests and conformance).
#[cfg(test)]
pub(crate) fn words(request: Request<'_>) -> Vec<String> {
    request
        .to_cmd()
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => "<cursor>".into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_its_command() {
        let (resource, owner) = ("res", "me");
        let kind = LockKind::Semaphore { limit: 3 };
        let wait = Request::Wait {
            resource,
            owner,
            ttl_ms: 10,
            timeout_ms: 5,
            ticket: Some(7),
            kind,
        };
        let expected = "DLOCK.ACQUIRE res me 10 WAIT 5 TICKET 7 LIMIT 3";
        assert_eq!(words(wait).join(" "), expected);
        let acquire = Request::Acquire {
            resource,
            owner,
            ttl_ms: 10,
            kind: LockKind::Shared,
        };
        assert_eq!(words(acquire).join(" "), "DLOCK.ACQUIRE res me 10 SHARED");
        let fence = Request::Fence {
            resource,
            owner,
            token: 9,
            ttl_ms: Some(10),
        };
        assert_eq!(words(fence).join(" "), "DLOCK.FENCE res me 9 PX 10");
        let top = Request::Top {
            cursor: 0,
            count: 100,
        };
        assert_eq!(words(top).join(" "), "DLOCK.TOP CURSOR 0 COUNT 100");
    }

    #[test]
    fn durations_are_whole_milliseconds_and_never_zero() {
        assert_eq!(ms(Duration::from_micros(10_900)), 10);
        assert_eq!(ms(Duration::ZERO), 1);
    }
}
