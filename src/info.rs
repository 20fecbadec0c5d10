//! `INFO dlock`.

use std::os::raw::c_int;

use redis_module::{raw, Context, InfoContext};

use crate::stats::{
    self, CONTENDED, EVICTION_REFUSALS, EXPIRED, EXTENDS, FENCES, FORCED, GRANTS, RELEASES,
};
use crate::{config, node::node, server};

/// `safe` (no eviction can drop a lock key), `refusing` (grants refused: maxmemory with an
/// evicting policy), or `allowed` (the same, accepted with `dlock.allow-eviction yes`).
fn eviction_guard() -> &'static str {
    match (
        server::may_evict(server::context_flags(std::ptr::null_mut())),
        config::allow_eviction(),
    ) {
        (false, _) => "safe",
        (true, false) => "refusing",
        (true, true) => "allowed",
    }
}

/// Registers the `INFO dlock` section; called once at load.
pub fn register(ctx: &Context) {
    raw::register_info_function(ctx.ctx, Some(info));
}

extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    add_info(&InfoContext::new(ctx), for_crash_report != 0);
}

// The builder API cannot add the default section (it would be `dlock_dlock`), so this uses the
// older calls, which are deprecated but not going away.
#[allow(deprecated)]
fn add_info(ctx: &InfoContext, _for_crash_report: bool) {
    let (counter, quarantine_left_ms) = {
        let node = node();
        (node.counter(), node.quarantine_left_ms(&config::settings()))
    };
    let fields = [
        ("grants", stats::get(&GRANTS)),
        ("contended", stats::get(&CONTENDED)),
        ("releases", stats::get(&RELEASES)),
        ("force_releases", stats::get(&FORCED)),
        ("extends", stats::get(&EXTENDS)),
        ("fences", stats::get(&FENCES)),
        ("expired_before_release", stats::get(&EXPIRED)),
        ("eviction_refusals", stats::get(&EVICTION_REFUSALS)),
        ("waiters", crate::waiting::waiters() as u64),
        ("handoffs", stats::get(&stats::HANDOFFS)),
        ("wait_timeouts", stats::get(&stats::WAIT_TIMEOUTS)),
        ("revocations", stats::get(&stats::REVOCATIONS)),
        ("locks_held", stats::locks_held()),
        ("refused_values", stats::get(&stats::REFUSED_VALUES)),
        ("gates_revived", stats::get(&stats::GATES_REVIVED)),
        ("fencing_counter", counter),
        ("quarantine_left_ms", quarantine_left_ms),
    ];
    // Section `dlock` (the module's name); Redis prefixes each field with `dlock_`.
    ctx.add_info_section(None);
    for (name, value) in fields {
        ctx.add_info_field_long_long(name, i64::try_from(value).unwrap_or(i64::MAX));
    }
    ctx.add_info_field_str("eviction_guard", eviction_guard());
}
