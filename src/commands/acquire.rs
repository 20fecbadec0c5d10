//! `DLOCK.ACQUIRE`: parse, read the resource's holders, ask the rules in `dlock_core`, apply
//! the decision (a grant, a renewal, a downgrade, a wound, a place in the queue), reply. The same
//! path for every kind: a plain lock is one exclusive holder.

use dlock_core::node::deadline_at;
use dlock_core::queue::Request;
use dlock_core::rules::{Decision, Victim};
use dlock_core::{Mode, Want};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

use crate::keyspace::{notify, LockKey};
use crate::stats::{self, CONTENDED, REVOCATIONS};
use crate::waiting::{self, Wait, Waiters};
use crate::wire::args::{self, OptionSpec};
use crate::wire::{errors, Arg};
use crate::writes::{self, Owner, Refusal};
use crate::{config, server};

const ACQUIRE_OPTIONS: [OptionSpec; 5] = [
    OptionSpec {
        name: "REENTRANT",
        takes_value: false,
    },
    OptionSpec {
        name: "WAIT",
        takes_value: true,
    },
    OptionSpec {
        name: "TICKET",
        takes_value: true,
    },
    OptionSpec {
        name: "SHARED",
        takes_value: false,
    },
    OptionSpec {
        name: "LIMIT",
        takes_value: true,
    },
];

/// One ACQUIRE, parsed, with the wall clock read once (the holders found, the rank, the token
/// and the deadline all date from it).
struct Call<'a> {
    request: Request<'a>,
    owner: Owner<'a>,
    ttl_ms: u64,
    timeout_ms: u64,
    now_us: u64,
}

impl Call<'_> {
    fn wait(&self) -> Wait<'_> {
        Wait {
            owner: self.request.owner,
            rank: self.request.rank,
            ticketed: self.request.ticket.is_some(),
            ttl_ms: self.ttl_ms,
            want: self.request.want,
        }
    }
}

/// `DLOCK.ACQUIRE key owner ttl-ms [REENTRANT] [WAIT timeout-ms] [TICKET n] [SHARED | LIMIT k]`
/// -> token, or nil when not available (with WAIT: once granted, or nil at the timeout).
pub fn acquire(ctx: &Context, argv: &[Arg]) -> RedisResult {
    let call = parse(ctx, argv)?;
    let mut key = LockKey::open(ctx, &argv[1], true);
    let waiters = Waiters::of(ctx, &argv[1]);
    let view = key.view(call.now_us / 1000)?;
    let decision = waiters.decide(&view, &call.request);
    let next_deadline = view.next_deadline();
    let want = call.request.want;
    match decision {
        Decision::Grant => grant_or_park(ctx, key, &waiters, &call),
        Decision::Renew { token, holds } => {
            renew(ctx, &mut key, &waiters, &call, holds)?;
            Ok(token_reply(token))
        }
        Decision::Downgrade { token } => {
            let (owner, now_ms) = (call.request.owner, call.now_us / 1000);
            let deadline_ms = deadline_at(now_ms, call.ttl_ms);
            let gone = writes::downgrade(ctx, &mut key, owner, (token, deadline_ms), now_ms)?;
            waiters.forget(gone.iter().map(|s| &*s.owner));
            Ok(token_reply(token))
        }
        Decision::Wound { victims } => {
            wound(ctx, &mut key, &waiters, &victims, call.now_us / 1000)?;
            grant(ctx, &mut key, &waiters, &call).map_err(RedisError::from)
        }
        Decision::Enqueue => {
            drop(key);
            waiters.park(&call.wait(), call.timeout_ms, next_deadline)
        }
        Decision::Contended => {
            stats::count(&CONTENDED);
            Ok(RedisValue::Null)
        }
        Decision::WrongKind { is } => Err(errors::wrong_kind(is, want)),
        Decision::UpgradeRefused => Err(errors::upgrade_refused()),
        Decision::HoldLimit => Err(errors::hold_limit()),
    }
}

