//! `DLOCK.ACQUIREALL`: several keys of this node at once, all or nothing (docs/multi.md). Each
//! member is judged by the one-resource rules (`rules::decide`, the same owner and rank), the
//! set by `dlock_core::sets::decide_set`; nothing is written unless every member can be. One
//! token for the set; with WAIT the set waits in every member's queue, holding nothing.

use dlock_core::node::deadline_at;
use dlock_core::queue::Request;
use dlock_core::rules::Decision;
use dlock_core::sets::{self, SetDecision};
use dlock_core::Want;
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};

use super::acquire::{token_reply, wound};
use crate::keyspace::{notify, LockKey};
use crate::server::selected_db;
use crate::stats::{self, CONTENDED};
use crate::waiting::sets::{self as waiting_sets, Member};
use crate::waiting::{self, Wait, Waiters};
use crate::wire::args::{self, OptionSpec};
use crate::wire::sets::{modes, set_args};
use crate::wire::{errors, Arg};
use crate::writes::{self, Owner, Refusal};
use crate::{config, server};

const OPTIONS: [OptionSpec; 3] = [
    OptionSpec {
        name: "MODES",
        takes_value: true,
    },
    OptionSpec {
        name: "WAIT",
        takes_value: true,
    },
    OptionSpec {
        name: "TICKET",
        takes_value: true,
    },
];

/// A set command's keys, declared to a server that asks (the getkeys API): `numkeys` keys
/// after it, each read and updated (or deleted: RELEASEALL). A `numkeys` out of range declares
/// none (the command then refuses it).
pub(super) fn declare_keys(ctx: &Context, argv: &[Arg], delete: bool) {
    let numkeys = argv
        .get(1)
        .and_then(|n| args::integer(n.as_bytes()))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=sets::MAX_SET).contains(n) && n + 2 <= argv.len());
    let change = match delete {
        true => raw::REDISMODULE_CMD_KEY_DELETE,
        false => raw::REDISMODULE_CMD_KEY_UPDATE,
    };
    let flags = (raw::REDISMODULE_CMD_KEY_RW | change) as std::os::raw::c_int;
    for at in 2..2 + numkeys.unwrap_or(0) {
        super::wrapped::declare(ctx, at, flags);
    }
}

/// One ACQUIREALL, parsed, with the wall clock read once.
struct Call<'a> {
    names: &'a [Arg],
    wants: Vec<Want>,
    owner: Owner<'a>,
    ttl_ms: u64,
    wait: bool,
    timeout_ms: u64,
    ticket: Option<u64>,
    rank: u64,
    now_us: u64,
}

impl Call<'_> {
    fn request(&self, want: Want) -> Request<'_> {
        Request {
            owner: self.owner.bytes,
            want,
            reentrant: false,
            wait: self.wait,
            ticket: self.ticket,
            rank: self.rank,
        }
    }
}

/// `DLOCK.ACQUIREALL numkeys key [key ...] owner ttl-ms [MODES xs...] [WAIT timeout-ms]
/// [TICKET n]` -> the set's token, or nil when not every key is available (with WAIT: once
/// granted, or nil at the timeout).
pub fn acquire_all(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let call = parse(ctx, argv)?;
    let now_ms = call.now_us / 1000;
    let mut decisions = Vec::with_capacity(call.names.len());
    let mut deadlines = Vec::with_capacity(call.names.len());
    for (name, &want) in call.names.iter().zip(&call.wants) {
        let key = LockKey::open(ctx, name, true);
        let view = key.view(now_ms)?;
        decisions.push(Waiters::of(ctx, name).decide(&view, &call.request(want)));
        deadlines.push(view.next_deadline());
    }
    match sets::decide_set(&decisions) {
        SetDecision::Grant => grant_or_park(ctx, &call, &deadlines),
        SetDecision::Renew { token } => renew(ctx, &call).map(|()| token_reply(token)),
        SetDecision::Wound { victims } => {
            for (member, victims) in victims {
                let name = &call.names[member];
                let mut key = LockKey::open(ctx, name, true);
                wound(ctx, &mut key, &Waiters::of(ctx, name), &victims, now_ms)?;
            }
            grant(ctx, &call).map_err(RedisError::from)
        }
        SetDecision::Enqueue => park(ctx, &call, &deadlines),
        SetDecision::Contended => {
            stats::count(&CONTENDED);
            Ok(RedisValue::Null)
        }
        SetDecision::Refused { member, why } => Err(refused(&call, member, why)),
    }
}

fn refused(call: &Call<'_>, member: usize, why: Decision) -> RedisError {
    match why {
        Decision::WrongKind { is } => errors::wrong_kind(is, call.wants[member]),
        Decision::UpgradeRefused => errors::upgrade_refused(),
        Decision::HoldLimit => errors::hold_limit(),
        _ => errors::set_overlaps(call.names[member].as_bytes()),
    }
}

