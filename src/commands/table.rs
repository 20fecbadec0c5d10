//! The command table: each command's facts in one row ([`COMMANDS`]), and the entry point Redis
//! calls for each row ([`CALLBACKS`]), which checks the arity and runs the handler.

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::{raw, Context, RedisResult};

use super::{acquire, guard, holders, node, observe, set_holds, sets, status, top, wrapped};
use crate::wire::{errors, Arg};

/// A command body: the arguments (name included) in, the reply out.
pub type Handler = fn(&Context, &[Arg]) -> RedisResult;

/// How a command uses its key (argument 1), for key specs and cluster routing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    None,
    Read,
    Update,
    Delete,
    Overwrite,
    /// A gate (read and updated), then a wrapped command's keys, which only the getkeys API
    /// can name (DLOCK.GUARD).
    Gate,
    /// `numkeys key [key ...]` from argument 1, each read and updated (a set's commands).
    Keys,
    /// As `Keys`, each key's holder removed (DLOCK.RELEASEALL).
    KeysDelete,
}

/// How an argument is shown by `COMMAND DOCS`.
#[derive(Clone, Copy)]
pub enum ArgKind {
    Key,
    String,
    Integer,
    /// A bare option such as `REENTRANT` (the token).
    Flag(&'static CStr),
    /// `TOKEN value`, optional (the token).
    Option(&'static CStr),
    /// `TOKEN text`, optional (the token).
    Text(&'static CStr),
    /// One or more keys (after a `numkeys`).
    Keys,
}

pub struct ArgDoc {
    pub name: &'static CStr,
    pub kind: ArgKind,
}

/// Who may call a command.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Applications: ACL category `@dlock`.
    App,
    /// Operators: ACL category `@dangerous`.
    Operator,
    /// The module's own replicated effects: internal on Redis 8+, `@dangerous` elsewhere.
    Effect,
}

/// Everything about one command.
pub struct Command {
    /// Lowercase, as Redis shows it.
    pub name: &'static str,
    pub handler: Handler,
    pub flags: &'static str,
    pub key: KeyUse,
    /// Redis arity: exact when positive, a minimum when negative; the name counts.
    pub arity: i32,
    /// Read by the README test (the command reference is generated from the table).
    #[cfg_attr(not(test), allow(dead_code))]
    pub usage: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    /// What one call costs, as `COMMAND DOCS` shows it.
    pub complexity: &'static str,
    pub args: &'static [ArgDoc],
    pub audience: Audience,
}

use ArgKind::{Flag, Integer, Key, Keys, Option as Opt, String as Str, Text};
use Audience::{App, Effect, Operator};

macro_rules! args {
    ($($name:literal: $kind:expr),* $(,)?) => { &[$(ArgDoc { name: $name, kind: $kind }),*] };
}

#[rustfmt::skip]
pub static COMMANDS: &[Command] = &[
    Command { name: "dlock.acquire", handler: acquire::acquire, flags: "write deny-oom fast blocking", key: KeyUse::Update, arity: -4, since: "0.1.0", complexity: "O(log N): N holders of the resource (at most 10000), plus the leases that ended and are not cleared yet (each write clears up to 16); a wound revoking V grants O(V log N); taking over a resource of another kind whose N holders all ended frees them, O(N) (on the lazyfree thread with lazyfree-lazy-server-del yes)", audience: App,
        usage: "key owner ttl-ms [REENTRANT] [WAIT timeout-ms] [TICKET n] [SHARED | LIMIT k]",
        summary: "Takes the lock (exclusive; SHARED: a reader's hold; LIMIT k: one of k permits), or renews it for the same owner. Replies the fencing token, or nil when not available; with WAIT, queues until granted (nil at the timeout, 0 = none), served by TICKET then arrival. WRONGKIND when the resource is held as another kind.",
        args: args![c"key": Key, c"owner": Str, c"ttl-ms": Integer, c"reentrant": Flag(c"REENTRANT"), c"timeout-ms": Opt(c"WAIT"), c"ticket": Opt(c"TICKET"), c"shared": Flag(c"SHARED"), c"limit": Opt(c"LIMIT")] },
    Command { name: "dlock.release", handler: holders::release, flags: "write fast", key: KeyUse::Delete, arity: 3, since: "0.1.0", complexity: "O(log N): N holders of the resource; a place freed goes to the waiters at once (K granted in O(K log N), at most 0.5 ms per event-loop turn, the rest on the next turns)", audience: App,
        usage: "key owner",
        summary: "Releases one hold of owner's lock. Replies 1 if owner held it, else 0.",
        args: args![c"key": Key, c"owner": Str] },
    Command { name: "dlock.extend", handler: holders::extend, flags: "write deny-oom fast", key: KeyUse::Update, arity: 4, since: "0.1.0", complexity: "O(log N): N holders of the resource", audience: App,
        usage: "key owner ttl-ms",
        summary: "Resets the TTL of owner's lock. Replies 1 if owner held it, else 0; never revives an expired lock.",
        args: args![c"key": Key, c"owner": Str, c"ttl-ms": Integer] },
    Command { name: "dlock.fence", handler: holders::fence, flags: "write deny-oom fast", key: KeyUse::Update, arity: -4, since: "0.1.0", complexity: "O(log N): N holders of the resource", audience: App,
        usage: "key owner token [PX ttl-ms]",
        summary: "Commits a quorum token: if owner holds the lock, its token becomes token (never lower), the node counter rises to it, and PX resets the TTL. Replies 1, else 0.",
        args: args![c"key": Key, c"owner": Str, c"token": Integer, c"ttl-ms": Opt(c"PX")] },
    Command { name: "dlock.proclaim", handler: holders::proclaim, flags: "write deny-oom fast", key: KeyUse::Update, arity: 5, since: "0.4.0", complexity: "O(1)", audience: App,
        usage: "key owner token new-owner",
        summary: "Gives a plain lock held by owner with token (or a larger one: a late grant's own) to new-owner, its token, lease and holds unchanged (an election's leader changing its value). Replies 1, else 0; WRONGKIND for a shared lock or a semaphore (as OBSERVE).",
        args: args![c"key": Key, c"owner": Str, c"token": Integer, c"new-owner": Str] },
    Command { name: "dlock.acquireall", handler: sets::acquire_all, flags: "write deny-oom fast blocking getkeys-api", key: KeyUse::Keys, arity: -5, since: "0.5.0", complexity: "O(K log N): K keys (at most 16), N holders of each; with WAIT, queued on all K at once", audience: App,
        usage: "numkeys key [key ...] owner ttl-ms [MODES modes] [WAIT timeout-ms] [TICKET n]",
        summary: "Takes several keys of this node (one slot in Cluster) all or nothing, under one lease and one token (MODES: a letter per key, x exclusive or s shared; all exclusive by default); the same set asked again renews it. Replies the token, or nil when not every key is available; with WAIT, queues on every key at once holding nothing, served in the node's one order (TICKET, then arrival) when all are free.",
        args: args![c"numkeys": Integer, c"key": Keys, c"owner": Str, c"ttl-ms": Integer, c"modes": Text(c"MODES"), c"timeout-ms": Opt(c"WAIT"), c"ticket": Opt(c"TICKET")] },
    Command { name: "dlock.releaseall", handler: set_holds::release_all, flags: "write fast getkeys-api", key: KeyUse::KeysDelete, arity: -4, since: "0.5.0", complexity: "O(K log N): K keys, N holders of each; places freed go to the waiters at once", audience: App,
        usage: "numkeys key [key ...] owner",
        summary: "Releases owner's set: every key it holds among them, and its queued wait on each. Replies how many of the keys owner held.",
        args: args![c"numkeys": Integer, c"key": Keys, c"owner": Str] },
    Command { name: "dlock.extendall", handler: set_holds::extend_all, flags: "write deny-oom fast getkeys-api", key: KeyUse::Keys, arity: -5, since: "0.5.0", complexity: "O(K log N): K keys, N holders of each", audience: App,
        usage: "numkeys key [key ...] owner ttl-ms",
        summary: "Resets the TTL of owner's set. Replies 1 if owner holds every key under one token; else 0, and the keys it still holds are released (a set missing a key is lost).",
        args: args![c"numkeys": Integer, c"key": Keys, c"owner": Str, c"ttl-ms": Integer] },
    Command { name: "dlock.fenceall", handler: set_holds::fence_all, flags: "write deny-oom fast getkeys-api", key: KeyUse::Keys, arity: -5, since: "0.5.0", complexity: "O(K log N): K keys, N holders of each", audience: App,
        usage: "numkeys key [key ...] owner token [PX ttl-ms]",
        summary: "Commits a quorum token for owner's set: if owner holds every key, each takes token (never lower), the node counter rises to it, and PX resets the TTL. Replies 1; else 0, and the keys it still holds are released.",
        args: args![c"numkeys": Integer, c"key": Keys, c"owner": Str, c"token": Integer, c"ttl-ms": Opt(c"PX")] },
    Command { name: "dlock.status", handler: status::status, flags: "readonly fast", key: KeyUse::Read, arity: -2, since: "0.1.0", complexity: "O(log N + C): N holders of the resource, C holders listed (COUNT, default 100)", audience: App,
        usage: "key [COUNT n]",
        summary: "Replies nil when free; a plain lock (one exclusive holder): owner, token, ttl (ms left), holds and waiters; otherwise kind (shared or semaphore), limit (a semaphore's), count (live holders), holders (at most COUNT, default 100, soonest lease end first: owner, token, ttl, holds and mode each) and waiters.",
        args: args![c"key": Key, c"count": Opt(c"COUNT")] },
    Command { name: "dlock.observe", handler: observe::observe, flags: "readonly blocking", key: KeyUse::Read, arity: -2, since: "0.4.0", complexity: "O(1)", audience: App,
        usage: "key [AFTER token] [OWNER owner] [TIMEOUT timeout-ms]",
        summary: "Replies nil when nobody holds the lock, else owner, token and ttl (ms left). With AFTER (the token seen, 0 for no holder) and OWNER (the owner seen with it; only with AFTER), replies at once if the holder differs, else blocks until it does: a release, a takeover, a PROCLAIM (with OWNER) or the lease's end (not an EXTEND); at TIMEOUT (ms, at most a day; 0 = none) it replies the state as it is, possibly the same holder. Never blocks inside MULTI or a script. WRONGKIND for a shared lock or a semaphore.",
        args: args![c"key": Key, c"token": Opt(c"AFTER"), c"owner": Opt(c"OWNER"), c"timeout-ms": Opt(c"TIMEOUT")] },
    Command { name: "dlock.waiters", handler: status::waiters, flags: "readonly fast", key: KeyUse::Read, arity: 2, since: "0.2.0", complexity: "O(N): N clients waiting on the key", audience: App,
        usage: "key",
        summary: "Lists the clients waiting for the lock in service order: owner, ticket (or nil), ms waited and what it waits for (exclusive, shared or permit) each.",
        args: args![c"key": Key] },
    Command { name: "dlock.counter", handler: node::counter, flags: "readonly fast", key: KeyUse::None, arity: 1, since: "0.1.0", complexity: "O(1)", audience: App,
        usage: "",
        summary: "Replies the node's fencing counter: the highest token issued, fenced or loaded.",
        args: args![] },
    Command { name: "dlock.runid", handler: node::run_id, flags: "readonly fast", key: KeyUse::None, arity: 1, since: "0.4.0", complexity: "O(1)", audience: App,
        usage: "",
        summary: "Replies the server's run id (INFO server's run_id, new with each server process). Clients tell servers apart by it, so one server reached by two nodes never counts twice in a quorum.",
        args: args![] },
    Command { name: "dlock.forcerelease", handler: holders::force_release, flags: "write", key: KeyUse::Delete, arity: 2, since: "0.1.0", complexity: "O(1) for a plain lock; O(N) to free N holders (on Redis's lazyfree thread with lazyfree-lazy-server-del yes)", audience: Operator,
        usage: "key",
        summary: "Removes whatever lock the key holds (operator escape hatch). Replies 1 if a lock was held, else 0.",
        args: args![c"key": Key] },
    Command { name: "dlock.raise", handler: node::raise, flags: "write fast", key: KeyUse::None, arity: 2, since: "0.1.0", complexity: "O(1)", audience: Effect,
        usage: "token",
        summary: "Raises the node counter to at least token (never lowers it). Replicated effect; not for applications.",
        args: args![c"token": Integer] },
    Command { name: "dlock.apply", handler: node::apply, flags: "write", key: KeyUse::Overwrite, arity: -5, since: "0.1.0", complexity: "O(log N): N holders of the resource", audience: Effect,
        usage: "key owner token holds [PXAT unix-ms] [EXCLUSIVE | SHARED | LIMIT k]",
        summary: "Stores a lock exactly as given; with a mode, sets one holder of a shared lock or semaphore (holds 0 removes it). The replicated effect of every lock write; not for applications.",
        args: args![c"key": Key, c"owner": Str, c"token": Integer, c"holds": Integer, c"unix-ms": Opt(c"PXAT"), c"exclusive": Flag(c"EXCLUSIVE"), c"shared": Flag(c"SHARED"), c"limit": Opt(c"LIMIT")] },
    Command { name: "dlock.guard", handler: guard::guard, flags: "write getkeys-api", key: KeyUse::Gate, arity: -4, since: "0.3.0", audience: App,
        complexity: "O(1), plus the wrapped command's",
        usage: "gate token command [arg ...]",
        summary: "Runs command (as the caller's user) only if token is at least the highest token the gate has seen, and raises the gate to it; replies the command's reply, or STALE (nothing changed) for a lower token. The gate key, then the command's keys, are the command's keys.",
        args: args![c"gate": Key, c"token": Integer, c"command": Str, c"arg": Str] },
    Command { name: "dlock.check", handler: guard::check, flags: "readonly fast", key: KeyUse::Read, arity: 3, since: "0.3.0", complexity: "O(1)", audience: App,
        usage: "gate token",
        summary: "Replies 1 if a GUARD with token would pass the gate now (no gate, or token at least its highest), else 0. Changes nothing.",
        args: args![c"gate": Key, c"token": Integer] },
    Command { name: "dlock.raisegate", handler: guard::raise_gate, flags: "write", key: KeyUse::Update, arity: 3, since: "0.3.0", complexity: "O(1)", audience: Effect,
        usage: "gate token",
        summary: "Raises the gate to at least token and the node counter with it. The replicated effect of a GUARD; not for applications.",
        args: args![c"gate": Key, c"token": Integer] },
    Command { name: "dlock.top", handler: top::top, flags: "readonly", key: KeyUse::None, arity: -1, since: "0.3.0", audience: Operator,
        complexity: "O(W log W + COUNT log N): W keys with waiters (module memory, first step only), then one SCAN step of about COUNT buckets (1 to 10000, default 100), each key it returns looked up (N its holders)",
        usage: "[CURSOR c] [COUNT n]",
        summary: "Lists the node's hot locks in the selected database: on the first step (CURSOR 0) the keys with waiters (longest queue, then oldest waiter, first; at most COUNT), and each step the held resources one SCAN step finds. Replies cursor (0: done), waiting ([key, waiters, oldest-wait-ms, owner, token, ttl] each, of the holder whose lease ends first) and held ([key, owner, token, ttl, holds, waiters, mode, holders] per held resource, of the holder whose lease ends first; at most COUNT rows).",
        args: args![c"cursor": Opt(c"CURSOR"), c"count": Opt(c"COUNT")] },
];

impl Command {
    fn arity_ok(&self, argc: usize) -> bool {
        let needed = self.arity.unsigned_abs() as usize;
        if self.arity < 0 {
            argc >= needed
        } else {
            argc == needed
        }
    }

    /// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT]`
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn synopsis(&self) -> String {
        format!("{} {}", self.name.to_ascii_uppercase(), self.usage)
            .trim_end()
            .to_string()
    }
}

/// Runs the command at `index` for a call from Redis and sends its reply.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be what Redis passed to the command callback.
unsafe fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    index: usize,
) -> c_int {
    let context = Context::new(ctx);
    let args: &[Arg] = match usize::try_from(argc) {
        // SAFETY: Redis passes `argc` valid argument pointers; `Arg` is a transparent wrapper.
        Ok(len) if !argv.is_null() => unsafe {
            std::slice::from_raw_parts(argv.cast::<Arg>(), len)
        },
        _ => &[],
    };
    let reply = match COMMANDS.get(index) {
        // A set's keys, for the servers that ask the command (Cluster's slot check and ACL key
        // patterns before Redis 8.6 do not read a keynum key spec).
        Some(command)
            if matches!(command.key, KeyUse::Keys | KeyUse::KeysDelete)
                && wrapped::keys_request(&context) =>
        {
            super::sets::declare_keys(&context, args, command.key == KeyUse::KeysDelete);
            Ok(redis_module::RedisValue::NoReply)
        }
        Some(command) if command.arity_ok(args.len()) => (command.handler)(&context, args),
        Some(command) => Err(errors::arity(command.name)),
        None => Err(errors::cannot_store()),
    };
    context.reply(reply) as c_int
}

pub(super) type Callback =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Redis passes no user data to a command callback, so each table row gets its own entry
/// point; these are the first [`CALLBACKS`]`.len()` of them.
extern "C" fn call<const I: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: registered as a command callback, so Redis passes its own ctx/argv/argc.
    unsafe { dispatch(ctx, argv, argc, I) }
}

pub(super) static CALLBACKS: [Callback; 21] = [
    call::<0>, call::<1>, call::<2>, call::<3>, call::<4>, call::<5>, call::<6>, call::<7>,
    call::<8>, call::<9>, call::<10>, call::<11>, call::<12>, call::<13>, call::<14>, call::<15>,
    call::<16>, call::<17>, call::<18>, call::<19>, call::<20>,
];

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
