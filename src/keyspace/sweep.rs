//! The key-TTL rule ([`super::ttl`]) for TTLs changed by plain commands: `PERSIST`, or an
//! `EXPIRE`-family command pushing a lock key's expiry past the lock's deadline. Watching those
//! commands would mean a keyspace-event subscription that every `EXPIRE` and `SET ... PX` of the
//! server pays for (Redis builds a context and a client for each subscriber of each event), lock
//! or not. Instead, once a second, a timer reads how many such commands the server has run
//! (`INFO commandstats`); when that count moved and any lock exists, it walks the keyspace in
//! small steps, as `SCAN` does, and pulls back the expiry of each lock key that outlives its
//! lock. A server whose clients never run those commands is never walked (and looked at every 16 s
//! once idle); one that runs them all the time is walked one step a second, a pass following
//! the next while they keep coming.
//!
//! A step visits about [`STEP_KEYS`] keys (a fraction of a millisecond), one step a second: about
//! 0.02% of a core, whatever the traffic. So a key given a longer life by hand is back at its
//! lock's deadline within a second or two on a keyspace of up to a thousand keys, and within
//! (keys / 1,000) seconds on a larger one (17 minutes for a million keys); until then it is only
//! a key that has not expired yet: the lock itself ends at its deadline whatever the key's TTL
//! says, and any dlock write to the key sets its TTL again. Without a lock in the keyspace the
//! timer only looks at a counter, once a second.

use std::cell::RefCell;
use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;
use std::time::Duration;

use redis_module::{raw, Context, RedisString};

use super::ttl::{self, Align};

/// Keys visited per step (at least: a step ends after the hash bucket that reaches it).
const STEP_KEYS: usize = 1_000;
/// Between two steps, within a pass and from one pass to the next.
const STEP_EVERY: Duration = Duration::from_secs(1);
/// The longest wait between two looks at the TTL commands' count: reading it builds the whole
/// `INFO commandstats` text, so a server where nothing moves is looked at less and less often
/// (1, 2, 4, 8, 16 s), and again every second once something moved.
const IDLE_AT_MOST: Duration = Duration::from_secs(16);

/// Where the walk is: the database and its SCAN cursor (none between passes), whether a pass is
/// going on and whether another is due after it, and the TTL-command count last seen.
struct Walk {
    db: i32,
    cursor: Option<NonNull<raw::RedisModuleScanCursor>>,
    going: bool,
    again: bool,
    seen_calls: u64,
    /// The wait before the next look while no pass is going.
    idle: Duration,
}

thread_local! {
    // Timers run on the main thread only.
    static WALK: RefCell<Walk> = const {
        RefCell::new(Walk {
            db: 0,
            cursor: None,
            going: false,
            again: false,
            seen_calls: 0,
            idle: STEP_EVERY,
        })
    };
}

/// What one step saw: keys visited, and the names of lock keys to settle.
#[derive(Default)]
struct Step {
    visited: usize,
    /// The database being scanned.
    db: i32,
    unsettled: Vec<(i32, Vec<u8>)>,
}

/// Starts the sweep; called once at load.
pub fn start(ctx: &Context) {
    ctx.create_timer(STEP_EVERY, tick, ());
}

fn tick(ctx: &Context, _: ()) {
    let next = if crate::stats::locks_held() == 0 {
        end_pass(); // only a counter was read: look again in a second
        STEP_EVERY
    } else {
        if due(crate::server::ttl_command_calls(ctx)) {
            step(ctx);
        }
        next_look()
    };
    ctx.create_timer(next, tick, ());
}

/// The wait before the next look with locks in the keyspace: a step a second while a pass goes
/// on, else the idle wait, doubled each time up to [`IDLE_AT_MOST`] (reset to a second by a
/// count that moved, in [`due`]).
fn next_look() -> Duration {
    WALK.with_borrow_mut(|walk| {
        if walk.going {
            return STEP_EVERY;
        }
        let wait = walk.idle;
        walk.idle = (wait * 2).min(IDLE_AT_MOST);
        wait
    })
}

/// Whether to take a step, now that the TTL commands have run `calls` times: a count that moved
/// starts a pass, or asks for another once the current one ends (it may have passed the key).
fn due(calls: u64) -> bool {
    WALK.with_borrow_mut(|walk| {
        if calls != walk.seen_calls || calls == u64::MAX {
            walk.seen_calls = calls;
            walk.again = walk.going;
            walk.going = true;
            walk.idle = STEP_EVERY;
        }
        walk.going
    })
}

/// Walks on for one step (a pass that ends starts again at database 0 on the next).
fn step(ctx: &Context) {
    let (Some(select), Some(create), Some(scan)) = (
        crate::api!(RedisModule_SelectDb),
        crate::api!(RedisModule_ScanCursorCreate),
        crate::api!(RedisModule_Scan),
    ) else {
        return;
    };
    let mut seen = Step::default();
    let going = WALK.with_borrow_mut(|walk| {
        while seen.visited < STEP_KEYS {
            // SAFETY: the timer's context; a database out of range is refused (the pass ends).
            if unsafe { select(ctx.ctx, walk.db) } != raw::REDISMODULE_OK as c_int {
                return false;
            }
            // SAFETY: a plain constructor.
            let Some(cursor) = walk.cursor.or_else(|| NonNull::new(unsafe { create() })) else {
                return false;
            };
            walk.cursor = Some(cursor);
            seen.db = walk.db;
            let data = std::ptr::from_mut(&mut seen).cast::<c_void>();
            // SAFETY: the context, our cursor, a static callback and `seen`, alive for the call.
            if unsafe { scan(ctx.ctx, cursor.as_ptr(), Some(visit), data) } == 0 {
                destroy(walk.cursor.take());
                walk.db += 1;
            }
        }
        true
    });
    for (db, name) in &seen.unsettled {
        ttl::with_key(ctx, *db, name, |key| ttl::settle(key, Align::NoLater));
    }
    if !going {
        end_pass();
    }
}

/// The walk is back at the start; it goes on only if another pass was asked for meanwhile.
fn end_pass() {
    WALK.with_borrow_mut(|walk| {
        destroy(walk.cursor.take());
        walk.db = 0;
        walk.going = std::mem::take(&mut walk.again);
    });
}

fn destroy(cursor: Option<NonNull<raw::RedisModuleScanCursor>>) {
    if let (Some(cursor), Some(free)) = (cursor, crate::api!(RedisModule_ScanCursorDestroy)) {
        // SAFETY: created by ScanCursorCreate, destroyed once (taken out of the walk).
        unsafe { free(cursor.as_ptr()) };
    }
}

extern "C" fn visit(
    _ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    data: *mut c_void,
) {
    // SAFETY: `data` is the step's `Step`, alive and not otherwise borrowed during the scan.
    let Some(seen) = (unsafe { data.cast::<Step>().as_mut() }) else {
        return;
    };
    seen.visited += 1;
    let Some(key) = NonNull::new(key) else {
        return;
    };
    // SAFETY: the key the scan opened for this call.
    let module = crate::api!(RedisModule_KeyType).is_some_and(
        |kind| unsafe { kind(key.as_ptr()) } == raw::REDISMODULE_KEYTYPE_MODULE as c_int,
    );
    if module && ttl::unsettled(key) {
        let name = RedisString::string_as_slice(name).to_vec();
        seen.unsettled.push((seen.db, name));
    }
}
