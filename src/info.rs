//! `INFO dlock`.

use redis_module::InfoContext;

use crate::node::node;
use crate::stats::{self, CONTENDED, EXPIRED, EXTENDS, FENCES, FORCED, GRANTS, RELEASES};

// The builder API cannot add the default section (it would be `dlock_dlock`), so this uses the
// older calls, which are deprecated but not going away.
#[allow(deprecated)]
pub fn add_info(ctx: &InfoContext, _for_crash_report: bool) {
    let (counter, quarantine_left_ms) = {
        let node = node();
        (
            node.counter(),
            node.quarantine_left_ms(&crate::config::settings()),
        )
    };
    let fields = [
        ("grants", stats::get(&GRANTS)),
        ("contended", stats::get(&CONTENDED)),
        ("releases", stats::get(&RELEASES)),
        ("force_releases", stats::get(&FORCED)),
        ("extends", stats::get(&EXTENDS)),
        ("fences", stats::get(&FENCES)),
        ("expired_before_release", stats::get(&EXPIRED)),
        ("locks_held", stats::locks_held()),
        ("fencing_counter", counter),
        ("quarantine_left_ms", quarantine_left_ms),
    ];
    // Section `dlock` (the module's name); Redis prefixes each field with `dlock_`.
    ctx.add_info_section(None);
    for (name, value) in fields {
        ctx.add_info_field_long_long(name, value as i64);
    }
}
