//! In a Redis Cluster a free lock may only be handed to a waiter by the node that serves the
//! key's slot, and not while that node is migrating the slot away: the key (the lock, with its
//! token) may already be on the target, and a grant here would make a second holder. The
//! waiters then get the redirect a client would have got for the key (`ASK` to the target
//! while migrating, `MOVED` to the new owner after), and wait there instead.
//!
//! Asked through `CLUSTER KEYSLOT` and `CLUSTER NODES` (the module API has no slot-state
//! call); only in cluster mode and only when a handoff has a waiter to serve, which is rare.

use redis_module::{raw, Context, RedisValue};

use super::queues::{self, QueueKey};
use crate::server;

/// `Ok` when this node may grant `key` (queued at `place`) now; otherwise the error to answer
/// its waiters with. Outside a cluster, or with nobody waiting, nothing is asked.
pub fn may_grant_here(ctx: &Context, place: &QueueKey, key: &[u8]) -> Result<(), String> {
    let flags = server::context_flags(ctx.ctx);
    if !server::flag(flags, raw::REDISMODULE_CTX_FLAGS_CLUSTER) {
        return Ok(());
    }
    if queues::peek(place, |k| k.is_none_or(|k| k.queue.is_empty())) {
        return Ok(());
    }
    let unknown = || "TRYAGAIN the key's slot is moving; retry".to_string();
    let slot = match ctx.call("CLUSTER", &[b"KEYSLOT".as_slice(), key]) {
        Ok(RedisValue::Integer(slot)) => slot,
        _ => return Err(unknown()),
    };
    let nodes = nodes(ctx).ok_or_else(unknown)?;
    route(&nodes, slot).ok_or_else(unknown)?
}

/// The redirect for `key` (`ASK` while its slot migrates away, `MOVED` once it left) when this
/// is a cluster node that does not stably serve the key's slot; `None` otherwise, and outside a
/// cluster (where nothing is asked).
pub fn redirect(ctx: &Context, key: &[u8]) -> Option<String> {
    let flags = server::context_flags(ctx.ctx);
    if !server::flag(flags, raw::REDISMODULE_CTX_FLAGS_CLUSTER) {
        return None;
    }
    let slot = match ctx.call("CLUSTER", &[b"KEYSLOT".as_slice(), key]) {
        Ok(RedisValue::Integer(slot)) => slot,
        _ => return None,
    };
    route(&nodes(ctx)?, slot)?.err()
}

/// `CLUSTER NODES`, as text.
pub fn nodes(ctx: &Context) -> Option<String> {
    match ctx.call("CLUSTER", &["NODES"]) {
        Ok(RedisValue::BulkString(text) | RedisValue::SimpleString(text)) => Some(text),
        Ok(RedisValue::StringBuffer(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// From `CLUSTER NODES`: `MOVED slot host:port` to the master that serves `slot`, if that is
/// another node (a slot that just left this one).
pub fn owner_redirect(nodes: &str, slot: i64) -> Option<String> {
    let owner = nodes
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| serves(f, slot) && f.get(2).is_some_and(|flags| !flags.contains("myself")))?;
    Some(format!("MOVED {slot} {}", address(&owner)?))
}

/// From `CLUSTER NODES`: `Ok` when the `myself` line serves `slot` and is not migrating it, else
/// the redirect. `None` when the text says nothing usable.
fn route(nodes: &str, slot: i64) -> Option<Result<(), String>> {
    let lines: Vec<Vec<&str>> = nodes.lines().map(|l| l.split(' ').collect()).collect();
    let me = lines
        .iter()
        .find(|f| f.get(2).is_some_and(|flags| flags.contains("myself")))?;
    let migrating = format!("[{slot}->-");
    if let Some(target) = me[8.min(me.len())..]
        .iter()
        .find_map(|s| s.strip_prefix(&migrating)?.strip_suffix(']'))
    {
        let to = lines.iter().find(|f| f.first() == Some(&target))?;
        return Some(Err(format!("ASK {slot} {}", address(to)?)));
    }
    if serves(me, slot) {
        return Some(Ok(()));
    }
    let owner = lines.iter().find(|f| serves(f, slot))?;
    Some(Err(format!("MOVED {slot} {}", address(owner)?)))
}

/// The line's slot ranges (fields 8 on, bracketed migration entries aside) include `slot`.
fn serves(fields: &[&str], slot: i64) -> bool {
    fields.iter().skip(8).any(|range| {
        let (start, end) = range.split_once('-').unwrap_or((range, range));
        match (start.parse::<i64>(), end.parse::<i64>()) {
            (Ok(start), Ok(end)) => (start..=end).contains(&slot),
            _ => false,
        }
    })
}

/// `ip:port` from `ip:port@cport[,hostname]`.
fn address<'a>(fields: &[&'a str]) -> Option<&'a str> {
    fields.get(1)?.split(['@', ',']).next()
}

#[cfg(test)]
mod tests {
    use super::route;

    const NODES: &str = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 [5000->-b2]
b2 127.0.0.1:7002@17002,host2 master - 0 0 2 connected 5461-10922 [5000-<-a1]
c3 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383
d4 127.0.0.1:7004@17004 slave a1 0 0 1 connected
";

    #[test]
    fn grants_only_for_its_own_stable_slots_and_redirects_otherwise() {
        assert_eq!(route(NODES, 0), Some(Ok(())));
        assert_eq!(route(NODES, 5460), Some(Ok(())));
        assert_eq!(
            route(NODES, 5000),
            Some(Err("ASK 5000 127.0.0.1:7002".into()))
        );
        assert_eq!(
            route(NODES, 12000),
            Some(Err("MOVED 12000 127.0.0.1:7003".into()))
        );
        assert_eq!(
            route(NODES, 6000),
            Some(Err("MOVED 6000 127.0.0.1:7002".into()))
        );
        assert_eq!(route("garbage", 1), None);
    }

    #[test]
    fn a_slot_that_left_redirects_to_its_new_owner_only() {
        use super::owner_redirect;
        assert_eq!(
            owner_redirect(NODES, 12000),
            Some("MOVED 12000 127.0.0.1:7003".into())
        );
        assert_eq!(owner_redirect(NODES, 100), None, "still served here");
        assert_eq!(owner_redirect("garbage", 1), None);
    }
}
