//! Replica acknowledgement: `WAIT replicas timeout` pipelined after each write, so a grant,
//! extension or commit counts only once the asked replicas have it, and a failover right after
//! cannot promote a replica that never saw it.
//!
//! When fewer replicas acknowledge in time, the node's answer becomes a failure naming how many
//! did. The rounds then treat that node as one that did not grant: a lock without a majority of
//! acknowledged grants is released and reported as no quorum, an extension without one as lost.

use std::time::Duration;

use redis::{Pipeline, Value};

use crate::commands::Request;
use crate::options::ReplicaAck;

/// How many replicas must have a write, and how long to wait for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub replicas: u32,
    pub timeout: Duration,
}

impl Ack {
    /// What one node asks under the manager's `policy`: `failover` says whether the node can
    /// fail over to a replica on its own (a `redis+cluster://` or `redis+sentinel://` URL), where
    /// `Auto` asks 1 replica. `None`: no `WAIT` after its writes.
    pub fn for_node(policy: ReplicaAck, failover: bool) -> Option<Ack> {
        let (replicas, timeout) = match policy {
            ReplicaAck::Auto { timeout } if failover => (1, timeout),
            ReplicaAck::Replicas { count, timeout } => (count, timeout),
            _ => return None,
        };
        (replicas > 0).then_some(Ack { replicas, timeout })
    }
}

/// The commands sent for `request`: the request itself, then with `ack` on a writing request,
/// `WAIT`. A wait's grant is written by the client whose RELEASE handed the lock over, yet the
/// `WAIT` after it covers it: the server moves a client's replication offset to the current one
/// when a module unblocks it (Redis 7.0+ and Valkey; client/tests/cluster.rs checks it).
pub fn pipeline(request: Request<'_>, ack: Option<Ack>) -> Pipeline {
    let mut pipe = redis::pipe();
    pipe.add_command(request.to_cmd());
    let Some(ack) = ack.filter(|_| acknowledged(request)) else {
        return pipe;
    };
    pipe.cmd("WAIT").arg(ack.replicas).arg(ack_ms(ack));
    pipe
}

/// The request's reply out of `replies`, or why it does not count: granted, extended or
/// committed, but acknowledged by fewer replicas than asked.
pub fn reply(request: Request<'_>, replies: Vec<Value>, ack: Option<Ack>) -> Result<Value, String> {
    let acked = replies.last().cloned();
    let reply = replies.into_iter().next().ok_or("no reply")?;
    let Some(ack) = ack.filter(|_| acknowledged(request) && wrote(request, &reply)) else {
        return Ok(reply);
    };
    match acked {
        Some(Value::Int(n)) if n >= i64::from(ack.replicas) => Ok(reply),
        Some(Value::Int(n)) => Err(format!(
            "{} but only {n} of {} replicas acknowledged within {} ms",
            what(request),
            ack.replicas,
            ack_ms(ack)
        )),
        other => Err(format!("WAIT: unexpected reply {other:?}")),
    }
}

/// How late a server answers a blocked command (`WAIT`, `DLOCK.ACQUIRE ... WAIT`) past its
/// timeout: it checks blocked clients' timeouts once per `hz` tick (10 per second by default).
pub const TIMEOUT_RESOLUTION: Duration = Duration::from_millis(100);

/// The extra time a call may take for its acknowledgement.
pub fn extra_time(request: Request<'_>, ack: Option<Ack>) -> Duration {
    ack.filter(|_| acknowledged(request))
        .map_or(Duration::ZERO, |ack| allowance(ack.timeout))
}

/// What waiting up to `timeout` for replicas may cost, the server's timer resolution included.
pub fn allowance(timeout: Duration) -> Duration {
    if timeout.is_zero() {
        return Duration::ZERO;
    }
    timeout + TIMEOUT_RESOLUTION
}

/// Requests whose success is a write a failover must not lose. A lost RELEASE only leaves a
/// lock to expire.
fn acknowledged(request: Request<'_>) -> bool {
    matches!(
        request,
        Request::Acquire { .. }
            | Request::Wait { .. }
            | Request::Fence { .. }
            | Request::Extend { .. }
    )
}

