//! The command a `DLOCK.GUARD` wraps: which commands may be wrapped, its keys (declared to
//! Redis through the getkeys API, and checked to leave the gate alone), and the call itself.
//!
//! Refused inside a GUARD: dlock's own commands, and what Redis flags `admin`, `blocking`,
//! `pubsub`, `noscript` (EVAL, FCALL, MULTI, ...) or `no_multi` — a guarded write is one plain
//! data command. The flags come from `COMMAND INFO` once per command name (a container's
//! subcommand by `name|sub`), kept for the process.
//!
//! A GUARD costs a SET's time on top of the SET (docs/bench/server.md, guarded writes), most of
//! it inside `RedisModule_Call`; what is ours is kept off the allocator: the verdict by the name
//! as sent, its C string with it, the keys asked of Redis only when an argument spells the gate.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;
use std::hash::BuildHasherDefault;
use std::os::raw::c_int;
use std::ptr::NonNull;
use std::rc::Rc;

use redis_module::{raw, Context, RedisError};

use crate::wire::requests::{self, WRAPPED_AT};
use crate::wire::{errors, Arg};

/// Command flags that keep a command out of a GUARD.
const REFUSED_FLAGS: [&str; 5] = ["admin", "blocking", "pubsub", "noscript", "no_multi"];

/// Names kept at most: spellings beyond it (`SeT`, `sEt`, ...) are judged again each call.
const KEPT_NAMES: usize = 512;

/// What is known of a command name.
struct Verdict {
    /// The name, for `RedisModule_Call`.
    name: CString,
    /// Why it may not be wrapped, if it may not.
    refusal: Option<String>,
}

type Verdicts = HashMap<Box<[u8]>, Rc<Verdict>, BuildHasherDefault<fnv::FnvHasher>>;

thread_local! {
    /// Command name as sent -> its verdict (commands not kept: unknown ones, which a module
    /// may yet add, and containers, judged by their subcommand).
    static VERDICTS: RefCell<Verdicts> = RefCell::new(Verdicts::default());
}

/// A command that may be wrapped, with its arguments (its name first).
pub struct Wrapped<'a> {
    argv: &'a [Arg],
    verdict: Rc<Verdict>,
}

impl<'a> Wrapped<'a> {
    /// The command a GUARD (`argv`, its name first) wraps, if it may run inside it; the refusal
    /// names why, before anything changed.
    pub fn checked(ctx: &Context, argv: &'a [Arg]) -> Result<Wrapped<'a>, RedisError> {
        let (gate, wrapped) = (argv[1].as_bytes(), &argv[WRAPPED_AT..]);
        let name = wrapped[0].as_bytes();
        let verdict = verdict(ctx, wrapped);
        if let Some(why) = &verdict.refusal {
            return Err(errors::guard_refused(name, why));
        }
        // Only an argument that spells the gate can be it: the keys are asked then alone.
        if requests::spells_gate(argv)
            && keys(ctx, wrapped).any(|at| wrapped[at].as_bytes() == gate)
        {
            return Err(errors::guard_refused(name, "it would touch its own gate"));
        }
        Ok(Wrapped {
            argv: wrapped,
            verdict,
        })
    }

    /// Runs the command as the calling client's user (`C`), errors as replies (`E`), refused
    /// when out of memory if it may add data (`M`), replicated as itself (`!`), its reply in the
    /// caller's protocol (`0`: a RESP3 client gets maps and `_` nils, as from the command itself;
    /// without it RESP2's forms reached RESP3 clients, and `$-1` hangs redis-py's RESP3 parser).
    pub fn call(&self, ctx: &Context) -> Result<CallReply, RedisError> {
        let name = &self.verdict.name;
        let call = crate::api!(RedisModule_Call).ok_or_else(errors::cannot_store)?;
        let rest = &self.argv[1..];
        let args = rest
            .as_ptr()
            .cast_mut()
            .cast::<*mut raw::RedisModuleString>();
        // SAFETY: the running command's context; `Arg` is a transparent wrapper of a string
        // pointer, so `rest` is the argument vector the `v` format takes, with its length.
        let reply = unsafe { call(ctx.ctx, name.as_ptr(), c"CEM0v!".as_ptr(), args, rest.len()) };
        NonNull::new(reply)
            .map(CallReply)
            .ok_or_else(|| errors::guard_refused(self.argv[0].as_bytes(), "it could not be called"))
    }
}

/// A wrapped command's reply, freed on drop.
pub struct CallReply(NonNull<raw::RedisModuleCallReply>);

impl CallReply {
    /// Read off the reply's first byte (`-`), which spares Redis parsing it.
    pub fn is_error(&self) -> bool {
        let Some(proto) = crate::api!(RedisModule_CallReplyProto) else {
            return true;
        };
        let mut len = 0;
        // SAFETY: a live reply; the bytes it points to live as long as the reply.
        let start = unsafe { proto(self.0.as_ptr(), &mut len) };
        // SAFETY: `len` bytes at `start`, when not null and not empty.
        !start.is_null() && len > 0 && unsafe { *start } == b'-' as std::os::raw::c_char
    }

