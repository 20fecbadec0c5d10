//! Helpers for shared locks and semaphores: ACQUIRE with a kind, STATUS of several holders.

use redis::{Connection, Value};

/// What an ACQUIRE asks for.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Exclusive,
    Shared,
    Limit(u32),
}

pub fn kind_args(cmd: &mut redis::Cmd, kind: Kind) {
    match kind {
        Kind::Exclusive => {}
        Kind::Shared => {
            cmd.arg("SHARED");
        }
        Kind::Limit(k) => {
            cmd.arg("LIMIT").arg(k);
        }
    }
}

/// `DLOCK.ACQUIRE key owner ttl [kind]`: the token, or None when not available.
pub fn take(c: &mut Connection, key: &str, owner: &str, ttl_ms: i64, kind: Kind) -> Option<i64> {
    try_take(c, key, owner, ttl_ms, kind).expect("DLOCK.ACQUIRE")
}

pub fn try_take(
    c: &mut Connection,
    key: &str,
    owner: &str,
    ttl_ms: i64,
    kind: Kind,
) -> redis::RedisResult<Option<i64>> {
    let mut cmd = redis::cmd("DLOCK.ACQUIRE");
    cmd.arg(key).arg(owner).arg(ttl_ms);
    kind_args(&mut cmd, kind);
    cmd.query(c)
}

/// One holder as STATUS lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub owner: String,
    pub token: i64,
    pub ttl: i64,
    pub holds: i64,
    pub mode: String,
}

/// STATUS of a shared lock or semaphore: (kind, limit, holders, waiters); None when free.
pub type GroupStatus = (String, Option<i64>, Vec<Holder>, i64);

pub fn group_status(c: &mut Connection, key: &str) -> Option<GroupStatus> {
    let reply: Option<Vec<Value>> = redis::cmd("DLOCK.STATUS")
        .arg(key)
        .query(c)
        .expect("DLOCK.STATUS");
    let fields = reply?;
    let mut status = (String::new(), None, Vec::new(), 0);
    let mut count = None;
    for pair in fields.chunks(2) {
        let name: String = redis::from_redis_value_ref(&pair[0]).expect("field name");
        match name.as_str() {
            "kind" => status.0 = redis::from_redis_value_ref(&pair[1]).expect("kind"),
            "limit" => status.1 = Some(redis::from_redis_value_ref(&pair[1]).expect("limit")),
            "count" => count = Some(redis::from_redis_value_ref::<usize>(&pair[1]).expect("count")),
            "holders" => status.2 = holders(&pair[1]),
            "waiters" => status.3 = redis::from_redis_value_ref(&pair[1]).expect("waiters"),
            other => panic!("a plain lock's STATUS ({other}), expected a group's"),
        }
    }
    assert_eq!(count, Some(status.2.len()), "count: every holder listed");
    Some(status)
}

fn holders(value: &Value) -> Vec<Holder> {
    let list: Vec<Vec<Value>> = redis::from_redis_value_ref(value).expect("holders");
    list.iter()
        .map(|fields| {
            let mut h = Holder {
                owner: String::new(),
                token: 0,
                ttl: 0,
                holds: 0,
                mode: String::new(),
            };
            for pair in fields.chunks(2) {
                let name: String = redis::from_redis_value_ref(&pair[0]).expect("name");
                let v = &pair[1];
                match name.as_str() {
                    "owner" => h.owner = redis::from_redis_value_ref(v).expect("owner"),
                    "token" => h.token = redis::from_redis_value_ref(v).expect("token"),
                    "ttl" => h.ttl = redis::from_redis_value_ref(v).expect("ttl"),
                    "holds" => h.holds = redis::from_redis_value_ref(v).expect("holds"),
                    "mode" => h.mode = redis::from_redis_value_ref(v).expect("mode"),
                    other => panic!("unknown holder field {other}"),
                }
            }
            h
        })
        .collect()
}

/// The owners holding `key`, sorted.
pub fn owners(c: &mut Connection, key: &str) -> Vec<String> {
    let mut owners: Vec<String> = group_status(c, key)
        .map(|s| s.2.into_iter().map(|h| h.owner).collect())
        .unwrap_or_default();
    owners.sort();
    owners
}
