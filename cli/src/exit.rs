//! Exit codes of dlock itself (`run` otherwise exits with the command's own status), and what
//! `--help` says after the options: the units of durations, then these codes.

/// Bad command line (clap's convention), refused before any node is asked.
pub const USAGE: u8 = 2;
/// The lock is held by another owner and was not acquired within --wait.
pub const CONTENDED: u8 = 3;
/// No quorum: too few nodes reachable (the message names them and why); `status`: fewer than
/// a majority of the nodes answered.
pub const NO_QUORUM: u8 = 4;
/// `run`: the lock was lost (or held past --max-hold) while the command ran; `elect --once`:
/// leadership was lost; the command got SIGTERM.
pub const LOST: u8 = 5;
/// `release` / `extend`: OWNER does not hold the lock on a majority; `leader`: nobody leads.
pub const NOT_HELD: u8 = 6;
/// The resource is held as another kind (a semaphore of another --limit, a lock asked
/// with --limit, a semaphore asked without it).
pub const WRONG_KIND: u8 = 7;
/// `run`: the command could not be started.
pub const CANNOT_RUN: u8 = 127;
/// `run`: interrupted (SIGINT); the command was stopped and the lock released.
pub const INTERRUPTED: u8 = 130;

/// `dlock --help` after the options (docs/cli.md has the same tables).
pub const AFTER_HELP: &str = "\
Durations take a unit: 500ms, 10s, 2m, 1h (a bare number is refused), at most ten years.
  --ttl       lease on the nodes, 3ms to 24h   run, acquire: 10s; extend: required
  --wait      longest wait for a held lock     run: 30s; acquire: 0s (one attempt)
  --timeout   each call to one node, > 0       50ms
  --max-hold  run: longest hold, > 0           no cap

Exit codes:
  0    success (run: the command exited 0; otherwise run exits with the command's status,
       or 128+N if a signal N killed it)
  2    bad command line (nothing was sent to a node), or a node refused an argument
  3    lock held by another owner, not acquired within --wait (the command was not run)
  4    no quorum: too few nodes reachable, or validity ran out while acquiring;
       status: fewer than a majority of the nodes answered
  5    run: lock lost while the command ran, or held past --max-hold; elect --once:
       leadership lost (the command got SIGTERM, and SIGKILL after a 10 s grace)
  6    release/extend: OWNER does not hold the lock on a majority; leader: nobody leads
  7    the resource is held as another kind (--shared/--limit do not match how it is held)
  127  run: the command could not be started
  130  run, elect: interrupted (Ctrl-C); command stopped (or the wait withdrawn), lock released
  143  run, elect: dlock got SIGTERM; command stopped, lock released";
