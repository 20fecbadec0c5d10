//! dlock: distributed locks with fencing tokens, as a native Redis module.
//!
//! - [`lock`]: the lock rules, free of the Redis API.
//! - [`commands`], [`node_commands`]: the thin command layer; [`argv`] dispatches, [`args`]
//!   validates, [`errors`] holds every client-visible error string, [`effects`] is what
//!   replicas and the AOF receive.
//! - [`store`], [`types`]: how a lock lives in the keyspace and on disk.

pub mod args;
pub mod argv;
pub mod commands;
pub mod config;
pub mod effects;
pub mod errors;
pub mod events;
pub mod info;
pub mod lock;
pub mod node;
pub mod node_commands;
pub mod propagation;
pub mod stats;
pub mod store;
pub mod types;

use redis_module::{
    configuration::ConfigurationFlags, redis_module, Context, InfoContext, RedisResult,
    RedisString, Status,
};

use crate::config::{CLOCK_FLOOR, DEFAULT_MAX_TTL_MS, LIMIT_MS, MAX_TTL_MS, QUARANTINE_MS};
use crate::info::add_info;
use crate::types::LOCK_TYPE;

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    node::start(); // the restart quarantine counts from here
                   // Registered here rather than in `redis_module!` so commands get their arguments without a
                   // per-call vector of retained strings (see argv.rs).
    let commands = register_commands!(
        ctx,
        [
            //  name                   handler                       flags                   keys
            [
                c"dlock.acquire",
                commands::acquire,
                c"write deny-oom fast",
                1,
                1,
                1
            ],
            [c"dlock.release", commands::release, c"write fast", 1, 1, 1],
            [
                c"dlock.extend",
                commands::extend,
                c"write deny-oom fast",
                1,
                1,
                1
            ],
            [
                c"dlock.fence",
                commands::fence,
                c"write deny-oom fast",
                1,
                1,
                1
            ],
            [c"dlock.status", commands::status, c"readonly fast", 1, 1, 1],
            [
                c"dlock.forcerelease",
                commands::force_release,
                c"write fast",
                1,
                1,
                1
            ],
            [c"dlock.apply", node_commands::apply, c"write", 1, 1, 1],
            [
                c"dlock.counter",
                node_commands::counter,
                c"readonly fast",
                0,
                0,
                0
            ],
            [c"dlock.raise", node_commands::raise, c"write fast", 0, 0, 0],
        ]
    );
    if commands == Status::Err {
        return Status::Err;
    }
    match events::subscribe(ctx).and_then(|()| propagation::watch(ctx)) {
        Ok(()) => Status::Ok,
        Err(e) => {
            ctx.log_warning(e);
            Status::Err
        }
    }
}

redis_module! {
    name: "dlock",
    version: 1,
    // The system allocator: binaries and tests that link this crate must not abort outside
    // Redis. Lock values themselves are allocated with Redis's allocator (see store.rs).
    allocator: (std::alloc::System, std::alloc::System),
    data_types: [LOCK_TYPE],
    init: init,
    info: add_info,
    event_handlers: [
        [@EXPIRED: events::on_keyspace_event],
    ],
    configurations: [
        i64: [
            ["max-ttl-ms",    &MAX_TTL_MS,    DEFAULT_MAX_TTL_MS, 1, LIMIT_MS, ConfigurationFlags::DEFAULT, None],
            ["quarantine-ms", &QUARANTINE_MS, 0,                  0, LIMIT_MS, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [
            ["clock-floor",   &CLOCK_FLOOR,   true,                            ConfigurationFlags::DEFAULT, None],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