/// Every argument checked, before any key is opened: bad input changes nothing.
fn parse<'a>(ctx: &Context, argv: &'a [Arg]) -> Result<Call<'a>, RedisError> {
    let at = set_args(argv, "dlock.acquireall", 1)?;
    let owner = &argv[at.owner_at];
    let ttl_ms = args::ttl_ms(
        argv[at.owner_at + 1].as_bytes(),
        config::max_ttl_ms(),
        "ttl-ms",
    )?;
    let rest = argv[at.owner_at + 2..].iter().map(Arg::as_bytes);
    let [given_modes, wait, ticket] = args::options(rest, &OPTIONS)?;
    let wants = modes(given_modes.flatten(), at.numkeys)?;
    let timeout_ms = wait.flatten().map(args::wait_timeout_ms).transpose()?;
    let ticket = ticket.flatten().map(args::ticket).transpose()?;
    if ticket.is_some() && timeout_ms.is_none() {
        return Err(errors::ticket_needs_wait());
    }
    let now_us = server::now_us();
    Ok(Call {
        names: &argv[2..at.owner_at],
        wants,
        owner: Owner {
            bytes: owner.as_bytes(),
            arg: Some(owner),
        },
        ttl_ms,
        wait: timeout_ms.is_some() && waiting::may_block(ctx),
        timeout_ms: timeout_ms.unwrap_or(0),
        ticket,
        rank: ticket.unwrap_or(now_us),
        now_us,
    })
}

/// The whole set granted, or (in the restart quarantine, with WAIT) queued.
fn grant_or_park(ctx: &Context, call: &Call<'_>, deadlines: &[Option<u64>]) -> RedisResult {
    match grant(ctx, call) {
        Err(Refusal::Quarantined { .. }) if call.wait => park(ctx, call, deadlines),
        granted => granted.map_err(RedisError::from),
    }
}

/// A fresh grant of every member under one token, tentative if ticketed.
fn grant(ctx: &Context, call: &Call<'_>) -> Result<RedisValue, Refusal> {
    let mut keys: Vec<(LockKey<'_>, Want)> = call
        .names
        .iter()
        .zip(&call.wants)
        .map(|(name, &want)| (LockKey::open(ctx, name, true), want))
        .collect();
    let (token, gone) = writes::grant_set(ctx, &mut keys, call.owner, call.ttl_ms, call.now_us)?;
    drop(keys);
    let owner = call.owner.bytes;
    for ((name, gone), want) in call.names.iter().zip(&gone).zip(&call.wants) {
        let waiters = Waiters::of(ctx, name);
        waiters.forget(gone.iter().map(|s| &*s.owner));
        waiters.granted(owner, (token, call.ticket), *want == Want::Exclusive);
    }
    if call.ticket.is_some() {
        waiting_sets::granted_tentative(owner, token, queue_keys(ctx, call.names));
    }
    Ok(token_reply(token))
}

/// The same set asked again by its owner: every member's lease starts again, the token kept.
fn renew(ctx: &Context, call: &Call<'_>) -> Result<(), RedisError> {
    let now_ms = call.now_us / 1000;
    let deadline_ms = deadline_at(now_ms, call.ttl_ms);
    for (name, want) in call.names.iter().zip(&call.wants) {
        let mut key = LockKey::open(ctx, name, true);
        let modes = [want.mode()];
        let event = (notify::ACQUIRE, now_ms);
        let gone = writes::change(ctx, &mut key, (call.owner, &modes), event, |lease| {
            lease.deadline_ms = deadline_ms;
        })?;
        let waiters = Waiters::of(ctx, name);
        waiters.forget(gone.iter().map(|s| &*s.owner));
        waiters.lease_ends(deadline_ms);
    }
    Ok(())
}

/// Queues the set on every member at once, holding nothing.
fn park(ctx: &Context, call: &Call<'_>, deadlines: &[Option<u64>]) -> RedisResult {
    let members: Vec<Member> = queue_keys(ctx, call.names)
        .into_iter()
        .zip(&call.wants)
        .zip(deadlines)
        .map(|((key, &want), &deadline_ms)| Member {
            key,
            want,
            deadline_ms,
        })
        .collect();
    let wait = Wait {
        owner: call.owner.bytes,
        rank: call.rank,
        ticketed: call.ticket.is_some(),
        ttl_ms: call.ttl_ms,
        want: Want::Exclusive, // each member's own is in `members`
    };
    waiting_sets::park(ctx, &members, &wait, call.timeout_ms)
}

fn queue_keys(ctx: &Context, names: &[Arg]) -> Vec<waiting::QueueKey> {
    let db = selected_db(ctx);
    names.iter().map(|n| (db, n.as_bytes().to_vec())).collect()
}
