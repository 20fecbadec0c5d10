//! Processes the command started that left its process group (`setsid`, a daemon that forks
//! twice): SIGKILL to the group does not reach them, yet they run on without the lock.
//!
//! dlock marks itself a *child subreaper* (Linux `PR_SET_CHILD_SUBREAPER`) before it starts a
//! command: a process orphaned under it — its parent, the command, gone — is adopted by dlock
//! rather than by init, so every process the command started stays a descendant of dlock for as
//! long as dlock lives. When dlock stops the command, it kills its descendants too and waits
//! until none runs, before the lock is released. (A dlock killed with SIGKILL can do none of
//! this: its guard then ends the command's group only, docs/cli.md.)

use std::collections::HashMap;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::{getpid, Pid};

/// How often [`ended`] looks again while descendants are still ending.
const POLL: Duration = Duration::from_millis(10);

/// Makes dlock adopt the orphans of its command's tree (see the module docs). Failing (not
/// Linux, a kernel without it), orphans go to init as before and only the group is stopped.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// `signal` to every live descendant of dlock but `spare` (and its own).
pub fn signal(which: Signal, spare: Option<Pid>) {
    for pid in live_descendants(getpid(), spare) {
        let _ = kill(pid, which);
    }
}

/// SIGKILL to every live descendant of dlock, again until none is left; `spare` (the guard,
/// which ends the command's group itself) is left alone. Adopted children are reaped on the
/// way, so that none lingers as a zombie of a dlock that goes on (`dlock elect` campaigns
/// again).
pub async fn ended(spare: Option<Pid>) {
    let started = std::time::Instant::now();
    let mut told = false;
    loop {
        reap_adopted(spare);
        let live = live_descendants(getpid(), spare);
        if live.is_empty() {
            return;
        }
        for pid in live {
            let _ = kill(pid, Signal::SIGKILL);
        }
        if !told && started.elapsed() >= crate::supervise::GRACE {
            eprintln!("dlock: processes the command started got SIGKILL and are still ending; the lock stays held until they are gone");
            told = true;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Collects the exit of every ended child of dlock but `spare`. Called only once the command
/// itself was waited for, so the children left are adopted orphans (and the guard).
pub fn reap_adopted(spare: Option<Pid>) {
    for (pid, parent) in processes() {
        if parent == getpid() && Some(pid) != spare {
            let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Every live (not zombie) process whose chain of parents reaches `root`, but `spare` and its
/// own descendants.
fn live_descendants(root: Pid, spare: Option<Pid>) -> Vec<Pid> {
    let table = processes_live();
    let parents: HashMap<Pid, Pid> = table
        .iter()
        .map(|&(pid, parent, _)| (pid, parent))
        .collect();
    table
        .iter()
        .filter(|&&(_, _, live)| live)
        .map(|&(pid, _, _)| pid)
        .filter(|&pid| descends(pid, root, spare, &parents))
        .collect()
}

/// Whether `pid`'s parents lead to `root` without passing through `spare`. Bounded: a table
/// read while processes come and go could hold a loop.
fn descends(pid: Pid, root: Pid, spare: Option<Pid>, parents: &HashMap<Pid, Pid>) -> bool {
    let mut at = pid;
    for _ in 0..parents.len() {
        if Some(at) == spare {
            return false;
        }
        match parents.get(&at) {
            Some(&parent) if parent == root => return true,
            Some(&parent) => at = parent,
            None => return false,
        }
    }
    false
}

/// (pid, parent) of every process.
fn processes() -> Vec<(Pid, Pid)> {
    processes_live()
        .into_iter()
        .map(|(pid, parent, _)| (pid, parent))
        .collect()
}

/// (pid, parent, live) of every process, from /proc (empty elsewhere).
fn processes_live() -> Vec<(Pid, Pid, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (state, parent) = state_and_parent(&stat)?;
            Some((
                Pid::from_raw(pid),
                parent,
                !matches!(state, "Z" | "X" | "x"),
            ))
        })
        .collect()
}

/// The state and the parent from a /proc/PID/stat line: after the command name (in
/// parentheses, and may hold anything).
fn state_and_parent(stat: &str) -> Option<(&str, Pid)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse::<i32>().ok()?;
    Some((state, Pid::from_raw(parent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_state_and_parent_whatever_the_name() {
        let line = "42 (a) b (c)) S 7 42 42 0 -1";
        assert_eq!(state_and_parent(line), Some(("S", Pid::from_raw(7))));
        assert_eq!(state_and_parent("42 (x"), None);
    }

    #[test]
    fn descent_stops_at_the_spared_process_and_at_loops() {
        let p = |n| Pid::from_raw(n);
        let parents: HashMap<Pid, Pid> = [
            (p(3), p(2)),
            (p(2), p(1)),
            (p(5), p(4)),
            (p(4), p(1)),
            (p(8), p(9)),
            (p(9), p(8)),
        ]
        .into_iter()
        .collect();
        assert!(descends(p(3), p(1), None, &parents));
        assert!(!descends(p(5), p(1), Some(p(4)), &parents));
        assert!(!descends(p(8), p(1), None, &parents));
    }
}
