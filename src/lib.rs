//! dlock: distributed locks with fencing tokens, as a native Redis module.
//!
//! Layers, each using only those listed after it (tests/architecture.rs checks there is no
//! cycle):
//!
//! - [`commands`]: the command table and the thin command layer (parse, decide with
//!   `dlock_core`, write, reply).
//! - [`info`]: the `INFO dlock` section.
//! - [`waiting`]: the fair wait queues and their handoffs.
//! - [`writes`]: a grant, a change of leases or a removal: stored, replicated, signalled.
//! - [`replication`]: what replicas and the AOF receive, and when.
//! - [`keyspace`]: how a resource and its holders live in the keyspace and on disk.
//! - [`config`], [`stats`]: `dlock.*` settings; the counters behind `INFO dlock`.
//! - [`wire`]: arguments in, error strings out.
//! - [`node`], [`server`]: the node's counter, and facts about the running server.
//!
//! docs/architecture.md walks through how a command flows from the table to a replicated effect.

// Unit tests build without the module entry point (it installs Redis's allocator, which does
// not exist outside Redis), so what only the entry point reaches looks unused there.
#![cfg_attr(test, allow(dead_code, unused_imports))]

mod commands;
mod config;
mod info;
mod keyspace;
mod node;
mod replication;
mod server;
mod stats;
mod waiting;
mod wire;
mod writes;

#[cfg(not(test))]
mod module {
    use redis_module::{redis_module, Context, RedisString, Status};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        if let Err(why) = crate::keyspace::create_types(ctx) {
            ctx.log_warning(&format!("dlock not loaded: {why}"));
            return Status::Err;
        }
        crate::node::start(); // the restart quarantine counts from here
        crate::panic::install_hook();
        crate::keyspace::notify::set_module_options(ctx);
        crate::server::create_detached(ctx);
        crate::keyspace::arrivals::settle_with(crate::keyspace::ttl::settle_arrived);
        crate::keyspace::ghosts::revive_with(crate::commands::revive_gate);
        crate::keyspace::sweep::start(ctx);
        let loaded = crate::config::register(ctx, args)
            .and_then(|()| crate::commands::register(ctx))
            .and_then(|()| crate::keyspace::moves::watch(ctx.ctx).map_err(String::from))
            .and_then(|()| crate::replication::fork::watch(ctx).map_err(String::from))
            .and_then(|()| crate::waiting::watch(ctx).map_err(String::from));
        crate::replication::propagation::watch(ctx);
        crate::info::register(ctx);
        match loaded {
            Ok(()) => Status::Ok,
            Err(why) => {
                ctx.log_warning(&format!("dlock not loaded: {why}"));
                Status::Err
            }
        }
    }

    /// `MODULE LIST`'s version: the crate's (the workspace's one version), as Redis writes
    /// module versions, major * 10000 + minor * 100 + patch (0.3.0 is 300).
    const VERSION: i32 = number(env!("CARGO_PKG_VERSION_MAJOR")) * 10_000
        + number(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + number(env!("CARGO_PKG_VERSION_PATCH"));

    /// A version part's digits as a number, at compile time.
    const fn number(digits: &str) -> i32 {
        let (bytes, mut value, mut i) = (digits.as_bytes(), 0, 0);
        while i < bytes.len() {
            value = value * 10 + (bytes[i] - b'0') as i32;
            i += 1;
        }
        value
    }

    redis_module! {
        name: "dlock",
        version: VERSION,
        // Redis's allocator: INFO memory and maxmemory see everything the module allocates.
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [], // created first thing in init (keyspace::create_types)
        init: init,
    }
}

mod panic;