/// Every argument checked, before any key is opened: bad input changes nothing.
fn parse<'a>(ctx: &Context, argv: &'a [Arg]) -> Result<Call<'a>, RedisError> {
    let owner = args::owner(argv[2].as_bytes())?;
    let ttl_ms = args::ttl_ms(argv[3].as_bytes(), config::max_ttl_ms(), "ttl-ms")?;
    let [reentrant, wait, ticket, shared, limit] =
        args::options(argv[4..].iter().map(Arg::as_bytes), &ACQUIRE_OPTIONS)?;
    let timeout_ms = wait.flatten().map(args::wait_timeout_ms).transpose()?;
    let ticket = ticket.flatten().map(args::ticket).transpose()?;
    if ticket.is_some() && timeout_ms.is_none() {
        return Err(errors::ticket_needs_wait());
    }
    let want = args::want(shared, limit)?;
    let now_us = server::now_us();
    Ok(Call {
        request: Request {
            owner,
            want,
            reentrant: reentrant.is_some(),
            wait: timeout_ms.is_some() && waiting::may_block(ctx),
            ticket,
            rank: ticket.unwrap_or(now_us),
        },
        owner: Owner {
            bytes: owner,
            arg: Some(&argv[2]),
        },
        ttl_ms,
        timeout_ms: timeout_ms.unwrap_or(0),
        now_us,
    })
}

/// The same owner takes its hold again: `holds` as the rules counted them, a new lease.
fn renew(
    ctx: &Context,
    key: &mut LockKey<'_>,
    waiters: &Waiters<'_>,
    call: &Call<'_>,
    holds: u16,
) -> Result<(), RedisError> {
    let now_ms = call.now_us / 1000;
    let deadline_ms = deadline_at(now_ms, call.ttl_ms);
    let modes = [call.request.want.mode()];
    let event = (notify::ACQUIRE, now_ms);
    let gone = writes::change(ctx, key, (call.owner, &modes), event, |lease| {
        lease.holds = holds;
        lease.deadline_ms = deadline_ms;
    })?;
    waiters.forget(gone.iter().map(|s| &*s.owner));
    waiters.lease_ends(deadline_ms);
    Ok(())
}

/// A grant, or a place in the queue while the restart quarantine holds grants back (a waiter
/// waits it out too).
fn grant_or_park(
    ctx: &Context,
    mut key: LockKey<'_>,
    waiters: &Waiters<'_>,
    call: &Call<'_>,
) -> RedisResult {
    match grant(ctx, &mut key, waiters, call) {
        Err(Refusal::Quarantined { .. }) if call.request.wait => {
            drop(key);
            waiters.park(&call.wait(), call.timeout_ms, None)
        }
        granted => granted.map_err(RedisError::from),
    }
}

/// A fresh grant, tentative if ticketed.
fn grant(
    ctx: &Context,
    key: &mut LockKey<'_>,
    waiters: &Waiters<'_>,
    call: &Call<'_>,
) -> Result<RedisValue, Refusal> {
    let want = call.request.want;
    let grant = writes::grant(ctx, key, (call.owner, want), call.ttl_ms, call.now_us)?;
    waiters.forget(grant.gone.iter().map(|s| &*s.owner));
    let marked = (grant.token, call.request.ticket);
    waiters.granted(call.request.owner, marked, want == Want::Exclusive);
    Ok(token_reply(grant.token))
}

/// Revokes tentative grants made for larger tickets (their FENCE will answer 0); a victim that
/// is a member of a tentative set loses the whole set (a set is one hold).
pub(super) fn wound(
    ctx: &Context,
    key: &mut LockKey<'_>,
    waiters: &Waiters<'_>,
    victims: &[Victim],
    now_ms: u64,
) -> Result<(), RedisError> {
    let entries: Vec<(&[u8], Mode)> = victims.iter().map(|v| (&*v.owner, v.mode)).collect();
    let gone = writes::remove(ctx, key, &entries, (notify::REVOKE, now_ms))?;
    let owners = victims.iter().map(|v| &*v.owner);
    waiters.forget(owners.chain(gone.iter().map(|s| &*s.owner)));
    stats::count_n(&REVOCATIONS, victims.len());
    let here = (
        crate::server::selected_db(ctx),
        key.name().as_bytes().to_vec(),
    );
    for victim in victims {
        waiting::sets::wound_rest(ctx, &victim.owner, &here)?;
    }
    Ok(())
}

pub fn token_reply(token: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(token).unwrap_or(i64::MAX))
}
