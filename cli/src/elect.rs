//! `dlock elect`, `dlock leader` and `dlock observe` (docs/election.md): run a command only while
//! this process leads, and see who leads.

use std::io::Write;
use std::time::Duration;

use dlock_client::{Error, Leader, Leadership, LockManager};
use nix::sys::signal::Signal;
use tokio::process::Command;

use crate::run::{status_code, stop_signals, StopSignal};
use crate::supervise::{self, Supervised};
use crate::{code_of, exit};

/// How `elect` runs: the lease, and whether it campaigns again after losing leadership.
pub struct Terms {
    pub ttl: Duration,
    pub once: bool,
}

/// How one term as leader ended.
enum Term {
    /// The command exited by itself (its code): dlock resigns and exits with it.
    Exited(u8),
    /// Leadership was lost: the command was stopped.
    Lost,
    /// A stop signal: the command was stopped; dlock exits with this code.
    Stopped(u8),
}

/// Campaigns for `name`, runs `argv` while leader, stops it when leadership is lost and (unless
/// `once`) campaigns again. Exits with the command's code when it ends by itself.
pub async fn elect(
    manager: &LockManager,
    name: &str,
    value: &str,
    terms: Terms,
    argv: &[String],
) -> u8 {
    let (mut interrupt, mut terminate) = match stop_signals() {
        Ok(handlers) => handlers,
        Err(e) => {
            eprintln!("dlock: cannot install signal handlers: {e}");
            return exit::CANNOT_RUN;
        }
    };
    loop {
        let elected = tokio::select! {
            elected = manager.campaign(name, value, terms.ttl) => elected,
            _ = interrupt.recv() => return exit::INTERRUPTED,
            _ = terminate.recv() => return 128 + Signal::SIGTERM as u8,
        };
        let leadership = match elected {
            Ok(leadership) => leadership,
            Err(e) => return code_of(&e),
        };
        let term = serve(&leadership, argv, (&mut interrupt, &mut terminate)).await;
        let resigned = leadership.resign().await;
        match term {
            Ok(Term::Exited(code)) | Ok(Term::Stopped(code)) => {
                if let Err(e) = resigned {
                    eprintln!("dlock: resign: {e} (leadership ends with its lease)");
                }
                return code;
            }
            Ok(Term::Lost) if terms.once => return exit::LOST,
            Ok(Term::Lost) => eprintln!("dlock: campaigning again for {name:?}"),
            Err(code) => return code,
        }
    }
}

/// One term: the command runs with the epoch in its environment until it exits, leadership is
/// lost, or a stop signal comes. `Err`: the command could not start.
async fn serve(
    leadership: &Leadership,
    argv: &[String],
    (interrupt, terminate): (&mut StopSignal, &mut StopSignal),
) -> Result<Term, u8> {
    let mut command = spawn(argv, leadership).map_err(|e| {
        eprintln!("dlock: cannot run {:?}: {e}", argv[0]);
        exit::CANNOT_RUN
    })?;
    let term = tokio::select! {
        status = command.wait() => Term::Exited(status.map_or(exit::CANNOT_RUN, status_code)),
        _ = leadership.lost() => {
            let name = leadership.name();
            eprintln!("dlock: leadership of {name:?} lost while the command ran; sending SIGTERM");
            Term::Lost
        }
        _ = interrupt.recv() => Term::Stopped(exit::INTERRUPTED),
        _ = terminate.recv() => Term::Stopped(128 + Signal::SIGTERM as u8),
    };
    match term {
        Term::Exited(_) => command.finish().await,
        _ => command.stop().await,
    }
    Ok(term)
}

/// The command, supervised as `run`'s (it cannot outlive dlock), with the leadership in its
/// environment and without the nodes' password.
fn spawn(argv: &[String], leadership: &Leadership) -> std::io::Result<Supervised> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env("DLOCK_ELECTION", leadership.name())
        .env("DLOCK_EPOCH", leadership.epoch().to_string())
        .env("DLOCK_TOKEN", leadership.epoch().to_string())
        .env("DLOCK_VALUE", leadership.value())
        .env_remove("DLOCK_PASSWORD");
    supervise::spawn(command)
}

/// `dlock leader NAME`: prints `EPOCH ID VALUE`; exits 6 when nobody leads.
pub async fn leader(manager: &LockManager, name: &str) -> u8 {
    match manager.leader(name).await {
        Ok(Some(leader)) => {
            println!("{}", line(&leader));
            0
        }
        Ok(None) => {
            eprintln!("dlock: nobody leads {name:?}");
            exit::NOT_HELD
        }
        Err(e) => code_of(&e),
    }
}

fn line(leader: &Leader) -> String {
    format!("{} {} {}", leader.epoch, leader.id, leader.value)
        .trim_end()
        .to_string()
}

/// `dlock observe NAME`: a line per change (`EPOCH ID VALUE`, or `none`), or a JSON object
/// per line; ends after `count` changes, or at Ctrl-C.
pub async fn observe(manager: &LockManager, name: &str, json: bool, count: Option<u64>) -> u8 {
    let (mut interrupt, mut terminate) = match stop_signals() {
        Ok(handlers) => handlers,
        Err(e) => {
            eprintln!("dlock: cannot install signal handlers: {e}");
            return exit::CANNOT_RUN;
        }
    };
    let mut observer = match manager.observe(name) {
        Ok(observer) => observer,
        Err(e) => return code_of(&e),
    };
    let mut shown = 0u64;
    while count.is_none_or(|n| shown < n) {
        let change = tokio::select! {
            change = observer.next() => change,
            _ = interrupt.recv() => return exit::INTERRUPTED,
            _ = terminate.recv() => return 128 + Signal::SIGTERM as u8,
        };
        let Some(change) = change else {
            return exit::NO_QUORUM;
        };
        print_change(&change, json);
        shown += 1;
    }
    0
}

fn print_change(change: &Result<Option<Leader>, Error>, json: bool) {
    let text = match (change, json) {
        (Ok(Some(leader)), false) => line(leader),
        (Ok(None), false) => "none".into(),
        (Err(e), false) => format!("unknown: {e}"),
        // Epochs as strings, as every JSON of dlock's carries tokens (they pass 2^53).
        (Ok(Some(l)), true) => serde_json::json!({
            "leader": {"epoch": l.epoch.to_string(), "id": l.id, "value": l.value}
        })
        .to_string(),
        (Ok(None), true) => serde_json::json!({ "leader": null }).to_string(),
        (Err(e), true) => serde_json::json!({ "unknown": e.to_string() }).to_string(),
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head -1`) ends nothing here: the next line fails the same way.
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}