/// Whether `reply` says the request wrote (a token for a grant, 1 for an extension or commit).
fn wrote(request: Request<'_>, reply: &Value) -> bool {
    match request {
        Request::Acquire { .. } | Request::Wait { .. } => matches!(reply, Value::Int(_)),
        _ => matches!(reply, Value::Int(1)),
    }
}

fn what(request: Request<'_>) -> &'static str {
    match request {
        Request::Acquire { .. } | Request::Wait { .. } => "granted",
        Request::Fence { .. } => "committed",
        _ => "extended",
    }
}

fn ack_ms(ack: Ack) -> u64 {
    u64::try_from(ack.timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACK: Option<Ack> = Some(Ack {
        replicas: 2,
        timeout: Duration::from_millis(100),
    });

    fn extend() -> Request<'static> {
        Request::Extend {
            resource: "r",
            owner: "o",
            ttl_ms: 1000,
        }
    }

    fn names(pipe: &Pipeline) -> Vec<String> {
        pipe.cmd_iter()
            .map(|cmd| {
                let packed = String::from_utf8_lossy(&cmd.get_packed_command()).into_owned();
                packed.split("\r\n").nth(2).unwrap_or_default().to_string()
            })
            .collect()
    }

    #[test]
    fn the_policy_asks_cluster_nodes_only_when_automatic() {
        let timeout = Duration::from_millis(100);
        let auto = ReplicaAck::Auto { timeout };
        let one = Some(Ack {
            replicas: 1,
            timeout,
        });
        assert_eq!(Ack::for_node(auto, true), one);
        assert_eq!(Ack::for_node(auto, false), None);
        assert_eq!(Ack::for_node(ReplicaAck::Off, true), None);
        let two = ReplicaAck::Replicas { count: 2, timeout };
        for cluster in [true, false] {
            assert_eq!(Ack::for_node(two, cluster), ACK);
        }
        let none = ReplicaAck::Replicas { count: 0, timeout };
        assert_eq!(Ack::for_node(none, true), None);
    }

    #[test]
    fn writes_are_followed_by_wait_and_a_release_is_not() {
        assert_eq!(names(&pipeline(extend(), ACK)), ["DLOCK.EXTEND", "WAIT"]);
        assert_eq!(names(&pipeline(extend(), None)), ["DLOCK.EXTEND"]);
        let wait = Request::Wait {
            resource: "r",
            owner: "o",
            ttl_ms: 1000,
            timeout_ms: 500,
            ticket: Some(7),
            kind: crate::kind::LockKind::Shared,
        };
        assert_eq!(names(&pipeline(wait, ACK)), ["DLOCK.ACQUIRE", "WAIT"]);
        let release = Request::Release {
            resource: "r",
            owner: "o",
        };
        assert_eq!(names(&pipeline(release, ACK)), ["DLOCK.RELEASE"]);
    }

    #[test]
    fn a_write_short_of_acknowledgements_is_a_failure_that_says_how_short() {
        let full = reply(extend(), vec![Value::Int(1), Value::Int(2)], ACK);
        assert_eq!(full, Ok(Value::Int(1)));
        let short = reply(extend(), vec![Value::Int(1), Value::Int(1)], ACK).unwrap_err();
        assert_eq!(
            short,
            "extended but only 1 of 2 replicas acknowledged within 100 ms"
        );
        // Nothing written (not held): nothing to acknowledge.
        assert_eq!(
            reply(extend(), vec![Value::Int(0), Value::Int(0)], ACK),
            Ok(Value::Int(0))
        );
        let refused = Request::Acquire {
            resource: "r",
            owner: "o",
            ttl_ms: 1000,
            kind: crate::kind::LockKind::Exclusive,
        };
        assert_eq!(
            reply(refused, vec![Value::Nil, Value::Int(0)], ACK),
            Ok(Value::Nil)
        );
    }
}