    /// Sends the reply as the running command's.
    pub fn send(&self, ctx: &Context) {
        if let Some(reply) = crate::api!(RedisModule_ReplyWithCallReply) {
            // SAFETY: the running command's context and a live reply.
            unsafe { reply(ctx.ctx, self.0.as_ptr()) };
        }
    }
}

impl Drop for CallReply {
    fn drop(&mut self) {
        if let Some(free) = crate::api!(RedisModule_FreeCallReply) {
            // SAFETY: a reply of RedisModule_Call, freed once.
            unsafe { free(self.0.as_ptr()) };
        }
    }
}

/// Whether Redis is asking for the keys of the command being called (the getkeys API).
pub fn keys_request(ctx: &Context) -> bool {
    // SAFETY: the running command's context.
    crate::api!(RedisModule_IsKeysPositionRequest).is_some_and(|ask| unsafe { ask(ctx.ctx) } != 0)
}

/// A GUARD's keys: the gate (read and updated), then the wrapped command's, each with the flags
/// Redis gives it — when they are asked at all ([`requests::asks_wrapped_keys`]: never for a
/// wrapped `DLOCK.*` command nor while a GUARD's keys are being asked, so nesting cannot
/// recurse).
pub fn declare_keys(ctx: &Context, argv: &[Arg]) {
    let gate = (raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE) as c_int;
    declare(ctx, 1, gate);
    if !requests::asks_wrapped_keys(argv, ASKING.get()) {
        return;
    }
    ASKING.set(true);
    let keys = keys_with_flags(ctx, &argv[WRAPPED_AT..]);
    ASKING.set(false);
    for (at, flags) in requests::declared(&keys, argv.len()) {
        declare(ctx, at, flags);
    }
}

thread_local! {
    /// Set while a GUARD's wrapped command is asked for its keys (see [`declare_keys`]).
    static ASKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(super) fn declare(ctx: &Context, at: usize, flags: c_int) {
    let at = c_int::try_from(at).unwrap_or(c_int::MAX);
    if let Some(with_flags) = crate::api!(RedisModule_KeyAtPosWithFlags) {
        // SAFETY: a keys-position request's context.
        unsafe { with_flags(ctx.ctx, at, flags) };
    } else if let Some(plain) = crate::api!(RedisModule_KeyAtPos) {
        // SAFETY: as above.
        unsafe { plain(ctx.ctx, at) };
    }
}

/// The positions of a command's keys in `argv` (its name first).
fn keys<'a>(ctx: &Context, argv: &'a [Arg]) -> impl Iterator<Item = usize> + 'a {
    keys_with_flags(ctx, argv).into_iter().map(|(at, _)| at)
}

/// The positions of a command's keys in `argv`, with their flags; none for an unknown command
/// or a wrong number of arguments (the call then answers the error).
fn keys_with_flags(ctx: &Context, argv: &[Arg]) -> Vec<(usize, c_int)> {
    let (Some(get), Some(free)) = (
        crate::api!(RedisModule_GetCommandKeysWithFlags),
        crate::api!(RedisModule_Free),
    ) else {
        return Vec::new();
    };
    let argc = c_int::try_from(argv.len()).unwrap_or(c_int::MAX);
    let (mut count, mut flags) = (0, std::ptr::null_mut());
    let args = argv
        .as_ptr()
        .cast_mut()
        .cast::<*mut raw::RedisModuleString>();
    // SAFETY: a live context and argument vector; the arrays returned are ours to free.
    let positions = unsafe { get(ctx.ctx, args, argc, &mut count, &mut flags) };
    let mut out = Vec::new();
    if !positions.is_null() {
        let count = usize::try_from(count).unwrap_or(0);
        for i in 0..count {
            // SAFETY: both arrays hold `count` entries.
            let (at, f) = unsafe { (*positions.add(i), *flags.add(i)) };
            if let Ok(at) = usize::try_from(at) {
                out.push((at, f));
            }
        }
        // SAFETY: allocated by the call above, freed once each.
        unsafe {
            free(positions.cast());
            free(flags.cast());
        }
    }
    out
}

