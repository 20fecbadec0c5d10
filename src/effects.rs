//! What reaches replicas and the AOF: the *effect* of a command, with absolute expiry and the
//! token chosen on this node, so a replica or an AOF replay never re-runs time- or
//! counter-dependent logic.

use redis_module::{Context, RedisString};

use crate::store::StoredLock;

/// `DLOCK.APPLY key owner token holds [PXAT unix-ms]` (without PXAT the expiry is kept).
pub fn store(ctx: &Context, key: &RedisString, lock: StoredLock, expire_at: Option<u64>) {
    let token = lock.token().to_string();
    let holds = lock.holds().to_string();
    let (key, owner) = (key.as_slice(), lock.owner());
    match expire_at {
        Some(at) => {
            let at = at.to_string();
            let args: [&[u8]; 6] = [
                key,
                owner,
                token.as_bytes(),
                holds.as_bytes(),
                b"PXAT",
                at.as_bytes(),
            ];
            ctx.replicate("DLOCK.APPLY", &args);
        }
        None => {
            let args: [&[u8]; 4] = [key, owner, token.as_bytes(), holds.as_bytes()];
            ctx.replicate("DLOCK.APPLY", &args);
        }
    }
}

/// `PEXPIREAT key unix-ms`.
pub fn expire_at(ctx: &Context, key: &RedisString, unix_ms: u64) {
    let at = unix_ms.to_string();
    ctx.replicate("PEXPIREAT", &[key.as_slice(), at.as_bytes()]);
}

/// `DEL key`.
pub fn delete(ctx: &Context, key: &RedisString) {
    ctx.replicate("DEL", &[key.as_slice()]);
}

/// `DLOCK.RAISE counter`: carries the node counter to replicas and into the AOF.
pub fn raise_counter(ctx: &Context, counter: u64) {
    let counter = counter.to_string();
    ctx.replicate("DLOCK.RAISE", &[counter.as_bytes()]);
}
