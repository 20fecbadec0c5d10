//! Each scenario's pass criterion (docs/safety/chaos.md): no stale write through the gate, no resource
//! error, no token-order violation unless the scenario shows the hazard on purpose, no overlap
//! unless its broken assumption allows it; for the semaphore, never more holders than permits.

use crate::checkers::figures::{Figures, Permits};
use crate::scenario::Scenario;

/// `Ok` with what passed, or `Err` with the failed criterion.
pub fn judge(sc: &Scenario, f: &Figures) -> Result<&'static str, String> {
    if f.grants == 0 {
        return Err("FAILED: no grants (the scenario made no progress)".into());
    }
    if let Some(p) = &f.permits {
        return judge_permits(p);
    }
    if f.accepted_stale > 0 {
        return Err("FAILED: stale writes accepted".into());
    }
    if f.resource_errors > 0 {
        return Err("FAILED: the resource answered errors other than STALE".into());
    }
    if f.order_violations > 0 && sc.hazard {
        return Ok("pass (the hazard, shown)");
    }
    if f.order_violations > 0 {
        return Err("FAILED: token-order violations".into());
    }
    if f.overlaps > 0 && !sc.overlaps_allowed {
        return Err("FAILED: overlapping critical sections".into());
    }
    Ok("pass")
}

/// Scenario 11: never more holders than permits, and every grant its own token.
fn judge_permits(p: &Permits) -> Result<&'static str, String> {
    if p.max_holders > p.limit {
        return Err(format!(
            "FAILED: {} holders at once on a semaphore of {}",
            p.max_holders, p.limit
        ));
    }
    if p.duplicate_tokens > 0 {
        return Err("FAILED: a token granted twice".into());
    }
    Ok("pass")
}
