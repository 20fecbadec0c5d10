//! What the suite prints: a line on stderr as each scenario ends, then the table on stdout (the
//! one docs/safety/chaos.md shows), the semaphore's figures, the totals, and the exit code.

use std::process::ExitCode;
use std::time::Duration;

use crate::checkers::figures::{Figures, Permits};
use crate::scenario::Scenario;

/// A scenario played: its figures and its verdict (`Err`: the failed criterion).
pub type Played = (Scenario, Figures, Result<&'static str, String>);

/// The line printed as scenario `sc` (of `count`) ends, after `took`.
pub fn scenario_line(count: usize, (sc, figures, verdict): &Played, took: Duration) -> String {
    let counted = match &figures.permits {
        Some(p) => format!("{} grants, {}", figures.grants, permits_line(p)),
        None => format!(
            "{} grants, {} overlaps, {} refused by the gate, {} stale through it, {} stale without it, {} order violations",
            figures.grants, figures.overlaps, figures.rejections, figures.accepted_stale,
            figures.unguarded_stale, figures.order_violations,
        ),
    };
    format!(
        "[{}/{count}] {}: {counted} ({took:.0?}) -> {}",
        sc.number,
        sc.name,
        shown(verdict),
    )
}

/// Scenario 11's figures in words (its own line under the table, and its stderr line).
fn permits_line(p: &Permits) -> String {
    format!(
        "max {} holders at once (limit {}), {} holds cut short by their lease ({} SIGSTOPs), {} duplicate tokens",
        p.max_holders, p.limit, p.cut_short, p.stops, p.duplicate_tokens
    )
}

/// The table, the totals; failure if any scenario failed.
pub fn report(results: &[Played]) -> ExitCode {
    println!("| # | scenario | assumption broken | grants | overlaps | refused by the gate | stale writes through the gate | stale writes without it | order violations | max holders | result |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut total = Figures::default();
    for (sc, f, verdict) in results {
        println!("{}", row(sc, f, shown(verdict)));
        total.grants += f.grants;
        total.overlaps += f.overlaps;
        total.accepted_stale += f.accepted_stale;
        total.unguarded_stale += f.unguarded_stale;
        total.order_violations += f.order_violations;
    }
    for (sc, f, _) in results {
        if let Some(p) = &f.permits {
            println!(
                "scenario {}: {} grants, {}",
                sc.number,
                f.grants,
                permits_line(p)
            );
        }
    }
    println!(
        "chaos: {} scenarios, {} grants, {} overlaps, {} accepted stale writes, {} token-order violations",
        results.len(), total.grants, total.overlaps, total.accepted_stale, total.order_violations
    );
    println!(
        "chaos: without the gate, the same writes would have let {} stale writes through",
        total.unguarded_stale
    );
    let failed = results
        .iter()
        .filter(|(_, _, verdict)| verdict.is_err())
        .count();
    println!("chaos: {} passed, {failed} failed", results.len() - failed);
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// One table row. The lock columns say `-` for the semaphore scenario (permits may be held
/// together, and no resource counts writes there), and `max holders` says `-` for the locks.
fn row(sc: &Scenario, f: &Figures, verdict: &str) -> String {
    let lock = |n: usize| match f.permits {
        Some(_) => "-".to_string(),
        None => n.to_string(),
    };
    let holders = f.permits.map_or("-".to_string(), |p| {
        format!("{} (limit {})", p.max_holders, p.limit)
    });
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {holders} | {verdict} |",
        sc.number,
        sc.name,
        sc.breaks,
        f.grants,
        lock(f.overlaps),
        lock(f.rejections),
        lock(f.accepted_stale),
        lock(f.unguarded_stale),
        lock(f.order_violations),
    )
}

fn shown<'a>(verdict: &'a Result<&'static str, String>) -> &'a str {
    match verdict {
        Ok(passed) => passed,
        Err(failed) => failed,
    }
}