/// What is known of the command `argv` (kept per name as sent, see [`VERDICTS`]).
fn verdict(ctx: &Context, argv: &[Arg]) -> Rc<Verdict> {
    let sent = argv[0].as_bytes();
    if let Some(known) = VERDICTS.with_borrow(|v| v.get(sent).cloned()) {
        return known;
    }
    let (refusal, keep) = judge(ctx, argv);
    let verdict = Rc::new(Verdict {
        name: CString::new(sent).unwrap_or_default(),
        refusal: refusal.or_else(|| sent.contains(&0).then(|| "no such command".to_string())),
    });
    VERDICTS.with_borrow_mut(|v| {
        if keep && v.len() < KEPT_NAMES {
            v.insert(sent.into(), verdict.clone());
        }
    });
    verdict
}

/// Why the command `argv` may not be wrapped, if it may not; and whether that holds for its
/// name whatever follows.
fn judge(ctx: &Context, argv: &[Arg]) -> (Option<String>, bool) {
    if requests::is_dlock_command(argv[0].as_bytes()) {
        return (Some("a dlock command".to_string()), true);
    }
    let name = argv[0].as_bytes().to_ascii_lowercase();
    let Some(info) = command_info(ctx, &name) else {
        return (Some("its flags could not be read".to_string()), false);
    };
    let keep = matches!(info, Info::Flags(_));
    let verdict = match info {
        Info::Unknown => Some("no such command".to_string()), // not kept: MODULE LOAD
        Info::Container if argv.len() > 1 => {
            let sub = [&name[..], b"|", &argv[1].as_bytes().to_ascii_lowercase()].concat();
            match command_info(ctx, &sub) {
                Some(Info::Flags(flags)) => refusal(&flags),
                _ => Some("no such subcommand".to_string()),
            }
        }
        Info::Container => Some("a container command needs its subcommand".to_string()),
        Info::Flags(flags) => refusal(&flags),
    };
    (verdict, keep)
}

fn refusal(flags: &[String]) -> Option<String> {
    let refused = flags.iter().find(|f| REFUSED_FLAGS.contains(&f.as_str()))?;
    Some(format!("it is flagged {refused}"))
}

/// What `COMMAND INFO` says of a command.
enum Info {
    Unknown,
    /// A container (CONFIG, CLIENT, ...): its subcommands have the flags.
    Container,
    Flags(Vec<String>),
}

/// `COMMAND INFO name`: its flags, or that it is a container or unknown; `None` if it could not
/// be asked.
fn command_info(ctx: &Context, name: &[u8]) -> Option<Info> {
    let reply = ctx.call("COMMAND", &[b"INFO".as_slice(), name]).ok()?;
    let redis_module::RedisValue::Array(mut entries) = reply else {
        return None;
    };
    let entry = match entries.pop()? {
        redis_module::RedisValue::Array(entry) => entry,
        _ => return Some(Info::Unknown),
    };
    let flags: Vec<String> = match entry.get(2) {
        Some(redis_module::RedisValue::Array(flags)) => flags.iter().filter_map(word).collect(),
        _ => Vec::new(),
    };
    let subcommands =
        matches!(entry.get(9), Some(redis_module::RedisValue::Array(s)) if !s.is_empty());
    Some(match subcommands {
        true => Info::Container,
        false => Info::Flags(flags),
    })
}

fn word(value: &redis_module::RedisValue) -> Option<String> {
    match value {
        redis_module::RedisValue::SimpleString(s) | redis_module::RedisValue::BulkString(s) => {
            Some(s.clone())
        }
        redis_module::RedisValue::StringBuffer(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis_module::RedisValue::SimpleStringStatic(s) => Some(s.to_string()),
        _ => None,
    }
}
